/**
 * Whether an image's bytes are a whole file of its format, not only a header: a PNG, JPEG, GIF or
 * WebP with a valid header and a cut or garbage body is refused by the provider ("Could not process
 * image"), and an image of the transcript is sent again with every later request, so one such image
 * (a repository's file read by `read_file`, a truncated download) made every later request of its
 * session fail. No decoder: each format's structure is walked, bounded by the file's length (every
 * read is checked against it), a PNG's pixel stream is inflated and counted, never kept
 * (`pngPixels`), and a GIF frame's LZW codes are followed and their pixels counted (`lzwFrame`).
 *
 * @since 0.6.0
 */

/** How a PNG's inflated pixel stream must look: runs of `count` rows of `bytes` bytes each (a filter-type byte, then the row). */
export interface PngRows {
  readonly count: number
  readonly bytes: number
}

/** A PNG whose chunks are whole: its IDAT data (views of the file, in order) and the rows its header says they inflate to. */
export interface PngStream {
  readonly idat: ReadonlyArray<Uint8Array>
  readonly rows: ReadonlyArray<PngRows>
}

/**
 * A whole image: its frames and the pixels they decode to, each frame at its canvas's size (a
 * decoder showing an animation makes each frame a whole canvas: an APNG's IHDR size, a GIF's screen
 * or the frame when it is larger, an animated WebP's canvas), and a PNG's pixel stream still to
 * check (its default image's IDAT: an APNG's other frames are counted, never inflated).
 */
export interface Whole {
  readonly _tag: "Whole"
  readonly frames: number
  readonly pixels: number
  readonly stream?: PngStream | undefined
}

/** A frame larger than an image may be (a GIF's frame, whose size its file's header does not say). */
export interface TooLarge {
  readonly _tag: "TooLarge"
  readonly detail: string
}

/** Why the bytes are not a whole image (a sentence), a frame too large, or a whole image (its frames, and a PNG's pixel stream still to check). */
export type Structure = string | TooLarge | Whole

let crcTables: Uint32Array | undefined

/**
 * CRC-32 (ISO 3309, as PNG's chunks carry it) of `bytes[start, end)`. In JavaScript, as `zlib.crc32`
 * exists only from Node 20.15 and the domain imports nothing but effect; eight bytes a step (eight
 * tables of 256, "slicing by 8"), several times faster than a byte a step on a 5 MiB file.
 */
export const crc32 = (bytes: Uint8Array, start = 0, end = bytes.byteLength): number => {
  if (crcTables === undefined) {
    crcTables = new Uint32Array(8 * 256)
    for (let n = 0; n < 256; n++) {
      let c = n
      for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
      crcTables[n] = c >>> 0
    }
    // Table k: the CRC of a byte followed by k zero bytes.
    for (let k = 1; k < 8; k++) {
      for (let n = 0; n < 256; n++) {
        const previous = crcTables[(k - 1) * 256 + n]!
        crcTables[k * 256 + n] = (previous >>> 8) ^ crcTables[previous & 0xff]!
      }
    }
  }
  const t = crcTables
  let c = 0xffffffff
  let i = start
  for (; i + 8 <= end; i += 8) {
    c ^= bytes[i]! | (bytes[i + 1]! << 8) | (bytes[i + 2]! << 16) | (bytes[i + 3]! << 24)
    c = t[1792 + (c & 0xff)]! ^ t[1536 + ((c >>> 8) & 0xff)]! ^ t[1280 + ((c >>> 16) & 0xff)]! ^ t[1024 + (c >>> 24)]! ^
      t[768 + bytes[i + 4]!]! ^ t[512 + bytes[i + 5]!]! ^ t[256 + bytes[i + 6]!]! ^ t[bytes[i + 7]!]!
  }
  for (; i < end; i++) c = t[(c ^ bytes[i]!) & 0xff]! ^ (c >>> 8)
  return (c ^ 0xffffffff) >>> 0
}

const u16be = (b: Uint8Array, at: number) => (b[at]! << 8) | b[at + 1]!
const u32be = (b: Uint8Array, at: number) => ((b[at]! << 24) | (b[at + 1]! << 16) | (b[at + 2]! << 8) | b[at + 3]!) >>> 0
const u32le = (b: Uint8Array, at: number) => (b[at]! | (b[at + 1]! << 8) | (b[at + 2]! << 16) | (b[at + 3]! << 24)) >>> 0
const fourcc = (b: Uint8Array, at: number) => String.fromCharCode(b[at]!, b[at + 1]!, b[at + 2]!, b[at + 3]!)
const isLetter = (c: number) => (c >= 65 && c <= 90) || (c >= 97 && c <= 122)

