/**
 * The order in which requests and `session/cancel` notifications arrived on an ACP connection. The
 * SDK starts handlers concurrently, so a `session/cancel` sent just before a `session/prompt` (a Stop
 * click landing after the answer) may be handled after the prompt has started its turn. What a cancel
 * means is decided by arrival, not by handling: it cancels the prompts of its session that arrived
 * before it, never one that arrived after.
 *
 * @since 0.5.0
 */
import type * as acp from "@agentclientprotocol/sdk"
import { afterEachWrite, isAnswer, isRecord } from "./Written.js"

/** Where each message arrived on one connection. */
export interface Arrivals {
  /** The connection's stream, with each incoming message noted as it is read and each response as it is written. */
  readonly observe: (stream: acp.Stream) => acp.Stream
  /** When the `session/prompt` or `session/load` request with this id arrived (forgotten once asked); now when forgotten. */
  readonly requestAt: (requestId: acp.JsonRpcId) => number
  /** Whether a `session/cancel` of the session arrived after `at`. */
  readonly cancelledAfter: (sessionId: string, at: number) => boolean
  /** How many request ids are kept (for tests). */
  readonly held: () => number
}

/**
 * The most request ids kept; past it the oldest is forgotten. Only requests whose handler has not
 * run yet and that are not answered are kept (a few per session), so it is reached only by a
 * client flooding requests whose answers it does not read. A forgotten request counts as arriving
 * when its handler asks: a cancel that arrived before then is taken as an earlier Stop click (it
 * cancels nothing) rather than one cancelling the next prompt.
 */
export const maxHeld = 1024

const isId = (id: unknown): id is string | number => typeof id === "string" || typeof id === "number"

/** A new record of arrivals; `observe` the connection's stream with it. */
export const make = (): Arrivals => {
  let count = 0
  const requests = new Map<acp.JsonRpcId, number>()
  const lastCancel = new Map<string, number>()
  const arrived = (message: unknown) => {
    if (!isRecord(message) || typeof message.method !== "string") return
    const at = ++count
    // Only the requests that run turns are asked about (and forgotten once asked or answered).
    const runsTurns = message.method === "session/prompt" || message.method === "session/load"
    if (runsTurns && isId(message.id)) {
      requests.delete(message.id) // a reused id goes to the back, as the newest
      requests.set(message.id, at)
      if (requests.size > maxHeld) requests.delete(requests.keys().next().value!)
    }
    if (message.method === "session/cancel" && !("id" in message) && isRecord(message.params) && typeof message.params.sessionId === "string") {
      lastCancel.set(message.params.sessionId, at)
    }
  }
  // A request the SDK refuses itself (before `initialize`, bad params) never reaches its handler,
  // which would have asked (and forgotten) it: its answer going out forgets it.
  const answered = (message: unknown) => {
    if (isAnswer(message) && isId(message.id)) requests.delete(message.id)
  }
  return {
    observe: (stream) => ({
      writable: afterEachWrite(stream.writable, answered),
      readable: stream.readable.pipeThrough(new TransformStream({
        transform: (message, controller) => {
          arrived(message)
          controller.enqueue(message)
        }
      }))
    }),
    requestAt: (requestId) => {
      const at = requests.get(requestId) ?? count
      requests.delete(requestId)
      return at
    },
    cancelledAfter: (sessionId, at) => (lastCancel.get(sessionId) ?? 0) > at,
    held: () => requests.size
  }
}
