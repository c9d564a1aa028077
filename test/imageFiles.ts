/**
 * Whole image files made in a test (zlib and hand-built bytes): a PNG of any size within the caps
 * (its pixels all zero, so a few kilobytes even at 8000 × 8000), padded to a given size by a private
 * ancillary chunk when asked, and an APNG.
 */
import { deflateSync } from "node:zlib"
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