// ---------------------------------------------------------------------------------------------
// PNG

/** The bit depths each colour type allows (PNG 11.2.2). */
const pngDepths: Record<number, ReadonlyArray<number>> = { 0: [1, 2, 4, 8, 16], 2: [8, 16], 3: [1, 2, 4, 8], 4: [8, 16], 6: [8, 16] }
/** The channels of each colour type (grey, RGB, palette, grey + alpha, RGBA). */
export const pngChannels: Record<number, number> = { 0: 1, 2: 3, 3: 1, 4: 2, 6: 4 }
/** Adam7's passes: first column, first row, column step, row step. */
const adam7 = [[0, 0, 8, 8], [4, 0, 8, 8], [0, 4, 4, 8], [2, 0, 4, 4], [0, 2, 2, 4], [1, 0, 2, 2], [0, 1, 1, 2]] as const

/** The rows a PNG's pixel stream holds: one run, or one per non-empty Adam7 pass (a pass with no column or no row has no rows, not even filter bytes). */
export const pngRows = (width: number, height: number, bitsPerPixel: number, interlaced: boolean): ReadonlyArray<PngRows> => {
  const rowBytes = (columns: number) => 1 + Math.ceil((columns * bitsPerPixel) / 8)
  if (!interlaced) return [{ count: height, bytes: rowBytes(width) }]
  return adam7.flatMap(([x0, y0, dx, dy]) => {
    const columns = width > x0 ? Math.ceil((width - x0) / dx) : 0
    const rows = height > y0 ? Math.ceil((height - y0) / dy) : 0
    return columns === 0 || rows === 0 ? [] : [{ count: rows, bytes: rowBytes(columns) }]
  })
}

const png = (b: Uint8Array): Structure => {
  const length = b.byteLength
  const idat: Array<Uint8Array> = []
  let at = 8
  let header: { width: number; height: number; depth: number; colour: number; interlaced: boolean } | undefined
  let palette = false
  let idatEnded = false
  // An APNG's frames: as many as its acTL says, and at least as many as it has fcTL chunks.
  let declaredFrames = 0
  let frameControls = 0
  while (true) {
    if (at + 12 > length) return "the PNG is cut short (no IEND chunk)"
    const size = u32be(b, at)
    if (size > 0x7fffffff) return `the PNG's chunk at byte ${at} says ${size} bytes (over 2^31 - 1)`
    if (![4, 5, 6, 7].every((i) => isLetter(b[at + i]!))) return `the PNG has no chunk type at byte ${at + 4}`
    const type = fourcc(b, at + 4)
    const data = at + 8
    const end = data + size
    if (end + 4 > length) return `the PNG is cut short (its ${type} chunk at byte ${at} ends past the file)`
    if (crc32(b, at + 4, end) !== u32be(b, end)) return `the PNG's ${type} chunk at byte ${at} fails its CRC (the file is damaged)`
    if (header === undefined) {
      if (type !== "IHDR" || size !== 13) return "the PNG does not begin with its IHDR chunk"
      const depth = b[data + 8]!, colour = b[data + 9]!
      if (!(pngDepths[colour] ?? []).includes(depth)) return `the PNG's IHDR says colour type ${colour} at ${depth} bits, which PNG does not allow`
      if (b[data + 10] !== 0 || b[data + 11] !== 0 || b[data + 12]! > 1) return "the PNG's IHDR names an unknown compression, filter or interlace method"
      header = { width: u32be(b, data), height: u32be(b, data + 4), depth, colour, interlaced: b[data + 12] === 1 }
      if (header.width === 0 || header.height === 0 || header.width > 0x7fffffff || header.height > 0x7fffffff) return "the PNG's IHDR says a size of no pixels"
    } else if (type === "IHDR") {
      return "the PNG has a second IHDR chunk"
    } else if (type === "IDAT") {
      if (idatEnded) return "the PNG's IDAT chunks are not consecutive"
      if (header.colour === 3 && !palette) return "the PNG's palette image has no PLTE chunk before its pixels"
      idat.push(b.subarray(data, end))
    } else {
      if (idat.length > 0) idatEnded = true
      if (type === "IEND") break
      if (type === "PLTE") {
        if (size === 0 || size % 3 !== 0 || size > 768 || idat.length > 0) return "the PNG's PLTE chunk is malformed"
        palette = true
      } else if (type === "acTL" && size >= 4) {
        declaredFrames = u32be(b, data)
      } else if (type === "fcTL") {
        frameControls++
      } else if ((b[at + 4]! & 0x20) === 0) {
        // A critical chunk (its type's first letter is upper case) no decoder knows: it must refuse the image (Apple's CgBI).
        return `the PNG has an unknown critical chunk ${type}`
      }
    }
    at = end + 4
  }
  if (idat.length === 0) return "the PNG has no pixel data (no IDAT chunk)"
  // Bytes after IEND are never read by a decoder: left as they are.
  const frames = Math.max(1, declaredFrames, frameControls)
  return {
    _tag: "Whole",
    frames,
    pixels: frames * header!.width * header!.height,
    stream: { idat, rows: pngRows(header!.width, header!.height, pngChannels[header!.colour]! * header!.depth, header!.interlaced) }
  }
}

