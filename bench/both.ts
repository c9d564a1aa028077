/**
 * What both sides of a row share, in a module that loads nothing of effect-agent (a child process
 * measuring pi-agent-core loads only pi's modules): the deltas, and the per-event work of a consumer.
 */
import type { AgentEvent } from "../src/index.js"

/** `n` distinct text deltas of 4 characters (what pi-ai's faux provider streams with token size 1). */
export const deltaTexts = (n: number): Array<string> => Array.from({ length: n }, (_, i) => i.toString(36).padStart(4, "x").slice(-4))

/**
 * The per-event work of a consumer, the same on both sides of a row: look at the event's kind and
 * the text it carries. Its result only keeps the work from being optimised away.
 */
let touched = 0
export const touch = (event: AgentEvent.AgentEvent): void => {
  touched += event.type.length + (event.type === "model.delta" ? event.payload.text.length : 0)
}
/** The same work on a pi-agent-core event (its text delta is carried by `message_update`). */
export const touchPi = (event: { readonly type: string; readonly assistantMessageEvent?: { readonly type: string; readonly delta?: string } }): void => {
  touched += event.type.length + (event.assistantMessageEvent?.type === "text_delta" ? event.assistantMessageEvent.delta?.length ?? 0 : 0)
}
process.on("exit", () => {
  if (touched < 0) console.log(touched)
})

