/**
 * The id a model's tool call is stored under. A vendor's id names the call in the log, in every
 * event about it, in the approval API's path, and in every later request, where the vendor pairs a
 * call with its result by it — and refuses a request whose ids repeat (Anthropic: `tool_use` ids
 * must be unique) or break its rules (Anthropic: `^[a-zA-Z0-9_-]+$`; OpenAI: at most 40 characters)
 * with a 400, on every later request of the session. A model, or an endpoint behind `baseURL`, can
 * send such an id: the same one twice in a response, one an earlier step or turn used (a
 * compatible server that sends none gets `call_<index>` from the adapter, the same at every step),
 * an empty one, one of 10 KB. Such a call is kept — it runs, or fails, as any other — under an id of
 * its own that both APIs take; the log records that id, and the engine's log the one it replaced.
 *
 * @since 0.2.0
 * @internal
 */

/** What both vendors take as a tool call's id. */
const acceptable = /^[A-Za-z0-9_-]{1,40}$/

/**
 * Whether a vendor would take the id at all. An id that it would not is routine for some compatible
 * servers (vLLM's are 46 characters), so its new id is no news; an id used twice is a model's slip.
 */
export const vendorsTake = (toolCallId: string): boolean => acceptable.test(toolCallId)

/**
 * The id to store a call under: its own when both APIs take it and `taken` says no call has it,
 * else the first free `<id>_<n>` (its own id cut to leave room) or, for an id neither API takes,
 * `call_<n>`. `next` remembers, per id, the `n` to try first: without it a response of 10,000 calls
 * with one id tried 50 million candidates (11 s of the event loop every session of a `serve` shares).
 */
export const storedId = (toolCallId: string, taken: (id: string) => boolean, next: Map<string, number>): string => {
  const valid = vendorsTake(toolCallId)
  if (valid && !taken(toolCallId)) return toolCallId
  const base = valid ? toolCallId : "call"
  for (let n = next.get(base) ?? 1;; n++) {
    const suffix = `_${n}`
    const candidate = `${valid ? toolCallId.slice(0, 40 - suffix.length) : "call"}${suffix}`
    if (!taken(candidate)) {
      next.set(base, n + 1)
      return candidate
    }
  }
}
