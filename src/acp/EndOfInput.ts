/**
 * The end of an ACP connection's input, as a half-close. A client that writes its requests and
 * closes its side — a script, a shell pipe — still reads the answers: the SDK ends the connection as
 * soon as its input ends, which dropped the answers of the requests in flight (a prompt's turn was
 * cancelled, its answer never written). Here the input's end reaches the SDK only once every request
 * read has been answered and the agent says it has nothing left running; until then the connection
 * stays open for writing.
 *
 * A client that closed its input can answer nothing more, so the input's end aborts {@link signal}:
 * the agent settles its open questions (and asks none after) as dismissed.
 *
 * @since 0.6.0
 */
import type * as acp from "@agentclientprotocol/sdk"
import { afterEachWrite, isAnswer, isRecord } from "./Written.js"

export interface EndOfInput {
  /** The connection's stream, its input's end held back until the work in flight is done. */
  readonly observe: (stream: acp.Stream) => acp.Stream
  /** Aborted when the input ended: a question to the client can no longer be answered. */
  readonly signal: AbortSignal
  /** Looks again whether the input's end can be passed on (call it when a turn ends). */
  readonly check: () => void
}

/**
 * How many answers an incoming message is owed, as the SDK decides: none for a notification or a
 * response (the client's answer to a question), one for anything else — a request, or a message the
 * SDK answers with an error. Counted, not matched by id: the SDK answers some with `id: null`, and a
 * client may reuse ids. (A line that is not a JSON object is answered by the SDK's line reader and
 * never reaches here.)
 */
const answersOwed = (message: unknown): number => {
  if (!isRecord(message)) return 1
  const notification = message.jsonrpc === "2.0" && !("id" in message) && typeof message.method === "string"
  const response = !("method" in message) && ("id" in message || "result" in message || "error" in message)
  return notification || response ? 0 : 1
}

/** A new end of input; `busy` tells whether the agent still runs something no request waits on. */
export const make = (busy: () => boolean): EndOfInput => {
  const ended = new AbortController()
  let owed = 0
  let answered = 0
  let release: (() => void) | undefined
  const drained = new Promise<void>((resolve) => release = resolve)
  const check = () => {
    if (ended.signal.aborted && answered >= owed && !busy()) release?.()
  }
  return {
    signal: ended.signal,
    check,
    observe: (stream) => {
      const reader = stream.readable.getReader()
      return {
        readable: new ReadableStream({
          pull: async (controller) => {
            const { done, value } = await reader.read()
            if (!done) {
              owed += answersOwed(value)
              return controller.enqueue(value)
            }
            ended.abort()
            check()
            await drained
            controller.close()
          },
          // The connection closed (a write failed, the agent stopped): nothing is held any more.
          cancel: (reason) => {
            release?.()
            return reader.cancel(reason)
          }
        }),
        writable: afterEachWrite(stream.writable, (message) => {
          if (isAnswer(message)) {
            answered++
            check()
          }
        })
      }
    }
  }
}
