/**
 * Loading the PostgreSQL driver without loading Node's `fetch`. When `pg` loads it asks whether it
 * runs in a Cloudflare Worker: it reads `navigator.userAgent`, and where there is no `navigator`
 * (Node 20; Node 21 and later have one) it builds a `Response` instead — and Node 20's `Response`
 * is lazy, its first touch loading the whole of undici (~40 ms of a `sessions --store postgres`
 * that never fetches anything). For the import's duration only, Node 20 is given the `navigator`
 * Node 21 has, so `pg` gets its answer (not a Worker) the way it does on Node 21: nothing else changes.
 *
 * @since 0.12.0
 * @internal
 */

/**
 * Runs `load` (an import that loads `pg`) with a `navigator` present, then takes it away: a no-op
 * where the runtime has its own.
 */
export const withoutFetchSniff = async <A>(load: () => Promise<A>): Promise<A> => {
  if ("navigator" in globalThis) return load()
  Object.defineProperty(globalThis, "navigator", {
    value: { userAgent: `Node.js/${process.versions.node.split(".")[0]}` },
    configurable: true,
    enumerable: false,
    writable: true
  })
  try {
    return await load()
  } finally {
    delete (globalThis as { navigator?: unknown }).navigator
  }
}
