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

/** Where each message arrived on one connection. */
export interface Arrivals {
  /** The connection's stream, with each incoming message noted as it is read. */
  readonly observe: (stream: acp.Stream) => acp.Stream
  /** When the `session/prompt` or `session/load` request with this id arrived (forgotten once asked). */
  readonly requestAt: (requestId: acp.JsonRpcId) => number
  /** Whether a `session/cancel` of the session arrived after `at`. */
  readonly cancelledAfter: (sessionId: string, at: number) => boolean
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null

/** A new record of arrivals; `observe` the connection's stream with it. */
export const make = (): Arrivals => {
  let count = 0
  const requests = new Map<acp.JsonRpcId, number>()
  const lastCancel = new Map<string, number>()
  const note = (message: unknown) => {
    if (!isRecord(message) || typeof message.method !== "string") return
    const at = ++count
    // Only the requests that run turns are asked about (and forgotten once asked): nothing else is kept.
    const runsTurns = message.method === "session/prompt" || message.method === "session/load"
    if (runsTurns && (typeof message.id === "string" || typeof message.id === "number")) requests.set(message.id, at)
    if (message.method === "session/cancel" && !("id" in message) && isRecord(message.params) && typeof message.params.sessionId === "string") {
      lastCancel.set(message.params.sessionId, at)
    }
  }
  return {
    observe: (stream) => ({
      writable: stream.writable,
      readable: stream.readable.pipeThrough(new TransformStream({
        transform: (message, controller) => {
          note(message)
          controller.enqueue(message)
        }
      }))
    }),
    requestAt: (requestId) => {
      const at = requests.get(requestId) ?? count
      requests.delete(requestId)
      return at
    },
    cancelledAfter: (sessionId, at) => (lastCancel.get(sessionId) ?? 0) > at
  }
}
