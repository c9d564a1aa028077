/**
 * What an ACP connection writes, as the modules that watch a connection's stream see it.
 *
 * @since 0.14.0
 */

export const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null

/** An outgoing message that answers a request (the agent's own requests and notifications have a method). */
export const isAnswer = (message: unknown): message is Record<string, unknown> => isRecord(message) && !("method" in message)

/** `writable`, with `written` told of each message once it is written (in order; a failed write tells nothing). */
export const afterEachWrite = <A>(writable: WritableStream<A>, written: (message: A) => void): WritableStream<A> => {
  const writer = writable.getWriter()
  return new WritableStream({
    write: async (message) => {
      await writer.write(message)
      written(message)
    },
    close: () => writer.close(),
    abort: (reason) => writer.abort(reason)
  })
}
