/**
 * Text that cannot name a file as written: the system cuts a path (and a program's argument) at a
 * NUL, and Node writes a lone surrogate — half of a UTF-16 pair — as U+FFFD, so the file opened is
 * another name than the one a permission check, a rule or a question saw. Every path a model, a
 * client or a log gives is refused with this reason before it is resolved or asked about.
 *
 * @since 0.14.0
 * @internal
 */

const loneSurrogate = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/

/** Why `text` cannot name a file as written, or `undefined` when it can. */
export const unnamable = (text: string): string | undefined =>
  text.includes("\u0000")
    ? "it contains a NUL byte"
    : loneSurrogate.test(text)
    ? "it contains a lone surrogate (half of a UTF-16 pair)"
    : undefined
