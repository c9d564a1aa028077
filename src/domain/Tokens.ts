/**
 * Token estimates, for the context budget before a request is sent. A deliberate over-estimate
 * (about four characters a token, rounded up) rather than a vendor tokenizer: the core stays free of
 * vendor code, and erring high keeps requests under the real limit.
 *
 * @since 0.1.0
 */
import { grouped } from "./Plural.js"

/** Estimated tokens of a text. */
export const estimate = (text: string): number => (text.length === 0 ? 0 : Math.ceil(text.length / 4))

/** Estimated tokens of a JSON value, as it is serialized for the model. */
export const estimateJson = (value: unknown): number => estimate(JSON.stringify(value) ?? "")

/**
 * Two token counts added, saturating at the largest safe integer: a vendor that reports absurd
 * usage (a count near 2^53 on every response) must not make a sum that is no longer a count — the
 * schema would then refuse a turn's or a session's totals, and a listing with them.
 */
export const addCounts = (a: number, b: number): number => Math.min(Number.MAX_SAFE_INTEGER, a + b)

/**
 * Why a user's message can never be sent to a model whose context window holds `maxContextTokens`
 * tokens — its estimate alone is over the whole window — or `undefined`. Said after the message's
 * name ("the message is about …"). Stored, such a message would end its turn and every later turn
 * of the session `context_overflow` (a compaction keeps the latest message whole), so the engine
 * refuses it before anything is stored (`InvalidInput`), as the CLI does before a session is made.
 */
export const overWindow = (message: string, maxContextTokens: number): string | undefined => {
  const tokens = estimate(message)
  if (tokens <= maxContextTokens) return undefined
  return `is about ${grouped(tokens)} tokens (${grouped(message.length)} characters), more than the model's whole context window ` +
    `(${grouped(maxContextTokens)} tokens): it could never be sent, and would end every later turn of the session context_overflow; ` +
    "nothing was stored — send a shorter message (a long text can go in a file the agent reads)"
}
