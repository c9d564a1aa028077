/**
 * Images of user messages and tool results: what the log stores of one (a reference to its blob,
 * its media type, its size), which bytes are accepted as an image (PNG, JPEG, GIF and WebP, told by
 * their magic bytes, never by a name or a declared type alone) and the caps on size and count.
 *
 * @since 0.6.0
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as ImageStructure from "./ImageStructure.js"

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

/**
 * The most pixels an image may have on a side: Anthropic refuses an image over 8000 × 8000. The size
 * is read from the header, and a few bytes can say 100,000: an image in the transcript is sent again
 * with every request, so one such image made every later request of its session fail.
 */
export const maxImageSide = 8000

/**
 * The most bytes an image's pixels may decode to, as its header says: width × height × the bytes of
 * a pixel at its depth and channels (a PNG's channels × bit depth, a JPEG's components × 8 or 16
 * bits by its precision, 4 for a GIF's or WebP's, which decoders make RGBA) — 256,000,000, an 8-bit
 * RGBA image at the side cap (8000 × 8000 × 4). Every 8-bit image within 8000 pixels a side passes;
 * past it are only deep ones: a 16-bit RGBA PNG over 32 megapixels, a 16-bit RGB one over 42, a
 * 12-bit JPEG over 42. A PNG's check inflates its pixels (up to seconds for 256 MB) and the provider
 * decodes them: a 497 KB PNG saying 8000 × 8000 at 16 bits RGBA (512 MB of zeros) passed and was
 * inflated at every check. Providers take no more: Anthropic scales an image past 1568 pixels on its
 * long edge down (about 1.15 megapixels), OpenAI past 2048, Gemini past 3072.
 */
export const maxDecodedBytes = maxImageSide * maxImageSide * 4

/** The most images one message may carry. */
export const maxImagesPerMessage = 20

/**
 * The most bytes a message's images may decode to together (each as {@link maxDecodedBytes} counts
 * it, every frame of an animation included): 1,024,000,000, four images at an image's cap. Twenty
 * images within an image's cap made 5 GB of pixels for one message: a PNG's inflate on this side
 * (seconds each), the provider's decode on its side. Twenty 3600 × 3600 RGBA screenshots pass.
 * A message's images over it are refused (`too_large`); a tool result's are left out with a note.
 */
export const maxDecodedBytesPerMessage = 4 * maxImageSide * maxImageSide * 4

/**
 * The most bytes the images the tools of one turn return may decode to together (the user's message
 * has its own cap): the same 1,024,000,000. A repository of 200 screenshots of 24 MB of pixels each,
 * read in one turn, made 4.8 GB; past it a tool's images are left out of its result with a note
 * saying so (`DecodedAllowance`).
 */
export const maxDecodedBytesPerTurn = maxDecodedBytesPerMessage

/**
 * A request of more than `maxImagesAtFullSide` images may carry none over `maxManyImagesSide`
 * pixels a side (Anthropic's rule): past that count, such an image is sent as a note (`Images.attach`).
 */
export const maxImagesAtFullSide = 20
export const maxManyImagesSide = 2000

/**
 * The most images one request carries, and the most bytes of them: Anthropic takes 100 images a
 * request (a 200k-token model's) and 32 MB a request, base64 (4/3 of the bytes) included. Past
 * them, the oldest images of the transcript are sent as a note (`Images.attach`).
 */
export const maxImagesPerRequest = 100
export const maxImageBytesPerRequest = 20 * 1024 * 1024

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
  if (startsWith(bytes, magic.png)) return "image/png"
  if (startsWith(bytes, magic.jpeg)) return "image/jpeg"
  if (startsWith(bytes, magic.gif87) || startsWith(bytes, magic.gif89)) return "image/gif"
  if (startsWith(bytes, magic.riff) && startsWith(bytes, magic.webp, 8)) return "image/webp"
  return undefined
}

/** The magic bytes, made once: `sniff` looks at every file `read_file` reads (they were made at each look). */
const magic = {
  png: [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a],
  jpeg: [0xff, 0xd8, 0xff],
  gif87: ascii("GIF87a"),
  gif89: ascii("GIF89a"),
  riff: ascii("RIFF"),
  webp: ascii("WEBP")
} as const

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

