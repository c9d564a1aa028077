/**
 * The JSONL store's blob area in a data dir that came with a repository: a folder of it planted as
 * a link (`blobs/ab -> ~/.ssh`) must not take the user's blobs where it points.
 */
import { createHash } from "node:crypto"
import { mkdirSync, readdirSync, rmSync, symlinkSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as FileBlobStore from "../../src/layers/blobs/FileBlobStore.js"

describe("the file blob area", () => {
  it.effect("a blob folder that is a link is not written through", () =>
    Effect.gen(function*() {
      const root = `/tmp/effect-agent-bloblinks-${process.pid}`
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
    }).pipe(Effect.ensuring(Effect.sync(() => rmSync(`/tmp/effect-agent-bloblinks-${process.pid}`, { recursive: true, force: true })))))
})