/** The bytes a PNG's pixel stream must inflate to. */
export const pngPixelBytes = (rows: ReadonlyArray<PngRows>): number => rows.reduce((sum, run) => sum + run.count * run.bytes, 0)

/**
 * Follows a PNG's inflated pixel stream piece by piece, as it comes: each row must begin with a
 * filter type (0–4), and the stream must be exactly as long as the header says. `push` answers a
 * reason as soon as one is known (past the expected length: a decompression bomb is stopped there);
 * `end` when the stream ended.
 */
export const pngRowChecker = (rows: ReadonlyArray<PngRows>) => {
  const expected = pngPixelBytes(rows)
  let seen = 0
  let run = 0
  let rowsLeft = rows[0]?.count ?? 0
  let inRow = 0
  return {
    push: (piece: Uint8Array): string | undefined => {
      if (seen + piece.byteLength > expected) return `the PNG's pixel data is longer than the ${expected} bytes its header says`
      seen += piece.byteLength
      let i = 0
      while (i < piece.byteLength) {
        const bytes = rows[run]!.bytes
        if (inRow === 0 && piece[i]! > 4) return `the PNG's pixel data has an unknown row filter ${piece[i]} (the file is damaged)`
        const step = Math.min(bytes - inRow, piece.byteLength - i)
        i += step
        inRow += step
        if (inRow === bytes) {
          inRow = 0
          if (--rowsLeft === 0 && run + 1 < rows.length) rowsLeft = rows[++run]!.count
        }
      }
      return undefined
    },
    end: (): string | undefined => seen < expected ? `the PNG's pixel data is ${seen} bytes, short of the ${expected} its header says (cut short or damaged)` : undefined
  }
}

// ---------------------------------------------------------------------------------------------
// JPEG

/** Start-of-frame markers: C0–CF but DHT (C4), JPG (C8) and DAC (CC). */
const isFrame = (m: number) => m >= 0xc0 && m <= 0xcf && m !== 0xc4 && m !== 0xc8 && m !== 0xcc
/** Lossless frames (SOF3, 7, 11, 15) use no quantization tables. */
const isLossless = (m: number) => (m & 0x03) === 3

/** Whether a DHT segment's tables fill it exactly, each of a known class and slot. */
const huffmanTables = (b: Uint8Array, from: number, to: number): boolean => {
  let at = from
  while (at < to) {
    if (at + 17 > to || b[at]! >> 4 > 1 || (b[at]! & 0x0f) > 3) return false
    let symbols = 0
    for (let i = 1; i <= 16; i++) symbols += b[at + i]!
    if (symbols > 256) return false
    at += 17 + symbols
  }
  return at === to
}

/** The quantization tables a DQT segment defines (their slots), or undefined when they do not fill it exactly. */
const quantizationTables = (b: Uint8Array, from: number, to: number): ReadonlyArray<number> | undefined => {
  const slots: Array<number> = []
  let at = from
  while (at < to) {
    const precision = b[at]! >> 4, slot = b[at]! & 0x0f
    if (precision > 1 || slot > 3) return undefined
    slots.push(slot)
    at += 1 + 64 * (precision + 1)
  }
  return at === to ? slots : undefined
}

