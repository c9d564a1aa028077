/**
 * Token estimates, for the context budget before a request is sent. A deliberate over-estimate
 * (about four characters a token, rounded up) rather than a vendor tokenizer: the core stays free of
 * vendor code, and erring high keeps requests under the real limit.
 *
 * @since 0.1.0
 */

/** Estimated tokens of a text. */
export const estimate = (text: string): number => (text.length === 0 ? 0 : Math.ceil(text.length / 4))

/** Estimated tokens of a JSON value, as it is serialized for the model. */
export const estimateJson = (value: unknown): number => estimate(JSON.stringify(value) ?? "")
