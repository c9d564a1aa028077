/**
 * The JSONL store's blob area in a data dir that came with a repository: a folder of it planted as
 * a link (`blobs/ab -> ~/.ssh`) must not take the user's blobs where it points, and a blob that is
 * a named pipe or a link (to a pipe, `/dev/zero`, `/dev/tty`) is never read.
 */
import { execFileSync } from "node:child_process"
import { createHash } from "node:crypto"
import { closeSync, constants, lstatSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, symlinkSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as FileBlobStore from "../../src/layers/blobs/FileBlobStore.js"

describe("the file blob area", () => {
  it.effect("a blob folder that is a link is not written through", () =>
    Effect.gen(function*() {
      const root = join(tmpdir(), `effect-agent-bloblinks-${process.pid}`)
      const dataDir = join(root, "data")
      const outside = join(root, "outside")
      mkdirSync(join(dataDir, "blobs"), { recursive: true })
      mkdirSync(outside)
      const bytes = new TextEncoder().encode("an image the user attached")
      const hash = createHash("sha256").update(bytes).digest("hex")
      symlinkSync(outside, join(dataDir, "blobs", hash.slice(0, 2)))
      const store = FileBlobStore.make({ dataDir })
      const put = yield* Effect.either(store.put(bytes))
      expect(put._tag).toBe("Left")
      expect(readdirSync(outside)).toEqual([])
    }).pipe(Effect.ensuring(Effect.sync(() => rmSync(join(tmpdir(), `effect-agent-bloblinks-${process.pid}`), { recursive: true, force: true })))))

  it.effect("a blob that is a named pipe, or a link to one, fails its read at once (it held a thread of libuv's pool in open(2) for good); a put of its bytes replaces it", () => {
    const root = join(tmpdir(), `effect-agent-blobpipes-${process.pid}`)
    const pipes: Array<string> = []
    return Effect.gen(function*() {
      const dataDir = join(root, "data")
      const bytes = new TextEncoder().encode("an image of the repository")
      const hash = createHash("sha256").update(bytes).digest("hex")
      const folder = join(dataDir, "blobs", hash.slice(0, 2))
      mkdirSync(folder, { recursive: true })
      const pipe = join(folder, hash)
      execFileSync("mkfifo", [pipe])
      pipes.push(pipe)
      const store = FileBlobStore.make({ dataDir })
      expect((yield* Effect.either(store.get(hash)))._tag).toBe("Left")
      // The same through a link, as a clone can ship one: to a pipe elsewhere.
      const other = createHash("sha256").update("another").digest("hex")
      mkdirSync(join(dataDir, "blobs", other.slice(0, 2)), { recursive: true })
      const elsewhere = join(root, "elsewhere.fifo")
      execFileSync("mkfifo", [elsewhere])
      pipes.push(elsewhere)
      symlinkSync(elsewhere, join(dataDir, "blobs", other.slice(0, 2), other))
      expect((yield* Effect.either(store.get(other)))._tag).toBe("Left")
      // Storing the bytes the pipe is named for replaces it with the blob.
      expect(yield* store.put(bytes)).toBe(hash)
      expect(lstatSync(pipe).isFile()).toBe(true)
      expect(readFileSync(pipe, "utf8")).toBe("an image of the repository")
      expect(new TextDecoder().decode(yield* store.get(hash))).toBe("an image of the repository")
    }).pipe(Effect.ensuring(Effect.sync(() => {
      // On the old code a read waits in open(2) for a writer: open each pipe's write end once, so
      // the waiting thread goes (this runs only after the test, passed or timed out).
      for (const pipe of pipes) {
        try {
          closeSync(openSync(pipe, constants.O_WRONLY | constants.O_NONBLOCK))
        } catch {
          // No reader waits (ENXIO), or it is a file now.
        }
      }
      rmSync(root, { recursive: true, force: true })
    })))
  })
})