const jpeg = (b: Uint8Array): Structure => {
  const length = b.byteLength
  let frame: { readonly marker: number; readonly components: ReadonlyArray<{ id: number; table: number }>; readonly pixels: number } | undefined
  const tables = new Set<number>()
  let scans = 0
  let at = 2
  while (true) {
    if (at >= length) return "the JPEG is cut short (no end-of-image marker)"
    if (b[at] !== 0xff) return `the JPEG has no marker at byte ${at} (the file is damaged)`
    // Fill bytes (0xFF) may precede a marker.
    while (at < length && b[at] === 0xff) at++
    if (at >= length) return "the JPEG is cut short (no end-of-image marker)"
    const marker = b[at++]!
    if (marker === 0xd9) {
      if (frame === undefined || scans === 0) return "the JPEG ends before any image data"
      // A decoder stops here: what follows (a phone's second picture, its depth map, a video) is never read.
      return { _tag: "Whole", frames: 1, pixels: frame.pixels }
    }
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) continue
    if (marker === 0xd8 || marker === 0x00 || (marker >= 0x02 && marker <= 0xbf) || (marker >= 0xf0 && marker <= 0xfd)) {
      return `the JPEG has an unexpected marker FF${marker.toString(16).toUpperCase().padStart(2, "0")} at byte ${at - 2}`
    }
    if (at + 2 > length) return "the JPEG is cut short (no end-of-image marker)"
    const size = u16be(b, at)
    const from = at + 2, to = at + size
    if (size < 2) return `the JPEG's segment at byte ${at - 2} has a length of ${size}`
    if (to > length) return "the JPEG is cut short (a segment ends past the file)"
    if (isFrame(marker)) {
      if (frame !== undefined) return "the JPEG has a second frame header"
      const count = b[from + 5] ?? 0
      if (size < 8 || count === 0 || size !== 8 + 3 * count) return "the JPEG's frame header is malformed"
      if (u16be(b, from + 3) === 0) return "the JPEG's frame header says a width of 0"
      const components = Array.from({ length: count }, (_, i) => ({ id: b[from + 6 + 3 * i]!, sampling: b[from + 7 + 3 * i]!, table: b[from + 8 + 3 * i]! }))
      const sampling = (s: number) => s >> 4 >= 1 && s >> 4 <= 4 && (s & 0x0f) >= 1 && (s & 0x0f) <= 4
      if (!components.every((c) => sampling(c.sampling) && c.table <= 3)) return "the JPEG's frame header is malformed"
      frame = { marker, components, pixels: u16be(b, from + 1) * u16be(b, from + 3) }
    } else if (marker === 0xc4) {
      if (!huffmanTables(b, from, to)) return "the JPEG's Huffman table segment is malformed"
    } else if (marker === 0xdb) {
      const slots = quantizationTables(b, from, to)
      if (slots === undefined) return "the JPEG's quantization table segment is malformed"
      for (const slot of slots) tables.add(slot)
    } else if (marker === 0xdd || marker === 0xdc) {
      if (size !== 4) return "the JPEG's restart interval or line count segment is malformed"
    } else if (marker === 0xda) {
      if (frame === undefined) return "the JPEG's image data comes before its frame header"
      const count = b[from]!
      if (count < 1 || count > 4 || size !== 6 + 2 * count) return "the JPEG's scan header is malformed"
      const ids = new Set(frame.components.map((c) => c.id))
      for (let i = 0; i < count; i++) if (!ids.has(b[from + 1 + 2 * i]!)) return "the JPEG's scan names a component its frame has not"
      if (scans === 0 && !isLossless(frame.marker) && !frame.components.every((c) => tables.has(c.table))) {
        return "the JPEG's image data uses a quantization table it never defines"
      }
      scans++
      // The entropy-coded data: to the first 0xFF that is not a stuffed 0x00, a restart marker or fill.
      let i = to
      while (true) {
        const ff = b.indexOf(0xff, i)
        if (ff < 0 || ff + 1 >= length) return "the JPEG is cut short (its image data has no end-of-image marker)"
        const next = b[ff + 1]!
        if (next === 0x00 || (next >= 0xd0 && next <= 0xd7)) i = ff + 2
        else if (next === 0xff) i = ff + 1
        else {
          at = ff
          break
        }
      }
      continue
    }
    // APPn, COM, DAC, DHP, EXP: skipped by their length.
    at = to
  }
}