/** A little-endian 24-bit number at `at` (WebP's VP8X sizes). */
const uint24 = (bytes: Uint8Array, at: number) => bytes[at]! | (bytes[at + 1]! << 8) | (bytes[at + 2]! << 16)

/** Width and height as an image's header says, or undefined when the header is cut short or not understood. */
export const dimensions = (bytes: Uint8Array): { readonly width: number; readonly height: number } | undefined => {
  const found = header(bytes)
  return found === undefined ? undefined : { width: found.width, height: found.height }
}

/**
 * Width, height and the bits of a pixel as an image's header says (`bits` undefined when the
 * header's depth is not one the format has: the structure walk refuses it), or undefined when the
 * header is cut short or not understood.
 */
const header = (bytes: Uint8Array): { readonly width: number; readonly height: number; readonly bits: number | undefined } | undefined => {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const has = (end: number) => bytes.byteLength >= end
  switch (sniff(bytes)) {
    case "image/png": {
      // The IHDR chunk comes first: width and height, big-endian, at 16 and 20; bit depth and colour type at 24 and 25.
      if (!has(24)) return undefined
      const channels = has(26) ? ImageStructure.pngChannels[bytes[25]!] : undefined
      return { width: view.getUint32(16), height: view.getUint32(20), bits: channels === undefined ? undefined : channels * bytes[24]! }
    }
    case "image/gif":
      return has(10) ? { width: view.getUint16(6, true), height: view.getUint16(8, true), bits: 32 } : undefined
    case "image/webp": {
      if (!has(30)) return undefined
      const chunk = String.fromCharCode(...bytes.subarray(12, 16))
      if (chunk === "VP8 ") return { width: view.getUint16(26, true) & 0x3fff, height: view.getUint16(28, true) & 0x3fff, bits: 32 }
      if (chunk === "VP8L") {
        const bits = view.getUint32(21, true)
        return { width: (bits & 0x3fff) + 1, height: ((bits >>> 14) & 0x3fff) + 1, bits: 32 }
      }
      // Two 24-bit fields at 24 and 27: read as three bytes each, as a 32-bit read of the second would pass a 30-byte file's end.
      if (chunk === "VP8X") return { width: uint24(bytes, 24) + 1, height: uint24(bytes, 27) + 1, bits: 32 }
      return undefined
    }
    case "image/jpeg": {
      // Segments from after SOI: the first start-of-frame (C0-CF but DHT C4, JPG C8, DAC CC) says the size.
      let at = 2
      while (has(at + 4)) {
        if (bytes[at] !== 0xff) return undefined
        const marker = bytes[at + 1]!
        // Fill bytes, and markers without a length (TEM, RST0-7).
        if (marker === 0xff) {
          at += 1
          continue
        }
        if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) {
          at += 2
          continue
        }
        if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
          // Precision at 4 (8 bits a sample, or up to 16), the number of components at 9.
          if (!has(at + 9)) return undefined
          const bits = has(at + 10) ? bytes[at + 9]! * (bytes[at + 4]! > 8 ? 16 : 8) : undefined
          return { width: view.getUint16(at + 7), height: view.getUint16(at + 5), bits }
        }
        // Start of scan or end of image before a frame: no size to read.
        if (marker === 0xda || marker === 0xd9) return undefined
        at += 2 + view.getUint16(at + 2)
      }
      return undefined
    }
    default:
      return undefined
  }
}

/**
 * What the model reads in place of an image it is not given: the image's type, size and the start of
 * its blob (so it can tell which one), and why.
 */
export const note = (image: ImageRef, why: string): string => `[image ${image.mediaType}, ${image.bytes} bytes (${image.blob.slice(0, 12)}): ${why}]`

/** What an image over the cap is told: its size against the cap, in bytes (a rounded MiB would read "5.0 is over 5.0"). */
export const tooLargeDetail = (bytes: number): string => `${bytes} bytes is over the ${maxImageBytes} bytes (5 MiB) an image may be`

/**
 * The media type of one image, or why it is refused: empty, over {@link maxImageBytes}, not one of
 * the four formats by its magic bytes, declared as another type than its bytes are, or not a whole
 * file of its format (`unreadable`: a header without a size, a cut or damaged body — see
 * `ImageStructure`). A PNG's pixel stream is checked by {@link verify} only (it is inflated).
 */
