/**
 * An image must be a whole file of its format, not only a header: a cut or damaged body is refused
 * `unreadable` (a provider refuses it — "Could not process image" — and an image of the transcript is
 * sent again with every later request, so one killed every later request of its session). Valid
 * images of every kind pass: 16-bit and interlaced PNGs, APNG, CMYK and progressive JPEGs, animated
 * GIF and WebP, lossy/lossless/alpha WebP.
 */
import { readdirSync, readFileSync } from "node:fs"
import { join, resolve } from "node:path"
import * as zlib from "node:zlib"
import { deflateRawSync, deflateSync, constants } from "node:zlib"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as fc from "effect/FastCheck"
import * as Image from "../../src/domain/Image.js"
import { crc32 } from "../../src/domain/ImageStructure.js"
import * as TurnImages from "../../src/server/TurnImages.js"
import { countingInflates, gif, ihdr, lzwBytes, png, pngChunk, pngSignature, zeroPng } from "../imageFiles.js"

const fixtures = resolve(import.meta.dirname, "../../fixtures/images")
const read = (path: string) => new Uint8Array(readFileSync(join(fixtures, path)))
const valid = [
  ...["photo.png", "pixel.gif", "pixel.jpg", "pixel.webp"],
  ...readdirSync(join(fixtures, "valid")).map((name) => `valid/${name}`)
].map((name) => [name, read(name)] as const)

/** `Image.verify`'s answer: the media type, or the refusal's reason and detail. */
const verdict = (data: Uint8Array) =>
  Effect.map(Effect.either(Image.verify({ data })), (r) => Either.isRight(r) ? r.right : `${r.left.reason}: ${r.left.detail}`)

/** An APNG: IHDR, acTL, fcTL, IDAT (the default image), fcTL and fdAT (a second frame), IEND. */
const apng = () => {
  const rows = deflateSync(Buffer.alloc(4 * (1 + 4 * 4), 0x00))
  const frameControl = (sequence: number) => {
    const data = Buffer.alloc(26)
    data.writeUInt32BE(sequence, 0)
    data.writeUInt32BE(4, 4)
    data.writeUInt32BE(4, 8)
    return pngChunk("fcTL", data)
  }
  const frameData = Buffer.concat([Buffer.from([0, 0, 0, 2]), rows])
  return new Uint8Array(Buffer.concat([
    pngSignature,
    ihdr(4, 4, 8, 6),
    pngChunk("acTL", Buffer.from([0, 0, 0, 2, 0, 0, 0, 0])),
    frameControl(0),
    pngChunk("IDAT", rows),
    frameControl(1),
    pngChunk("fdAT", frameData),
    pngChunk("IEND")
  ]))
}

/** A PNG of `width` × `height` 8-bit grey pixels whose IDATs are `pixels` (as given, any bytes). */
const pngWithPixels = (width: number, height: number, pixels: Uint8Array, interlace = 0) =>
  new Uint8Array(Buffer.concat([pngSignature, ihdr(width, height, 8, 0, interlace), pngChunk("IDAT", pixels), pngChunk("IEND")]))

describe("whole images pass", () => {
  it.effect("every fixture, APNG, a 1-bit 8000 × 8000 PNG, interlaced PNGs of every small size", () =>
    Effect.gen(function*() {
      for (const [name, bytes] of valid) expect([name, yield* verdict(bytes)]).toEqual([name, Image.sniff(bytes)])
      expect(yield* verdict(apng())).toBe("image/png")
      expect(yield* verdict(png(8000, 8000))).toBe("image/png")
      // Adam7 passes with no column or no row have no filter bytes: every size up to 17 a side.
      for (let w = 1; w <= 17; w++) {
        for (let h = 1; h <= 17; h++) {
          const rows = [[0, 0, 8, 8], [4, 0, 8, 8], [0, 4, 4, 8], [2, 0, 4, 4], [0, 2, 2, 4], [1, 0, 2, 2], [0, 1, 1, 2]].flatMap(([x0, y0, dx, dy]) => {
            const cols = w > x0! ? Math.ceil((w - x0!) / dx!) : 0
            const count = h > y0! ? Math.ceil((h - y0!) / dy!) : 0
            return cols === 0 ? [] : Array.from({ length: count }, () => 1 + cols)
          })
          const raw = Buffer.alloc(rows.reduce((a, b) => a + b, 0))
          expect([w, h, yield* verdict(pngWithPixels(w, h, deflateSync(raw), 1))]).toEqual([w, h, "image/png"])
        }
      }
    }))

  it.effect("bytes after a format's end (a phone photo's second picture after the JPEG's EOI) are left as they are", () =>
    Effect.gen(function*() {
      for (const [name, bytes] of valid) expect([name, yield* verdict(new Uint8Array([...bytes, ...read("pixel.jpg")]))]).toEqual([name, Image.sniff(bytes)])
    }))
})

