import { createHash } from "node:crypto"
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Effect from "effect/Effect"
import { afterEach, describe, expect, it } from "vitest"
import * as Blob from "../../src/domain/Blob.js"
import * as FileBlobStore from "../../src/layers/blobs/FileBlobStore.js"

/**
 * A data dir that came with a repository can hold a file of any size under a blob's name. The store
 * looks at its size first: it never reads one larger than any blob (made here as a sparse file: no
 * bytes on disk, `ftruncate`).
 */
const dirs: Array<string> = []
afterEach(() => { for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true }) })

const hugeFileAt = (hash: string) => {
  const dataDir = mkdtempSync(join(tmpdir(), "blob-huge-"))
  dirs.push(dataDir)
  mkdirSync(join(dataDir, "blobs", hash.slice(0, 2)), { recursive: true })
  const file = join(dataDir, "blobs", hash.slice(0, 2), hash)
  writeFileSync(file, "")
  truncateSync(file, Blob.maxBytes + 64 * 1024 * 1024)
  return { dataDir, file }
}
const rss = () => process.memoryUsage().rss
/** The most memory the process held while `run` ran (sampled between its reads: a whole read shows). */
const peakWhile = async <A>(run: () => Promise<A>): Promise<{ result: A; grew: number }> => {
  const before = rss()
  let top = before
  const timer = setInterval(() => { top = Math.max(top, rss()) }, 5)
  try {
    const result = await run()
    return { result, grew: Math.max(top, rss()) - before }
  } finally {
    clearInterval(timer)
  }
}

describe("FileBlobStore and a file larger than any blob under a blob's name", () => {
  it("get refuses it unread, typed (corrupt, its size said)", async () => {
    const hash = "ab".padEnd(64, "0")
    const { dataDir } = hugeFileAt(hash)
    const { grew, result: read } = await peakWhile(() => Effect.runPromise(Effect.either(FileBlobStore.make({ dataDir }).get(hash))))
    expect(grew).toBeLessThan(100 * 1024 * 1024)
    expect(read._tag).toBe("Left")
    expect(read._tag === "Left" && read.left).toMatchObject({ _tag: "BlobFailure", reason: "corrupt", detail: expect.stringContaining("more than any blob") })
  })

  it("put does not read it (its size is not the blob's) and replaces it with the blob", async () => {
    const bytes = new TextEncoder().encode("the real blob")
    const hash = createHash("sha256").update(bytes).digest("hex")
    const { dataDir, file } = hugeFileAt(hash)
    const { grew, result: put } = await peakWhile(() => Effect.runPromise(FileBlobStore.make({ dataDir }).put(bytes)))
    expect(grew).toBeLessThan(100 * 1024 * 1024)
    expect(put).toBe(hash)
    expect(statSync(file).size).toBe(bytes.byteLength)
    expect(readFileSync(file, "utf8")).toBe("the real blob")
  })
})