export const check = (image: ImageInput, index?: number, file?: string): MediaType | ImageRefused => {
  const examined = examine(image, index, file)
  return examined instanceof ImageRefused ? examined : examined.mediaType
}

/**
 * An image the cheap checks passed ({@link examine}): its media type, the bytes its pixels decode to
 * (every frame at its canvas's size), and a PNG's pixel stream still to inflate ({@link inflate}).
 */
export interface Examined {
  readonly image: ImageInput
  readonly mediaType: MediaType
  readonly decoded: number
  readonly pixels?: ImageStructure.PngStream | undefined
  /** Where the image is, for a refusal: its index in the message, what the user called it. */
  readonly where: { readonly index?: number; readonly file?: string }
}

/**
 * {@link check}'s judgement, its structure walked once: the image and its media type, with a PNG's
 * pixel stream still to inflate. A surface that takes several images examines them all before it
 * inflates any ({@link inflate}): a later image's cheap refusal comes before any inflate.
 */
export const examine = (image: ImageInput, index?: number, file?: string): ImageRefused | Examined => {
  const where = { ...(index === undefined ? {} : { index }), ...(file === undefined ? {} : { file }) }
  if (image.data.byteLength === 0) return new ImageRefused({ reason: "empty", detail: "the image has no bytes", ...where })
  if (image.data.byteLength > maxImageBytes) {
    return new ImageRefused({ reason: "too_large", detail: tooLargeDetail(image.data.byteLength), ...where })
  }
  const sniffed = sniff(image.data)
  if (sniffed === undefined) {
    return new ImageRefused({ reason: "unsupported_type", detail: "only PNG, JPEG, GIF and WebP images are accepted (told by their first bytes)", ...where })
  }
  const size = header(image.data)
  if (size !== undefined && (size.width > maxImageSide || size.height > maxImageSide)) {
    return new ImageRefused({ reason: "too_large", detail: `${size.width}×${size.height} pixels is over the ${maxImageSide} pixels a side an image may be`, ...where })
  }
  const decoded = size?.bits === undefined ? undefined : size.width * size.height * size.bits / 8
  if (decoded !== undefined && decoded > maxDecodedBytes) {
    return new ImageRefused({
      reason: "too_large",
      detail: `${size!.width}×${size!.height} pixels at ${size!.bits} bits a pixel decode to ${decoded} bytes, over the ${maxDecodedBytes} bytes an image's pixels may be`,
      ...where
    })
  }
  const declared = image.mediaType?.trim().toLowerCase()
  if (declared !== undefined && declared !== "" && declared !== sniffed && !(declared === "image/jpg" && sniffed === "image/jpeg")) {
    return new ImageRefused({ reason: "media_type_mismatch", detail: `declared ${image.mediaType!.slice(0, 60)} but the bytes are ${sniffed}`, ...where })
  }
  // A size the header does not say (cut short, not understood) or of no pixels: no provider reads such an image.
  if (size === undefined || size.width === 0 || size.height === 0) {
    return new ImageRefused({ reason: "unreadable", detail: `the ${sniffed} header does not say the image's size (cut short or damaged)`, ...where })
  }
  const structure = ImageStructure.structure(image.data, sniffed, maxImageSide)
  if (typeof structure === "string") return new ImageRefused({ reason: "unreadable", detail: structure, ...where })
  if (structure._tag === "TooLarge") return new ImageRefused({ reason: "too_large", detail: structure.detail, ...where })
  // Every frame of an animation, each at its canvas's size: a decoder showing it makes them all.
  const bits = size.bits ?? 32
  const all = structure.pixels * bits / 8
  if (all > maxDecodedBytes) {
    const canvas = structure.frames > 1 && structure.pixels === structure.frames * size.width * size.height
      ? `${structure.frames} frames of ${size.width}×${size.height} pixels`
      : `${structure.frames} frames of ${structure.pixels} pixels in all`
    return new ImageRefused({
      reason: "too_large",
      detail: `${canvas} at ${bits} bits a pixel decode to ${all} bytes, over the ${maxDecodedBytes} bytes an image's pixels may be`,
      ...where
    })
  }
  return { image, mediaType: sniffed, decoded: all, pixels: structure.stream, where }
}

