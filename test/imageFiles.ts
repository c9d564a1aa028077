/**
 * Whole image files made in a test (zlib and hand-built bytes): a PNG of any size within the caps
 * (its pixels all zero, so a few kilobytes even at 8000 × 8000), padded to a given size by a private
 * ancillary chunk when asked, and an APNG; a PNG of any depth whose pixels are all zero, made from
 * a zlib stream of zeros of any length (about a kilobyte per MiB); a GIF of one frame whose LZW
 * codes a test writes.
 */
import { constants, deflateRawSync, deflateSync } from "node:zlib"
import * as Effect from "effect/Effect"
import { crc32 } from "../src/domain/ImageStructure.js"

/** One PNG chunk: length, type, data and the CRC of type and data. */
export const pngChunk = (type: string, data: Uint8Array = new Uint8Array(0)): Buffer => {
  const out = Buffer.alloc(12 + data.byteLength)
  out.writeUInt32BE(data.byteLength, 0)
  out.write(type, 4, "latin1")
  out.set(data, 8)
  out.writeUInt32BE(crc32(out, 4, 8 + data.byteLength), 8 + data.byteLength)
  return out
}

export const pngSignature = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])

/** An IHDR chunk. */
export const ihdr = (width: number, height: number, depth = 1, colour = 0, interlace = 0) => {
  const data = Buffer.alloc(13)
  data.writeUInt32BE(width, 0)
  data.writeUInt32BE(height, 4)
  data.set([depth, colour, 0, 0, interlace], 8)
  return pngChunk("IHDR", data)
}

/**
 * A whole 1-bit grayscale PNG of `width` × `height` pixels, all black; `bytes`: padded to exactly
 * that many bytes by a private ancillary chunk (`ruSt`) before IEND, which every decoder skips.
 */
export const png = (width: number, height: number, options: { readonly bytes?: number } = {}): Uint8Array => {
  const pixels = deflateSync(Buffer.alloc(height * (1 + Math.ceil(width / 8))))
  const parts = [pngSignature, ihdr(width, height), pngChunk("IDAT", pixels)]
  const length = parts.reduce((n, p) => n + p.byteLength, 0) + 12
  if (options.bytes !== undefined) parts.push(pngChunk("ruSt", new Uint8Array(options.bytes - length - 12)))
  parts.push(pngChunk("IEND"))
  return new Uint8Array(Buffer.concat(parts))
}

/**
 * LZW codes packed as a GIF decoder reads them (least significant bit first), each at the width the
 * decoder reads it at: `minimumSize + 1` bits after a clear code, one more bit each time the table's
 * next entry reaches the width's limit (up to 12). Any codes, so that a test can write a damaged stream.
 */
export const lzwBytes = (minimumSize: number, codes: ReadonlyArray<number>): Uint8Array => {
  const clear = 1 << minimumSize
  const out: Array<number> = []
  let bits = 0
  let held = 0
  let size = minimumSize + 1
  let next = clear + 2
  let first = true
  for (const code of codes) {
    bits |= code << held
    held += size
    while (held >= 8) {
      out.push(bits & 0xff)
      bits >>>= 8
      held -= 8
    }
    if (code === clear) {
      size = minimumSize + 1
      next = clear + 2
      first = true
    } else if (first) {
      first = false
    } else if (next < 4096) {
      next++
      if (next === 1 << size && size < 12) size++
    }
  }
  if (held > 0) out.push(bits & 0xff)
  return new Uint8Array(out)
}

/**
 * A GIF89a of one `width` × `height` frame (a two-colour table) whose image data is `data`, in
 * sub-blocks of up to 255 bytes; its logical screen `screen`, the frame's size unless given.
 */
export const gif = (
  width: number,
  height: number,
  data: Uint8Array,
  minimumSize = 2,
  screen: { readonly width: number; readonly height: number } = { width, height }
): Uint8Array => {
  const u16 = (n: number) => [n & 0xff, n >> 8]
  const blocks: Array<number> = []
  for (let at = 0; at < data.byteLength; at += 255) {
    const piece = data.subarray(at, at + 255)
    blocks.push(piece.byteLength, ...piece)
  }
  return new Uint8Array([
    ...Buffer.from("GIF89a", "latin1"), ...u16(screen.width), ...u16(screen.height), 0x80, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff,
    0x2c, ...u16(0), ...u16(0), ...u16(width), ...u16(height), 0,
    minimumSize, ...blocks, 0,
    0x3b
  ])
}

/** A zlib stream of `bytes` zeros, about a kilobyte per MiB: sync-flushed pieces of a MiB, then the rest. */
export const zerosOf = (bytes: number): Buffer => {
  const mebibyte = deflateRawSync(Buffer.alloc(1024 * 1024), { finishFlush: constants.Z_SYNC_FLUSH })
  const rest = deflateRawSync(Buffer.alloc(bytes % (1024 * 1024)), { finishFlush: constants.Z_SYNC_FLUSH })
  const adler = Buffer.alloc(4)
  adler.writeUInt32BE((((bytes % 65521) << 16) | 1) >>> 0)
  const pieces = Array.from({ length: Math.floor(bytes / (1024 * 1024)) }, () => mebibyte)
  return Buffer.concat([Buffer.from([0x78, 0x9c]), ...pieces, rest, Buffer.from([0x03, 0x00]), adler])
}

/** The bytes of a PNG row of `width` pixels at `depth` bits and colour type `colour`, its filter byte included. */
export const pngRowBytes = (width: number, depth: number, colour: number): number => {
  const channels = ({ 0: 1, 2: 3, 3: 1, 4: 2, 6: 4 } as Record<number, number>)[colour]!
  return 1 + Math.ceil((width * channels * depth) / 8)
}

/** A `width` × `height` PNG of `depth`-bit colour type `colour` whose pixels are all zero: whole, its stream as long as its header says. */
export const zeroPng = (width: number, height: number, depth: number, colour: number): Uint8Array => {
  const pixels = zerosOf(height * pngRowBytes(width, depth, colour))
  return new Uint8Array(Buffer.concat([pngSignature, ihdr(width, height, depth, colour), pngChunk("IDAT", pixels), pngChunk("IEND")]))
}

/**
 * Runs `body` with counts of the zlib streams opened meanwhile (each PNG's inflate opens one) and of
 * the bytes they gave out (what the inflates made).
 */
export const countingInflates = <A, E>(body: (counts: { readonly streams: () => number; readonly bytes: () => number }) => Effect.Effect<A, E>) =>
  Effect.suspend(() => {
    const Native = globalThis.DecompressionStream
    let streams = 0
    let bytes = 0
    globalThis.DecompressionStream = class extends Native {
      constructor(format: ConstructorParameters<typeof Native>[0]) {
        super(format)
        streams++
        const readable = this.readable.pipeThrough(
          new TransformStream<Uint8Array, Uint8Array>({
            transform: (piece, controller) => {
              bytes += piece.byteLength
              controller.enqueue(piece)
            }
          })
        )
        Object.defineProperty(this, "readable", { value: readable })
      }
    }
    return body({ streams: () => streams, bytes: () => bytes }).pipe(Effect.ensuring(Effect.sync(() => (globalThis.DecompressionStream = Native))))
  })