describe("cut, damaged or garbage images are refused unreadable, never thrown", () => {
  it.effect("each fixture cut at every length", () =>
    Effect.gen(function*() {
      for (const [name, bytes] of valid) {
        for (let end = 1; end < bytes.byteLength; end++) {
          const answer = yield* verdict(bytes.subarray(0, end))
          // Shorter than the magic bytes: not told as an image at all.
          const reason = end < 12 ? /^(unreadable|unsupported_type):/ : /^unreadable:/
          expect([name, end, reason.test(answer) || answer]).toEqual([name, end, true])
        }
      }
    }))

  it.effect("a PNG with any one byte after its signature changed (its CRCs and zlib stream see it)", () =>
    Effect.gen(function*() {
      for (const [name, bytes] of valid.filter(([name]) => name.endsWith(".png"))) {
        for (let at = 8; at < bytes.byteLength; at++) {
          const damaged = Uint8Array.from(bytes)
          damaged[at]! ^= 0x5a
          const answer = yield* verdict(damaged)
          expect([name, at, typeof answer === "string" && /^(unreadable|too_large):/.test(answer)]).toEqual([name, at, true])
        }
      }
    }))

  it.effect("a PNG whose chunks are whole but whose pixel stream is short, long, not zlib, or has a row without a filter type", () =>
    Effect.gen(function*() {
      const rows = (n: number, filter = 0) => Buffer.concat(Array.from({ length: n }, () => Buffer.from([filter, 1, 2, 3, 4])))
      expect(yield* verdict(pngWithPixels(4, 3, deflateSync(rows(3))))).toBe("image/png")
      expect(yield* verdict(pngWithPixels(4, 3, deflateSync(rows(2))))).toMatch(/^unreadable: .*short of the 15/)
      expect(yield* verdict(pngWithPixels(4, 3, deflateSync(rows(4))))).toMatch(/^unreadable: .*longer than the 15/)
      expect(yield* verdict(pngWithPixels(4, 3, deflateSync(rows(3)).subarray(0, 8)))).toMatch(/^unreadable: .*not a whole zlib stream/)
      expect(yield* verdict(pngWithPixels(4, 3, deflateSync(rows(3, 9))))).toMatch(/^unreadable: .*row filter 9/)
      expect(yield* verdict(pngWithPixels(4, 3, new Uint8Array(40)))).toMatch(/^unreadable: .*not a whole zlib stream/)
    }))

  it.effect("garbage after each format's header (2,000 seeded samples)", () =>
    Effect.gen(function*() {
      const headers: ReadonlyArray<[string, Uint8Array]> = [
        ["png", read("photo.png").subarray(0, 33)],
        ["jpeg", read("pixel.jpg").subarray(0, 20)],
        ["gif", read("pixel.gif").subarray(0, 13)],
        ["webp", read("valid/lossy.webp").subarray(0, 30)]
      ]
      const samples = fc.sample(fc.tuple(fc.constantFrom(...headers), fc.uint8Array({ minLength: 1, maxLength: 300 })), { numRuns: 2000, seed: 20261204 })
      for (const [[format, header], garbage] of samples) {
        const bytes = new Uint8Array([...header, ...garbage])
        const answer = yield* verdict(bytes)
        expect([format, typeof answer === "string" && answer.startsWith("unreadable:")]).toEqual([format, true])
      }
    }))

  it.effect("an extended WebP whose image is not of its canvas's size (libwebp refuses it)", () =>
    Effect.gen(function*() {
      const wider = Uint8Array.from(read("valid/alpha.webp"))
      wider[24]! += 1
      expect(yield* verdict(wider)).toMatch(/^unreadable: the WebP's image is 20×20 but its container says 21×20/)
    }))

  it.effect("a header whose size cannot be read is refused unreadable", () =>
    Effect.gen(function*() {
      expect(yield* verdict(read("photo.png").subarray(0, 20))).toMatch(/^unreadable: the image\/png header does not say/)
      const noFrame = new Uint8Array([0xff, 0xd8, 0xff, 0xd9])
      expect(yield* verdict(noFrame)).toMatch(/^unreadable:/)
      expect(Image.check({ data: noFrame })).toMatchObject({ _tag: "ImageRefused", reason: "unreadable" })
    }))
})

describe("a GIF's LZW data", () => {
  // The block structure of a GIF was walked, but not what its image data says: a frame whose codes
  // ended short of its pixels, or named an entry its table does not have, passed, and a decoder
  // refuses it (gifsicle: "missing 50 pixels of image data", "code out of range"; ImageMagick:
  // "corrupt image"; Pillow: "broken data stream") — an image the provider cannot read, sent again
  // with every later request. The codes are followed and their pixels counted, never made.
  const zeros = (n: number) => Array.from({ length: n }, () => 0)
  // Two colours: codes 0-3 are pixels, 4 clears the table, 5 ends the data, 6 is the first entry.
  const frame = (width: number, height: number, codes: ReadonlyArray<number>) => gif(width, height, lzwBytes(2, codes))

  it.effect("codes that give the frame's pixels pass: an end code or none, codes after the last pixel never read", () =>
    Effect.gen(function*() {
      expect(yield* verdict(frame(10, 10, [4, ...zeros(100), 5]))).toBe("image/gif")
      expect(yield* verdict(frame(10, 10, [4, ...zeros(100)]))).toBe("image/gif")
      expect(yield* verdict(frame(10, 10, [4, ...zeros(100), 0, 0, 31]))).toBe("image/gif")
      // Entries of the table: 0, then 6 (the entry being made: 0 0), then 7 (0 0 0) — six pixels.
      expect(yield* verdict(frame(3, 2, [4, 0, 6, 7, 5]))).toBe("image/gif")
      // Codes of 9 bits and more (the table grows past 256 entries, a clear resets it), and no clear at the start.
      expect(yield* verdict(gif(300, 300, lzwBytes(8, [...zeros(40000), 256, ...zeros(50000), 257]), 8))).toBe("image/gif")
    }))

  it.effect("codes that end short of the frame's pixels are refused: an early end code, or the data's end", () =>
    Effect.gen(function*() {
      const short = /^unreadable: the GIF's image data ends at 50 of the 100 pixels its frame says/
      expect(yield* verdict(frame(10, 10, [4, ...zeros(50), 5]))).toMatch(short)
      expect(yield* verdict(frame(10, 10, [4, ...zeros(50)]))).toMatch(short)
      expect(yield* verdict(frame(7, 1, [4, 0, 6, 7, 5]))).toMatch(/^unreadable: the GIF's image data ends at 6 of the 7 pixels/)
    }))

  it.effect("a code past the table is refused: past the entry being made, or an entry right after a clear", () =>
    Effect.gen(function*() {
      const past = /^unreadable: the GIF's image data has a code past its LZW table/
      expect(yield* verdict(frame(10, 10, [4, 0, 7, ...zeros(98), 5]))).toMatch(past)
      expect(yield* verdict(frame(10, 10, [4, 6, ...zeros(99), 5]))).toMatch(past)
      expect(yield* verdict(frame(10, 10, [4, 0, 0, 4, 6, ...zeros(98), 5]))).toMatch(past)
    }))

  it.effect("an animated GIF fixture whose frames' data is cut inside whole sub-blocks is refused, not only the file cut", () =>
    Effect.gen(function*() {
      // The same GIF with each frame's data cut to its first two bytes, in one sub-block: the block structure stays whole.
      const bytes = read("valid/animated.gif")
      const damaged: Array<number> = []
      let at = 0
      let touched = 0
      const copy = (to: number) => {
        while (at < to) damaged.push(bytes[at++]!)
      }
      // Walk the blocks: the header and colour table, then extensions and frames up to the trailer.
      const table = (packed: number) => packed & 0x80 ? 3 << ((packed & 0x07) + 1) : 0
      copy(13 + table(bytes[10]!))
      while (bytes[at] !== 0x3b) {
        if (bytes[at] === 0x21) {
          copy(at + 2)
          while (bytes[at] !== 0) copy(at + 1 + bytes[at]!)
          copy(at + 1)
        } else {
          copy(at + 10 + table(bytes[at + 9]!) + 1)
          damaged.push(2, bytes[at + 1]!, bytes[at + 2]!, 0)
          while (bytes[at] !== 0) at += 1 + bytes[at]!
          at++
          touched++
        }
      }
      copy(bytes.byteLength)
      expect(touched).toBeGreaterThan(1)
      expect(yield* verdict(bytes)).toBe("image/gif")
      expect(yield* verdict(new Uint8Array(damaged))).toMatch(/^unreadable: the GIF's image data ends at \d+ of the \d+ pixels/)
    }))
})

describe("a decompression bomb", () => {
  /** A zlib stream of `mebibytes` MiB of zeros in about a kilobyte per MiB: one sync-flushed piece repeated. */
  const zeros = (mebibytes: number) => {
    const piece = deflateRawSync(Buffer.alloc(1024 * 1024), { finishFlush: constants.Z_SYNC_FLUSH })
    const adler = Buffer.alloc(4)
    adler.writeUInt32BE((((mebibytes * 1024 * 1024) % 65521) << 16 | 1) >>> 0)
    return Buffer.concat([Buffer.from([0x78, 0x9c]), ...Array.from({ length: mebibytes }, () => piece), Buffer.from([0x03, 0x00]), adler])
  }

  it.effect("a 1 × 1 PNG whose pixels inflate to 4 GiB is refused at once, its pixels never held", () =>
    Effect.gen(function*() {
      const bomb = pngWithPixels(1, 1, zeros(4096))
      expect(bomb.byteLength).toBeLessThan(Image.maxImageBytes)
      expect(yield* verdict(bomb)).toMatch(/^unreadable: the PNG's pixel data is longer than the 2 bytes its header says/)
    }))

  it.effect("the stream of zeros itself is whole (so the refusal is the size, not a broken stream)", () =>
    Effect.gen(function*() {
      // 2 MiB of zeros as 1024 rows of 2048 bytes (a filter byte and 2047 pixels).
      expect(yield* verdict(pngWithPixels(2047, 1024, zeros(2)))).toBe("image/png")
    }))
})

/** Runs `body` with a count of the zlib streams opened meanwhile (each PNG's inflate opens one). */
const countingStreams = <A, E>(body: (streams: () => number) => Effect.Effect<A, E>) => countingInflates(({ streams }) => body(streams))

describe("an image whose pixels decode to more than an image may be (Image.maxDecodedBytes)", () => {
  const over = /^too_large: .* decode to \d+ bytes, over the 256000000 bytes an image's pixels may be$/

  it.effect("a 497 KB PNG saying 8000 × 8000 at 16 bits RGBA (512 MB of zeros) is refused too_large, never inflated", () =>
    countingStreams((streams) =>
      Effect.gen(function*() {
        const bomb = zeroPng(8000, 8000, 16, 6)
        expect(bomb.byteLength).toBeLessThan(600 * 1024)
        expect(yield* verdict(bomb)).toMatch(over)
        expect(yield* verdict(zeroPng(7000, 7000, 16, 2))).toMatch(over)
        expect(Image.check({ data: bomb })).toMatchObject({ _tag: "ImageRefused", reason: "too_large" })
        expect(streams()).toBe(0)
      })
    ))

  it.effect("deep images within it pass (16-bit grey at the side cap, 16-bit RGBA), as do the 16-bit fixtures", () =>
    Effect.gen(function*() {
      // 128 MB of pixels: within the bound (its cheap checks only; its inflate is the 8-bit RGBA one's, measured in docs/security.md).
      expect(Image.check({ data: zeroPng(8000, 8000, 16, 0) })).toBe("image/png")
      expect(yield* verdict(zeroPng(2000, 2000, 16, 6))).toBe("image/png")
      expect(yield* verdict(read("valid/rgb16.png"))).toBe("image/png")
      expect(yield* verdict(read("valid/gray16-adam7.png"))).toBe("image/png")
    }))

  it("a JPEG of 12-bit samples over it is refused by its frame header, before its structure is walked", () => {
    // SOI, then SOF1 (extended, 12-bit precision): 8000 × 8000, three components.
    const sof = [0xff, 0xc1, 0x00, 17, 12, 0x1f, 0x40, 0x1f, 0x40, 3, 1, 0x11, 0, 2, 0x11, 0, 3, 0x11, 0]
    const refused = Image.check({ data: new Uint8Array([0xff, 0xd8, ...sof, 0xff, 0xd9]) })
    expect(refused).toMatchObject({ _tag: "ImageRefused", reason: "too_large" })
    expect((refused as Image.ImageRefused).detail).toMatch(/^8000×8000 pixels at 48 bits a pixel decode to 384000000 bytes/)
  })

  it.effect("a GIF whose frame is larger than the side cap inside a small screen is refused too_large (its codes are whole)", () =>
    Effect.gen(function*() {
      // Codes of a two-colour frame: a root, then each next entry (one pixel longer) to the table's
      // 4096, then its last entry (4091 pixels) again until the frame's 81 million pixels are made.
      const growing = Array.from({ length: 4096 - 6 }, (_, i) => 6 + i)
      const made = 1 + growing.reduce((n, code) => n + code - 4, 0)
      const repeats = Math.ceil((9000 * 9000 - made) / 4091)
      const data = lzwBytes(2, [4, 0, ...growing, ...Array.from({ length: repeats }, () => 4095)])
      const frame = (side: number) => gif(side, side, data, 2, { width: 10, height: 10 })
      expect(data.byteLength).toBeLessThan(64 * 1024)
      expect(yield* verdict(frame(9000))).toMatch(/^too_large: the GIF's frame at byte 19 is 9000×9000 pixels, over the 8000 pixels a side an image may be$/)
    }))
})

describe("the pixel stream is inflated once per image", () => {
  // The CLI's --image and the server's body verify an image, then the engine verifies the same array
  // as it stores it: the inflate ran twice (seconds for an 8000 × 8000 PNG).
  // (Sizes no other test uses: a content inflated whole is remembered for the process, test/engine/imageDecodeCaps.test.ts.)
  it.effect("verify, then verifyAll of the same array, inflates once; another array of the same bytes too; other bytes are inflated", () =>
    countingStreams((streams) =>
      Effect.gen(function*() {
        const image = png(71, 73)
        yield* Image.verify({ data: image })
        yield* Image.verifyAll([{ data: image, mediaType: "image/png" }])
        expect(streams()).toBe(1)
        yield* Image.verify({ data: Uint8Array.from(image) })
        expect(streams()).toBe(1)
        yield* Image.verify({ data: png(73, 71) })
        expect(streams()).toBe(2)
        // A refusal is never remembered: the same damaged array is refused again.
        const damaged = pngWithPixels(4, 4, new Uint8Array(3))
        expect(Either.isLeft(yield* Effect.either(Image.verify({ data: damaged })))).toBe(true)
        expect(Either.isLeft(yield* Effect.either(Image.verify({ data: damaged })))).toBe(true)
        expect(streams()).toBe(4)
      })
    ))
})

describe("several images: every one is examined before any is inflated", () => {
  /** `effect`'s result, and how many zlib streams it opened. */
  const counting = <A, E>(effect: Effect.Effect<A, E>) =>
    countingStreams((streams) => Effect.map(Effect.either(effect), (result) => ({ result, streams: streams() })))
  const svg = new Uint8Array(readFileSync(join(fixtures, "evil.svg")))

  it.effect("verifyAll: a later image's cheap refusal comes before the earlier PNG's inflate", () =>
    Effect.gen(function*() {
      const { result, streams } = yield* counting(Image.verifyAll([{ data: png(64, 64) }, { data: svg }]))
      expect(Either.isLeft(result) && [result.left.reason, result.left.index]).toEqual(["unsupported_type", 1])
      expect(streams).toBe(0)
      // Both pass the cheap checks: both inflated, in order, the damaged one refused.
      const second = yield* counting(Image.verifyAll([{ data: png(67, 79) }, { data: pngWithPixels(4, 4, new Uint8Array(3)) }]))
      expect(Either.isLeft(second.result) && [second.result.left.reason, second.result.left.index]).toEqual(["unreadable", 1])
      expect(second.streams).toBe(2)
    }))

  it.effect("the server's body (TurnImages.decode): the same rule, each image's structure walked once", () =>
    Effect.gen(function*() {
      const wire = (data: Uint8Array) => ({ data: Buffer.from(data).toString("base64") })
      const { result, streams } = yield* counting(TurnImages.decode([wire(pngWithPixels(4, 4, new Uint8Array(3))), wire(svg)]))
      expect(Either.isLeft(result) && result.left.message).toMatch(/^Image #2 refused \[unsupported_type\]/)
      expect(streams).toBe(0)
      const damaged = yield* counting(TurnImages.decode([wire(png(8, 8)), wire(pngWithPixels(4, 4, new Uint8Array(3)))]))
      expect(Either.isLeft(damaged.result) && damaged.result.left.message).toMatch(/^Image #2 refused \[unreadable\]: the PNG's pixel data is not a whole zlib stream/)
      const whole = yield* counting(TurnImages.decode([wire(png(83, 89)), { ...wire(read("pixel.gif")), mediaType: "image/gif" }]))
      expect(Either.isRight(whole.result) && whole.result.right.map((i) => i.mediaType)).toEqual([undefined, "image/gif"])
      expect(whole.streams).toBe(1)
    }))
})

describe("crc32", () => {
  it("agrees with zlib's for every start and length (eight bytes a step, then the rest)", () => {
    const bytes = Uint8Array.from({ length: 300 }, (_, i) => (i * 131 + 7) & 0xff)
    for (let start = 0; start < 10; start++) {
      for (let end = start; end <= bytes.byteLength; end += 7) expect(crc32(bytes, start, end)).toBe(zlib.crc32(bytes.subarray(start, end)))
    }
  })
})