// ---------------------------------------------------------------------------------------------
// GIF

/** The most entries an LZW table holds: codes are at most 12 bits. */
const lzwTableSize = 4096

/**
 * Follows a frame's LZW data — the data sub-blocks from `from` (its first size byte) — counting the
 * pixels its codes stand for, never making them: each table entry is kept as its length only, so the
 * work is one step a code, whatever the pixels come to. The data must give the frame's `pixels`: a
 * code past the table (a decoder refuses it: "broken data stream") or data that ends before the
 * frame's pixels are whole (cut short, or an end code too early) is a reason. What follows the
 * frame's last pixel (an end code, or none; codes a decoder never reads) is left as it is. Answers
 * the end of the sub-blocks, or -1 when the file ends inside them.
 */
const lzwFrame = (b: Uint8Array, from: number, minimumSize: number, pixels: number): number | string => {
  const length = b.byteLength
  const clear = 1 << minimumSize
  const end = clear + 1
  const lengths = new Uint16Array(lzwTableSize)
  let next = end + 1
  let size = minimumSize + 1
  let previous = -1
  let made = 0
  // The bits not yet read (LSB first), and the sub-block they are read from.
  let bits = 0
  let held = 0
  let at = from
  let left = 0
  while (made < pixels) {
    while (held < size) {
      if (left === 0) {
        if (at >= length) return -1
        left = b[at++]!
        if (left === 0) return gifShort(made, pixels)
      }
      if (at >= length) return -1
      bits |= b[at++]! << held
      held += 8
      left--
    }
    const code = bits & ((1 << size) - 1)
    bits >>>= size
    held -= size
    if (code === clear) {
      next = end + 1
      size = minimumSize + 1
      previous = -1
      continue
    }
    if (code === end) return gifShort(made, pixels)
    if (previous < 0) {
      // After a clear (or at the start) only a root code: there is no entry yet.
      if (code > clear) return gifPast
      made += 1
    } else {
      // A code not yet in the table but the next one: the entry being made (the previous code's string and its first pixel).
      if (code > next || (code === next && next >= lzwTableSize)) return gifPast
      const entry = (previous < clear ? 1 : lengths[previous]!) + 1
      made += code === next ? entry : code < clear ? 1 : lengths[code]!
      if (next < lzwTableSize) {
        lengths[next] = entry
        next++
        if (next === 1 << size && size < 12) size++
      }
    }
    previous = code
  }
  // What follows the frame's last pixel, a decoder never reads: the sub-blocks are skipped.
  return subBlocksEnd(b, at + left)
}

/** The end of a run of data sub-blocks whose next size byte is at `from`, or -1 when the file ends inside it. */
const subBlocksEnd = (b: Uint8Array, from: number): number => {
  let at = from
  while (at < b.byteLength) {
    const size = b[at]!
    at += 1 + size
    if (size === 0) return at
  }
  return -1
}

const gifShort = (made: number, pixels: number) => `the GIF's image data ends at ${made} of the ${pixels} pixels its frame says (cut short or damaged)`
const gifPast = "the GIF's image data has a code past its LZW table (damaged)"

/**
 * `maxSide`: the most pixels a frame may have on a side. The file's header says the logical screen's
 * size, which the side cap checks; a frame's own size is its image descriptor's, up to 65535 × 65535,
 * and decoders that show a frame larger than the screen make the image that large (Pillow, Firefox):
 * a frame whose codes stand for 4 billion pixels fits in 1.5 MB of codes, 4096 pixels a code.
 */
