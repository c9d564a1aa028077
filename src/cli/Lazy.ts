/**
 * Command handlers loaded when their command runs. The command tree (names, flags, descriptions:
 * what `--help` and the parser need) is light; each handler's module, with the engine, the stores
 * and the tools it reaches, is `import()`ed only by the command that runs — so `--help`, `sessions`
 * or `trust` do not read and compile the code of `run` (esbuild puts each such module in its own
 * chunks; see scripts/bundle-cli.mjs).
 *
 * @since 0.4.0
 */
import * as Effect from "effect/Effect"

/** Runs `run` with the module `load` resolves to. */
export const handler = <M, A, E, R>(load: () => Promise<M>, run: (module: M) => Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.flatMap(Effect.promise(load), run)
