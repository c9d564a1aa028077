/**
 * A repository's own `.git/index`, read for its gitlinks before an allowed git line runs (`Gitlinks`,
 * round 19), is the repository's to shape. A version 4 index whose every entry keeps the previous
 * name and adds one byte made each name a fresh copy of the one before: quadratic in the index, all
 * on the main thread — a 20 MB index held the event loop (every session, the server) for a minute,
 * 58 MB for over ten. Names are now rebuilt in place (linear), and an index with more gitlinks than are
 * followed says so instead of following a hundred thousand of them.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import * as Gitlinks from "../../src/layers/workspace/Gitlinks.js"

const dir = mkdtempSync(join(tmpdir(), "gitlinks-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

interface Entry {
  readonly mode: number
  /** Bytes of the previous name dropped; all of it when not given. */
  readonly strip?: number
  readonly suffix: string
}

/** A version 4 index of `entries` (SHA-1 names): each entry's name is the previous one less `strip` bytes, plus `suffix`. */
const indexV4 = (entries: ReadonlyArray<Entry>): Buffer => {
  const header = Buffer.alloc(12)
  header.write("DIRC", 0, "latin1")
  header.writeUInt32BE(4, 4)
  header.writeUInt32BE(entries.length, 8)
  const parts: Array<Buffer> = [header]
  let previous = 0
  for (const { mode, strip = previous, suffix } of entries) {
    const varint: Array<number> = []
    // git's offset varint: 7 bits a byte, most significant first, each continuation adding one.
    let value = strip
    varint.unshift(value & 0x7f)
    while ((value >>= 7) > 0) varint.unshift(0x80 | (--value & 0x7f))
    const name = Buffer.from(suffix, "utf8")
    previous = previous - strip + name.length
    const entry = Buffer.alloc(62 + varint.length + name.length + 1)
    entry.writeUInt32BE(mode, 24)
    entry.writeUInt16BE(Math.min(name.length, 0xfff), 60)
    Buffer.from(varint).copy(entry, 62)
    name.copy(entry, 62 + varint.length)
    parts.push(entry)
  }
  return Buffer.concat(parts)
}

const file = 0o100644
const gitlink = 0o160000

describe("a hostile version 4 index", () => {
  it("is read in time linear in its size: names that each keep the one before and add a byte", async () => {
    // 600,000 entries (39 MB): before, about 600,000² / 2 bytes copied (93 s for 400,000 at load 3, so minutes here,
    // past the limit); now one pass, well under a second. A gitlink last, whose name is the whole run of 600,000 `a`s
    // less what it strips, checks the names are still rebuilt right.
    const entries: Array<Entry> = Array.from({ length: 600_000 }, () => ({ mode: file, strip: 0, suffix: "a" }))
    entries.push({ mode: gitlink, strip: 599_998, suffix: "/sub" })
    const path = join(dir, "long-names")
    writeFileSync(path, indexV4(entries))
    const links = await Gitlinks.gitlinksOf(path)
    expect(links).toEqual({ paths: ["aa/sub"], unread: false })
  }, 60_000)

  it("prefix-compressed names are rebuilt as git writes them", async () => {
    const path = join(dir, "names")
    writeFileSync(path, indexV4([
      { mode: file, strip: 0, suffix: "lib/a.ts" },
      { mode: gitlink, strip: 4, suffix: "vendor/x" },
      { mode: gitlink, strip: 1, suffix: "y" },
      { mode: file, strip: 0, suffix: "/z.ts" },
      { mode: gitlink, suffix: "top" }
    ]))
    expect(await Gitlinks.gitlinksOf(path)).toEqual({ paths: ["lib/vendor/x", "lib/vendor/y", "top"], unread: false })
  })

  it("more gitlinks than are followed: the index says it was not read whole, rather than a walk of each", async () => {
    const path = join(dir, "many-links")
    writeFileSync(path, indexV4(Array.from({ length: Gitlinks.maxGitlinks + 1 }, (_, i) => ({ mode: gitlink, suffix: `m/${i}` }))))
    const links = await Gitlinks.gitlinksOf(path)
    expect(links.unread).toBe(true)
    expect(links.paths.length).toBeLessThanOrEqual(Gitlinks.maxGitlinks)
  })
})