/**
 * Why a message's images, each {@link examine}d, are refused together: the bytes they decode to over
 * `cap` ({@link maxDecodedBytesPerMessage}). Before any is inflated.
 */
export const overMessage = (examined: ReadonlyArray<Examined>, cap: number = maxDecodedBytesPerMessage): ImageRefused | undefined => {
  const decoded = examined.reduce((sum, one) => sum + one.decoded, 0)
  return decoded <= cap ? undefined : new ImageRefused({
    reason: "too_large",
    detail: `the message's ${examined.length} images decode to ${decoded} bytes together, over the ${cap} bytes a message's images may`
  })
}

/**
 * What the images of one turn's tools may still decode to ({@link maxDecodedBytesPerTurn}): each
 * tool result's images are reserved before any is inflated ({@link verifyAll}), and given back if
 * they are refused after all (a PNG's pixels damaged). Counted for images stored, not for reads: the
 * same file read twice counts twice, as it is sent twice.
 */
export class DecodedAllowance {
  used = 0
  constructor(readonly cap: number = maxDecodedBytesPerTurn) {}

  /** Takes `bytes` of what is left, or says why not. */
  take(bytes: number, count: number): ImageRefused | undefined {
    if (this.used + bytes <= this.cap) {
      this.used += bytes
      return undefined
    }
    return new ImageRefused({
      reason: "too_large",
      detail: `${count === 1 ? "the image decodes" : `the ${count} images decode`} to ${bytes} bytes, and the images this turn's tools returned already decode to ${this.used} of the ${this.cap} bytes a turn's may`
    })
  }

  giveBack(bytes: number): void {
    this.used -= bytes
  }
}

/**
 * Inflates a PNG's pixel stream (its IDAT data) and follows it as it comes, keeping none of it: a
 * reason when it is not a whole zlib stream, has a row without a filter type, or is shorter or
 * longer than the header says; stopped as soon as it is longer (a file of a few kilobytes can
 * inflate to gigabytes). The platform's `DecompressionStream` (native zlib, off the event loop;
 * the domain imports nothing but effect).
 */
const pngPixels = (stream: ImageStructure.PngStream, signal: AbortSignal): Promise<string | undefined> => {
  const rows = ImageStructure.pngRowChecker(stream.rows)
  let next = 0
  const source = new ReadableStream<Uint8Array>({
    pull: (controller) => {
      if (next < stream.idat.length) controller.enqueue(stream.idat[next++]!)
      else controller.close()
    }
  })
  const reader = source.pipeThrough(new DecompressionStream("deflate")).getReader()
  const stop = () => reader.cancel().catch(() => undefined)
  signal.addEventListener("abort", stop, { once: true })
  const read = async (): Promise<string | undefined> => {
    try {
      while (true) {
        const { done, value } = await reader.read()
        if (done) return rows.end()
        const why = rows.push(value)
        if (why !== undefined) {
          void stop()
          return why
        }
      }
    } catch {
      return "the PNG's pixel data is not a whole zlib stream (cut short or damaged)"
    } finally {
      signal.removeEventListener("abort", stop)
    }
  }
  return read()
}

/**
 * {@link check}, and for a PNG its pixel stream too (inflated and counted, never kept): what every
 * image the engine stores goes through, a message's or a tool's. A PNG whose chunks are whole but
 * whose pixels do not inflate to what its header says is refused `unreadable` like any other
 * damaged image.
 */
export const verify = (image: ImageInput, index?: number, file?: string): Effect.Effect<MediaType, ImageRefused> =>
  Effect.suspend(() => {
    const examined = examine(image, index, file)
    return examined instanceof ImageRefused ? Effect.fail(examined) : inflate(examined)
  })

/**
 * The rest of {@link verify} for an image {@link examine} passed: a PNG's pixel stream inflated, once
 * per array of bytes and once per content (by the SHA-256 of its bytes, {@link inflatedContents}).
 */
