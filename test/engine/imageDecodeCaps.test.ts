/**
 * What an image costs to check and to decode, bounded: a PNG's pixel stream is inflated once per
 * content (a repository's 8000 × 8000 PNG read again and again was inflated — 256 MB — at every
 * read), a decompression bomb is stopped within its header's size, an animation counts every frame
 * at its canvas's size, and a message's images (and a turn's tool images) have a cap on what they
 * decode to together. Counted in bytes inflated and decoded, never in time.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Image from "../../src/domain/Image.js"
import * as TurnImages from "../../src/server/TurnImages.js"
import { countingInflates, ihdr, pngChunk, pngRowBytes, pngSignature, zeroPng, zerosOf } from "../imageFiles.js"

/** `Image.verify`'s answer: the media type, or the refusal's reason and detail. */
const verdict = (data: Uint8Array) =>
  Effect.map(Effect.either(Image.verify({ data })), (r) => Either.isRight(r) ? r.right : `${r.left.reason}: ${r.left.detail}`)

/** Runs `body` with a count of the bytes every zlib stream opened meanwhile gave out (what a PNG's inflate made). */
const countingInflated = <A, E>(body: (inflated: () => number) => Effect.Effect<A, E>) => countingInflates(({ bytes }) => body(bytes))

const u32 = (n: number) => {
  const out = Buffer.alloc(4)
  out.writeUInt32BE(n >>> 0)
  return out
}

/**
 * An APNG of `frames` frames of `side` × `side` 8-bit RGBA pixels, all zero: IHDR, acTL (saying
 * `declared` frames, `frames` unless given), then each frame's fcTL and its data (IDAT for the
 * first, the default image; fdAT after), IEND.
 */
const apng = (side: number, frames: number, declared = frames) => {
  const stream = zerosOf(side * pngRowBytes(side, 8, 6))
  let sequence = 0
  const frameControl = () => pngChunk("fcTL", Buffer.concat([u32(sequence++), u32(side), u32(side), Buffer.alloc(14)]))
  const parts: Array<Buffer> = [pngSignature, ihdr(side, side, 8, 6), pngChunk("acTL", Buffer.concat([u32(declared), u32(0)]))]
  for (let frame = 0; frame < frames; frame++) {
    parts.push(frameControl())
    parts.push(frame === 0 ? pngChunk("IDAT", stream) : pngChunk("fdAT", Buffer.concat([u32(sequence++), stream])))
  }
  parts.push(pngChunk("IEND"))
  return new Uint8Array(Buffer.concat(parts))
}

const u16le = (n: number) => [n & 0xff, n >> 8]

/** A GIF89a whose screen is `side` × `side`, of `frames` frames of one pixel each (pixel.gif's frame, repeated). */
const animatedGif = (side: number, frames: number) =>
  new Uint8Array([
    ...Buffer.from("GIF89a", "latin1"), ...u16le(side), ...u16le(side), 0x80, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff,
    ...Array.from({ length: frames }, () => [0x2c, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0x02, 0x01, 0x44, 0x00]).flat(),
    0x3b
  ])

/** An animated WebP whose canvas is `side` × `side`, of `frames` frames of one lossless pixel each. */
const animatedWebp = (side: number, frames: number) => {
  const chunk = (type: string, data: Buffer) => {
    const header = Buffer.alloc(8)
    header.write(type, 0, "latin1")
    header.writeUInt32LE(data.byteLength, 4)
    return Buffer.concat([header, data, Buffer.alloc(data.byteLength & 1)])
  }
  const u24 = (n: number) => Buffer.from([n & 0xff, (n >> 8) & 0xff, (n >> 16) & 0xff])
  const vp8x = chunk("VP8X", Buffer.concat([Buffer.from([0x02, 0, 0, 0]), u24(side - 1), u24(side - 1)]))
  const anim = chunk("ANIM", Buffer.alloc(6))
  // A 1 × 1 VP8L bitstream header: its signature, then 14 bits of width - 1, 14 of height - 1, alpha and version 0.
  const pixel = chunk("VP8L", Buffer.from([0x2f, 0, 0, 0, 0]))
  const frame = chunk("ANMF", Buffer.concat([u24(0), u24(0), u24(0), u24(0), u24(100), Buffer.from([0]), pixel]))
  const body = Buffer.concat([Buffer.from("WEBP", "latin1"), vp8x, anim, ...Array.from({ length: frames }, () => frame)])
  const riff = Buffer.alloc(8)
  riff.write("RIFF", 0, "latin1")
  riff.writeUInt32LE(body.byteLength, 4)
  return new Uint8Array(Buffer.concat([riff, body]))
}