const gif = (b: Uint8Array, maxSide: number): Structure => {
  const length = b.byteLength
  const cut = "the GIF is cut short (no trailer)"
  if (length < 13) return cut
  const colourTable = (packed: number) => packed & 0x80 ? 3 << ((packed & 0x07) + 1) : 0
  const screen = { width: b[6]! | (b[7]! << 8), height: b[8]! | (b[9]! << 8) }
  let at = 13 + colourTable(b[10]!)
  let images = 0
  let canvases = 0
  while (true) {
    if (at >= length) return cut
    const block = b[at]!
    if (block === 0x3b) return images === 0 ? "the GIF has no image" : { _tag: "Whole", frames: images, pixels: canvases }
    if (block === 0x21) {
      if (at + 2 > length) return cut
      at = subBlocksEnd(b, at + 2)
    } else if (block === 0x2c) {
      if (at + 10 > length) return cut
      const width = b[at + 5]! | (b[at + 6]! << 8), height = b[at + 7]! | (b[at + 8]! << 8)
      if (width > maxSide || height > maxSide) {
        return { _tag: "TooLarge", detail: `the GIF's frame at byte ${at} is ${width}×${height} pixels, over the ${maxSide} pixels a side an image may be` }
      }
      const pixels = width * height
      // Each frame decodes to the screen, or to itself when larger (decoders that show it make the image that large).
      canvases += Math.max(width, screen.width) * Math.max(height, screen.height)
      at += 10 + colourTable(b[at + 9]!)
      if (at >= length) return cut
      // LZW codes are at most 12 bits: a minimum code size over 11 cannot be decoded.
      if (b[at]! > 11) return `the GIF's image data says an LZW code size of ${b[at]}`
      const ended = lzwFrame(b, at + 1, b[at]!, pixels)
      if (typeof ended === "string") return ended
      at = ended
      images++
    } else {
      return `the GIF has an unknown block 0x${block.toString(16)} at byte ${at}`
    }
    if (at < 0) return cut
  }
}

// ---------------------------------------------------------------------------------------------
// WebP

interface Chunk {
  readonly type: string
  readonly from: number
  readonly to: number
}

/** The RIFF chunks of `b[from, to)`, each within it, or a reason they are not. */
const riffChunks = (b: Uint8Array, from: number, to: number): ReadonlyArray<Chunk> | string => {
  const chunks: Array<Chunk> = []
  let at = from
  while (at < to) {
    if (at + 8 > to) return "the WebP is cut short inside a chunk header"
    const size = u32le(b, at + 4)
    const end = at + 8 + size
    if (end > to) return `the WebP's ${fourcc(b, at)} chunk ends past its container (cut short)`
    chunks.push({ type: fourcc(b, at), from: at + 8, to: end })
    // Chunks are padded to an even size; the last one's pad may be left out of the RIFF size.
    at = end + (size & 1)
  }
  return chunks
}

/** Why a VP8 (lossy) or VP8L (lossless) bitstream's header is not one, or undefined. */
const bitstream = (b: Uint8Array, chunk: Chunk): string | undefined => {
  const size = chunk.to - chunk.from
  if (chunk.type === "VP8 ") {
    if (size < 10) return "the WebP's VP8 data is cut short"
    const tag = b[chunk.from]! | (b[chunk.from + 1]! << 8) | (b[chunk.from + 2]! << 16)
    if ((tag & 1) !== 0) return "the WebP's VP8 data is not a key frame"
    if (((tag >> 1) & 7) > 3) return "the WebP's VP8 data has an unknown version"
    if (tag >>> 5 > size - 10) return "the WebP's VP8 data is cut short (its first partition ends past it)"
    if (b[chunk.from + 3] !== 0x9d || b[chunk.from + 4] !== 0x01 || b[chunk.from + 5] !== 0x2a) return "the WebP's VP8 data has no start code"
    if ((((b[chunk.from + 6]! | (b[chunk.from + 7]! << 8)) & 0x3fff) === 0) || (((b[chunk.from + 8]! | (b[chunk.from + 9]! << 8)) & 0x3fff) === 0)) {
      return "the WebP's VP8 data says a size of no pixels"
    }
    return undefined
  }
  if (chunk.type === "VP8L") {
    if (size < 5) return "the WebP's VP8L data is cut short"
    if (b[chunk.from] !== 0x2f) return "the WebP's VP8L data has no signature"
    if (b[chunk.from + 4]! >> 5 !== 0) return "the WebP's VP8L data has an unknown version"
    return undefined
  }
  return `the WebP has no image data (a ${chunk.type.trim()} chunk where VP8 or VP8L was expected)`
}

const u24le = (b: Uint8Array, at: number) => b[at]! | (b[at + 1]! << 8) | (b[at + 2]! << 16)