export const inflate = ({ image, mediaType, pixels, where }: Examined): Effect.Effect<MediaType, ImageRefused> =>
  Effect.suspend(() => {
    if (pixels === undefined || inflated.has(image.data)) return Effect.succeed(mediaType)
    return Effect.flatMap(Effect.promise(() => contentOf(image.data)), (content) => {
      if (inflatedContents.has(content)) {
        inflated.add(image.data)
        return Effect.succeed(mediaType)
      }
      return Effect.flatMap(
        Effect.promise((signal) => pngPixels(pixels, signal)),
        (why) => {
          if (why !== undefined) return Effect.fail(new ImageRefused({ reason: "unreadable", detail: why, ...where }))
          inflated.add(image.data)
          inflatedContents.add(content)
          if (inflatedContents.size > inflatedContentsCapacity) inflatedContents.delete(inflatedContents.values().next().value!)
          return Effect.succeed(mediaType)
        }
      )
    })
  })

/** The SHA-256 of bytes, in hex (the platform's Web Crypto: native, and the domain imports nothing but effect). */
const contentOf = async (bytes: Uint8Array): Promise<string> =>
  Array.from(new Uint8Array(await globalThis.crypto.subtle.digest("SHA-256", bytes)), (byte) => byte.toString(16).padStart(2, "0")).join("")

/**
 * The PNGs whose pixel stream {@link verify} inflated whole, by their bytes' array: a surface (the
 * CLI's `--image`, the server's request body) verifies an image before it starts a turn, and the
 * engine verifies the same array again as it stores it — the inflate, up to seconds for an 8000 ×
 * 8000 PNG, ran twice. The cheap checks still run every time, and they cover the pixel stream's
 * bytes (each chunk's CRC), so an array changed since is judged anew.
 */
const inflated = new WeakSet<Uint8Array>()

/**
 * The contents (SHA-256 of the bytes) of the PNGs whose pixel stream {@link inflate} inflated whole:
 * `read_file` reads a file into a new array at each call, so a repository's 8000 × 8000 RGBA PNG
 * (a few hundred kilobytes) was inflated — 256 MB — at every read of it. Now the first read
 * inflates it; the next ones hash its bytes (at most 5 MiB). A refusal is never remembered. The
 * cheap checks (CRCs included) still run every time. At most `inflatedContentsCapacity`, the oldest let go.
 */
const inflatedContents = new Set<string>()
const inflatedContentsCapacity = 1024

/**
 * A message's images each {@link examine}d, or the first reason to refuse them: too many, one
 * refused, or together over {@link maxDecodedBytesPerMessage}.
 */
export const examineAll = (images: ReadonlyArray<ImageInput>): ReadonlyArray<Examined> | ImageRefused => {
  if (images.length > maxImagesPerMessage) {
    return new ImageRefused({ reason: "too_many", detail: `${images.length} images; a message may carry ${maxImagesPerMessage}` })
  }
  const examined: Array<Examined> = []
  for (const [index, image] of images.entries()) {
    const one = examine(image, index)
    if (one instanceof ImageRefused) return one
    examined.push(one)
  }
  return overMessage(examined) ?? examined
}

/** The media types of a message's images in order, or the first reason to refuse them (too many, one refused, or too large together). */
export const checkAll = (images: ReadonlyArray<ImageInput>): ReadonlyArray<MediaType> | ImageRefused => {
  const examined = examineAll(images)
  return examined instanceof ImageRefused ? examined : examined.map((one) => one.mediaType)
}

/**
 * {@link checkAll} with each image {@link verify}'d: the media types in order, or the first reason to
 * refuse them. Every image is examined before any is inflated: a later image's cheap refusal, and
 * the message's cap, come before any inflate. `allowance`: what a turn's tool images may still
 * decode to, taken before the inflate and given back if the images are refused after all.
 */
export const verifyAll = (images: ReadonlyArray<ImageInput>, allowance?: DecodedAllowance): Effect.Effect<ReadonlyArray<MediaType>, ImageRefused> =>
  Effect.suspend(() => {
    const examined = examineAll(images)
    if (examined instanceof ImageRefused) return Effect.fail(examined)
    if (allowance === undefined) return Effect.forEach(examined, inflate)
    const decoded = examined.reduce((sum, one) => sum + one.decoded, 0)
    const refused = allowance.take(decoded, examined.length)
    if (refused !== undefined) return Effect.fail(refused)
    return Effect.tapError(Effect.forEach(examined, inflate), () => Effect.sync(() => allowance.giveBack(decoded)))
  })