describe("a PNG's pixel stream is inflated once per content (Image.verify)", () => {
  // read_file reads a file anew at every call: a new array each time, so a 256 MB inflate for an
  // 8000 × 8000 RGBA PNG at every read of it. Here 1000 × 1000 RGBA: 4,001,000 bytes of rows.
  // (Sizes no other test uses: a content inflated whole is remembered for the process.)
  it.effect("the same bytes in another array are not inflated again; other bytes are", () =>
    countingInflated((inflated) =>
      Effect.gen(function*() {
        const image = zeroPng(1000, 1000, 8, 6)
        const rows = 1000 * pngRowBytes(1000, 8, 6)
        expect(yield* verdict(image)).toBe("image/png")
        expect(inflated()).toBe(rows)
        expect(yield* verdict(Uint8Array.from(image))).toBe("image/png")
        expect(yield* verdict(Uint8Array.from(image))).toBe("image/png")
        expect(inflated()).toBe(rows)
        expect(yield* verdict(zeroPng(1000, 999, 8, 6))).toBe("image/png")
        expect(inflated()).toBe(rows + 999 * pngRowBytes(1000, 8, 6))
      })
    ))

  it.effect("a refusal is never remembered: a damaged PNG is inflated and refused at each look", () =>
    countingInflated((inflated) =>
      Effect.gen(function*() {
        // Rows of 4 × 4 grey pixels, one short.
        const damaged = new Uint8Array(Buffer.concat([pngSignature, ihdr(4, 4, 8, 0), pngChunk("IDAT", zerosOf(19)), pngChunk("IEND")]))
        expect(yield* verdict(damaged)).toMatch(/^unreadable: the PNG's pixel data is 19 bytes, short of the 20/)
        expect(yield* verdict(Uint8Array.from(damaged))).toMatch(/^unreadable:/)
        expect(inflated()).toBe(38)
      })
    ))
})

describe("a decompression bomb", () => {
  it.effect("a PNG whose stream inflates to 1 GiB past its header's size is refused unreadable within its size and a piece", () =>
    countingInflated((inflated) =>
      Effect.gen(function*() {
        const rows = 1000 * pngRowBytes(1000, 8, 6)
        const bomb = new Uint8Array(Buffer.concat([pngSignature, ihdr(1000, 1000, 8, 6), pngChunk("IDAT", zerosOf(1024 * 1024 * 1024)), pngChunk("IEND")]))
        expect(bomb.byteLength).toBeLessThan(Image.maxImageBytes)
        expect(yield* verdict(bomb)).toMatch(/^unreadable: the PNG's pixel data is longer than the 4001000 bytes its header says$/)
        // The refusal comes at the piece that passes the size: what was inflated is the size and at most one piece more.
        expect(inflated()).toBeLessThanOrEqual(rows + 1024 * 1024)
      })
    ))
})

describe("an animation counts every frame at its canvas's size (Image.maxDecodedBytes)", () => {
  const over = (frames: number, side: number) =>
    new RegExp(`^too_large: ${frames} frames of ${side}×${side} pixels at 32 bits a pixel decode to ${frames * side * side * 4} bytes, over the 256000000 bytes an image's pixels may be$`)

  it.effect("an APNG of 100 frames of 2000 × 2000 RGBA (1.6 GB decoded) is refused before any inflate; of 15 frames it passes", () =>
    countingInflated((inflated) =>
      Effect.gen(function*() {
        expect(yield* verdict(apng(2000, 100))).toMatch(over(100, 2000))
        expect(inflated()).toBe(0)
        // acTL saying a million frames with one present: a decoder sizes by it.
        expect(yield* verdict(apng(64, 1, 1_000_000))).toMatch(over(1_000_000, 64))
        expect(yield* verdict(apng(2000, 15))).toBe("image/png")
      })
    ))

  it.effect("an animated GIF of 100 one-pixel frames on a 2000 × 2000 screen is refused; of 15 it passes", () =>
    Effect.gen(function*() {
      expect(yield* verdict(animatedGif(2000, 100))).toMatch(over(100, 2000))
      expect(yield* verdict(animatedGif(2000, 15))).toBe("image/gif")
    }))

  it.effect("an animated WebP of 100 one-pixel frames on a 2000 × 2000 canvas is refused; of 15 it passes", () =>
    Effect.gen(function*() {
      expect(yield* verdict(animatedWebp(2000, 100))).toMatch(over(100, 2000))
      expect(yield* verdict(animatedWebp(2000, 15))).toBe("image/webp")
    }))
})

describe("a message's images together (Image.maxDecodedBytesPerMessage)", () => {
  // Five GIFs whose screens are 8000 × 8000: each 256 MB decoded (within an image's cap), 1.28 GB together.
  const big = () => animatedGif(8000, 1)
  const over = /^the message's 5 images decode to 1280000000 bytes together, over the 1024000000 bytes a message's images may$/

  it.effect("verifyAll: refused too_large, before any image is inflated; four pass", () =>
    countingInflated((inflated) =>
      Effect.gen(function*() {
        const refused = yield* Effect.flip(Image.verifyAll([{ data: zeroPng(64, 64, 8, 6) }, ...Array.from({ length: 5 }, () => ({ data: big() }))]))
        expect(refused.reason).toBe("too_large")
        expect(refused.index).toBeUndefined()
        expect(refused.detail).toMatch(/^the message's 6 images decode to 1280016384 bytes/)
        expect(inflated()).toBe(0)
        expect(yield* Image.verifyAll(Array.from({ length: 4 }, () => ({ data: big() })))).toEqual(Array(4).fill("image/gif"))
      })
    ))

  it("checkAll: the same", () => {
    const refused = Image.checkAll(Array.from({ length: 5 }, () => ({ data: big() })))
    expect(refused).toMatchObject({ _tag: "ImageRefused", reason: "too_large" })
    expect((refused as Image.ImageRefused).detail).toMatch(over)
  })

  it.effect("the server's body (TurnImages.decode): 413, naming the caps", () =>
    Effect.gen(function*() {
      const refused = yield* Effect.flip(TurnImages.decode(Array.from({ length: 5 }, () => ({ data: Buffer.from(big()).toString("base64") }))))
      expect(refused.error).toBe("PayloadTooLarge")
      expect(refused.message).toMatch(/^Image refused \[too_large\]: the message's 5 images decode to 1280000000 bytes/)
    }))
})
