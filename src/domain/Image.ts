/**
 * Images of user messages and tool results: what the log stores of one (a reference to its blob,
 * its media type, its size), which bytes are accepted as an image (PNG, JPEG, GIF and WebP, told by
 * their magic bytes, never by a name or a declared type alone) and the caps on size and count.
 *
 * @since 0.6.0
 */
import * as Schema from "effect/Schema"

/** The media types accepted: raster formats both providers take. SVG (a document that can run script) never is. */
export const MediaType = Schema.Literal("image/png", "image/jpeg", "image/gif", "image/webp")
/** The media types accepted. */
export type MediaType = typeof MediaType.Type

/**
 * An image as the log stores it: the SHA-256 of its bytes in the store's blob area, its media type
 * (from its magic bytes) and its size in bytes.
 */
export const ImageRef = Schema.Struct({
  blob: Schema.String.pipe(Schema.pattern(/^[0-9a-f]{64}$/)),
  mediaType: MediaType,
  bytes: Schema.Int.pipe(Schema.nonNegative())
})
/** An image as the log stores it. */
export type ImageRef = typeof ImageRef.Type

/** The largest image accepted, in bytes: 5 MiB (Anthropic's own per-image limit, so every provider takes what we take). */
export const maxImageBytes = 5 * 1024 * 1024

/**
 * What one image counts for in a request's token estimate: about what Anthropic charges for an image
 * near its largest size (width × height / 750 for ~1.15 megapixels), an over-estimate for small ones,
 * as the estimate means to be (see `Tokens`). The reference in the JSON is tiny; the image is not.
 */
export const estimatedTokens = 1_600

/** The most images one message may carry. */
export const maxImagesPerMessage = 20

/** An image as a caller hands it in: its bytes and, optionally, the media type the caller says it has. */
export interface ImageInput {
  readonly data: Uint8Array
  readonly mediaType?: string | undefined
}

const startsWith = (bytes: Uint8Array, prefix: ReadonlyArray<number>, at = 0): boolean =>
  bytes.length >= at + prefix.length && prefix.every((byte, i) => bytes[at + i] === byte)

const ascii = (text: string): ReadonlyArray<number> => Array.from(text, (c) => c.charCodeAt(0))

/** Whether a code is of the base64 alphabet (`A–Z a–z 0–9 + /`). */
const inAlphabet = (code: number) =>
  (code >= 65 && code <= 90) || (code >= 97 && code <= 122) || (code >= 48 && code <= 57) || code === 43 || code === 47

/**
 * Whether text is padded base64 (RFC 4648). A loop, not a regular expression: a pattern with a
 * repeated group overflows the stack on a megabytes-long string (a 5 MiB image's data did).
 */
export const isBase64 = (text: string): boolean => {
  if (text.length % 4 !== 0) return false
  const padding = text.endsWith("==") ? 2 : text.endsWith("=") ? 1 : 0
  for (let i = 0; i < text.length - padding; i++) if (!inAlphabet(text.charCodeAt(i))) return false
  return true
}

/** The media type of bytes by their magic bytes, or `undefined` when they are none of the four formats. */
export const sniff = (bytes: Uint8Array): MediaType | undefined => {
  if (startsWith(bytes, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return "image/png"
  if (startsWith(bytes, [0xff, 0xd8, 0xff])) return "image/jpeg"
  if (startsWith(bytes, ascii("GIF87a")) || startsWith(bytes, ascii("GIF89a"))) return "image/gif"
  if (startsWith(bytes, ascii("RIFF")) && startsWith(bytes, ascii("WEBP"), 8)) return "image/webp"
  return undefined
}

/** Why an image was refused. */
export const ImageRefusedReason = Schema.Literal("unsupported_type", "too_large", "too_many", "empty", "media_type_mismatch", "unreadable")
/** Why an image was refused. */
export type ImageRefusedReason = typeof ImageRefusedReason.Type

/**
 * An image (or the set of them) was refused: nothing of the message was stored. `index`: which image
 * (0-based) of the message, when one is to blame; `file`: what the user called it (a file name).
 */
export class ImageRefused extends Schema.TaggedError<ImageRefused>()("ImageRefused", {
  reason: ImageRefusedReason,
  detail: Schema.String,
  index: Schema.optional(Schema.Int),
  file: Schema.optional(Schema.String)
}) {
  override get message(): string {
    const which = this.file !== undefined ? ` ${this.file}` : this.index !== undefined ? ` #${this.index + 1}` : ""
    return `Image${which} refused [${this.reason}]: ${this.detail}`
  }
}

/** What an image over the cap is told: its size against the cap, in bytes (a rounded MiB would read "5.0 is over 5.0"). */
export const tooLargeDetail = (bytes: number): string => `${bytes} bytes is over the ${maxImageBytes} bytes (5 MiB) an image may be`

/**
 * The media type of one image, or why it is refused: empty, over {@link maxImageBytes}, not one of
 * the four formats by its magic bytes, or declared as another type than its bytes are.
 */
export const check = (image: ImageInput, index?: number, file?: string): MediaType | ImageRefused => {
  const where = { ...(index === undefined ? {} : { index }), ...(file === undefined ? {} : { file }) }
  if (image.data.byteLength === 0) return new ImageRefused({ reason: "empty", detail: "the image has no bytes", ...where })
  if (image.data.byteLength > maxImageBytes) {
    return new ImageRefused({ reason: "too_large", detail: tooLargeDetail(image.data.byteLength), ...where })
  }
  const sniffed = sniff(image.data)
  if (sniffed === undefined) {
    return new ImageRefused({ reason: "unsupported_type", detail: "only PNG, JPEG, GIF and WebP images are accepted (told by their first bytes)", ...where })
  }
  const declared = image.mediaType?.trim().toLowerCase()
  if (declared !== undefined && declared !== "" && declared !== sniffed && !(declared === "image/jpg" && sniffed === "image/jpeg")) {
    return new ImageRefused({ reason: "media_type_mismatch", detail: `declared ${image.mediaType!.slice(0, 60)} but the bytes are ${sniffed}`, ...where })
  }
  return sniffed
}

/** The media types of a message's images in order, or the first reason to refuse them (too many, or one refused). */
export const checkAll = (images: ReadonlyArray<ImageInput>): ReadonlyArray<MediaType> | ImageRefused => {
  if (images.length > maxImagesPerMessage) {
    return new ImageRefused({ reason: "too_many", detail: `${images.length} images; a message may carry ${maxImagesPerMessage}` })
  }
  const types: Array<MediaType> = []
  for (const [index, image] of images.entries()) {
    const checked = check(image, index)
    if (typeof checked !== "string") return checked
    types.push(checked)
  }
  return types
}
