/**
 * A count with its noun, singular for one: "1 line", "2 lines". Every message that counts things
 * says it through this one helper, so none says "dropped 1 lines".
 *
 * @since 0.14.0
 */

/** `n` and the noun: `plural` (default: the noun and "s") unless `n` is 1. */
export const count = (n: number, singular: string, plural = `${singular}s`): string => `${n} ${n === 1 ? singular : plural}`

/** `n` with its thousands grouped by commas ("20,000"), written here: `toLocaleString` loads ICU's locale data, 7.6 MB of RSS. */
export const grouped = (n: number): string => String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ",")