/** The size a VP8 or VP8L bitstream says (its header already checked by `bitstream`). */
const bitstreamSize = (b: Uint8Array, chunk: Chunk): { readonly width: number; readonly height: number } => {
  if (chunk.type === "VP8 ") return { width: (b[chunk.from + 6]! | (b[chunk.from + 7]! << 8)) & 0x3fff, height: (b[chunk.from + 8]! | (b[chunk.from + 9]! << 8)) & 0x3fff }
  const bits = u32le(b, chunk.from + 1)
  return { width: (bits & 0x3fff) + 1, height: ((bits >>> 14) & 0x3fff) + 1 }
}

/**
 * A frame's or still image's chunks: an optional ALPH (lossy with alpha), then its bitstream, which
 * must be of the size the container says (the canvas of an extended still, a frame's own): libwebp
 * refuses a file whose sizes disagree.
 */
const imageData = (b: Uint8Array, chunks: ReadonlyArray<Chunk>, size?: { readonly width: number; readonly height: number }): string | undefined => {
  const image = chunks.find((c) => c.type === "VP8 " || c.type === "VP8L")
  if (image === undefined) return "the WebP has no image data (no VP8 or VP8L chunk)"
  const why = bitstream(b, image)
  if (why !== undefined || size === undefined) return why
  const own = bitstreamSize(b, image)
  return own.width === size.width && own.height === size.height ? undefined : `the WebP's image is ${own.width}×${own.height} but its container says ${size.width}×${size.height}`
}

const webp = (b: Uint8Array): Structure => {
  const length = b.byteLength
  if (length < 12) return "the WebP is cut short"
  const end = 8 + u32le(b, 4)
  if (end > length) return `the WebP is cut short (its RIFF header says ${end} bytes, the file has ${length})`
  // Bytes after the RIFF's end are never read by a decoder: left as they are.
  const chunks = riffChunks(b, 12, end)
  if (typeof chunks === "string") return chunks
  const first = chunks[0]
  if (first === undefined) return "the WebP has no chunks"
  if (first.type !== "VP8X") {
    const why = bitstream(b, first)
    if (why !== undefined) return why
    const size = bitstreamSize(b, first)
    return { _tag: "Whole", frames: 1, pixels: size.width * size.height }
  }
  if (first.to - first.from < 10) return "the WebP's VP8X chunk is cut short"
  const rest = chunks.slice(1)
  const canvas = { width: u24le(b, first.from + 4) + 1, height: u24le(b, first.from + 7) + 1 }
  if ((b[first.from]! & 0x02) === 0) return imageData(b, rest, canvas) ?? { _tag: "Whole", frames: 1, pixels: canvas.width * canvas.height }
  // Animated: an ANIM chunk, then frames (ANMF), each a 16-byte header and its image's chunks.
  if (!rest.some((c) => c.type === "ANIM")) return "the animated WebP has no ANIM chunk"
  const frames = rest.filter((c) => c.type === "ANMF")
  if (frames.length === 0) return "the animated WebP has no frames"
  for (const frame of frames) {
    if (frame.to - frame.from < 16) return "the WebP's animation frame is cut short"
    const inner = riffChunks(b, frame.from + 16, frame.to)
    if (typeof inner === "string") return inner
    // Its offset (in pairs of pixels) and size, which must lie within the canvas.
    const x = 2 * u24le(b, frame.from), y = 2 * u24le(b, frame.from + 3)
    const size = { width: u24le(b, frame.from + 6) + 1, height: u24le(b, frame.from + 9) + 1 }
    if (x + size.width > canvas.width || y + size.height > canvas.height) return "the WebP's animation frame lies outside its canvas"
    const why = imageData(b, inner, size)
    if (why !== undefined) return why
  }
  return { _tag: "Whole", frames: frames.length, pixels: frames.length * canvas.width * canvas.height }
}

/**
 * Walks the structure of bytes of a known media type (told by their magic bytes); `maxSide`: the
 * most pixels a GIF's frame may have on a side. Every read is bounded by the file's length, and
 * the work by its bytes (a PNG's pixel stream is left to inflate: `Whole.stream`).
 */
export const structure = (bytes: Uint8Array, mediaType: "image/png" | "image/jpeg" | "image/gif" | "image/webp", maxSide = Number.POSITIVE_INFINITY): Structure => {
  switch (mediaType) {
    case "image/png":
      return png(bytes)
    case "image/jpeg":
      return jpeg(bytes)
    case "image/gif":
      return gif(bytes, maxSide)
    case "image/webp":
      return webp(bytes)
  }
}
