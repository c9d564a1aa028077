/**
 * review55: a rewind's restore given a plan a copied log or a later hard link makes hostile — it
 * never writes through a second name of a file, never applies special or umask-withheld mode bits,
 * never removes through a folder swapped for a link — and holds one file's content at a time.
 */
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import * as V8 from "node:v8"
import * as Vm from "node:vm"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as MemoryBlobStore from "../../src/layers/blobs/MemoryBlobStore.js"
import * as Sha256 from "../../src/layers/blobs/Sha256.js"
import * as PreImages from "../../src/layers/workspace/PreImages.js"
import * as SafeFile from "../../src/layers/workspace/SafeFile.js"
import { BlobStore } from "../../src/services/BlobStore.js"
import { WorkspaceCheckpoints } from "../../src/services/WorkspaceCheckpoints.js"

const dirs = Effect.acquireRelease(
  Effect.sync(() => {
    const root = NodeFs.realpathSync(NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "effect-agent-restore-")))
    NodeFs.mkdirSync(NodePath.join(root, "ws"))
    NodeFs.mkdirSync(NodePath.join(root, "outside"))
    return { root, cwd: NodePath.join(root, "ws"), outside: NodePath.join(root, "outside") }
  }),
  ({ root }) => Effect.sync(() => NodeFs.rmSync(root, { recursive: true, force: true }))
)
const layer = PreImages.layer().pipe(Layer.provideMerge(MemoryBlobStore.layer))
const text = (s: string) => new TextEncoder().encode(s)

/** The process's umask, as the restore reads it. */
const umask = () => Number.parseInt(/^Umask:\s*([0-7]+)$/m.exec(NodeFs.readFileSync("/proc/self/status", "utf8"))![1]!, 8)

describe("PreImages: a restore never writes what is not the workspace's own", () => {
  it.scoped("a file that became a hard link to a file outside cwd is changed outside; forced, its name is replaced and the outside file untouched", () =>
    Effect.gen(function*() {
      const { cwd, outside } = yield* dirs
      const secret = NodePath.join(outside, "secret.txt")
      NodeFs.writeFileSync(secret, "user's outside data\n", { mode: 0o600 })
      NodeFs.linkSync(secret, NodePath.join(cwd, "notes.txt"))
      const original = yield* (yield* BlobStore).put(text("original\n"))
      const checkpoints = yield* WorkspaceCheckpoints
      // The log: the agent changed notes.txt from "original" to "agent"; since, it became a second name of secret.txt.
      const files = [{ path: "notes.txt", target: { blob: original, mode: 0o644 }, expected: Sha256.of(text("agent\n")) }]
      const refused = yield* Effect.flip(checkpoints.restore({ cwd, files, force: false }))
      expect(refused).toMatchObject({ _tag: "RewindRefused", reason: "changed_outside", files: ["notes.txt"] })
      const done = yield* checkpoints.restore({ cwd, files, force: true })
      expect(done.forced).toEqual(["notes.txt"])
      // The outside file's content is not copied into the blob area as the rewind's pre-image either.
      expect(done.changes).toEqual([{ path: "notes.txt", after: original }])
      expect(NodeFs.readFileSync(secret, "utf8")).toBe("user's outside data\n")
      expect(NodeFs.statSync(secret).mode & 0o777).toBe(0o600)
      expect(NodeFs.statSync(secret).nlink).toBe(1)
      expect(NodeFs.readFileSync(NodePath.join(cwd, "notes.txt"), "utf8")).toBe("original\n")
    }).pipe(Effect.provide(layer)))

  it.scoped("a log's mode loses its special bits and what the umask withholds (a pre-image of mode 6777)", () =>
    Effect.gen(function*() {
      const { cwd } = yield* dirs
      const content = yield* (yield* BlobStore).put(text("#!/bin/sh\necho hi\n"))
      const checkpoints = yield* WorkspaceCheckpoints
      yield* checkpoints.restore({ cwd, files: [{ path: "run.sh", target: { blob: content, mode: 0o6777 } }], force: false })
      const mode = NodeFs.statSync(NodePath.join(cwd, "run.sh")).mode & 0o7777
      expect(mode.toString(8)).toBe((0o777 & ~umask()).toString(8))
    }).pipe(Effect.provide(layer)))

  it.scoped("a removal goes through its checked folder: a folder swapped for a link since is not followed", () =>
    Effect.gen(function*() {
      const { cwd, outside } = yield* dirs
      NodeFs.writeFileSync(NodePath.join(outside, "keep.txt"), "kept\n")
      NodeFs.symlinkSync(outside, NodePath.join(cwd, "sub"))
      const failed = yield* Effect.flip(Effect.tryPromise({ try: () => SafeFile.removeNow(NodePath.join(cwd, "sub", "keep.txt"), "file"), catch: SafeFile.toFileError }))
      expect(failed.code).toBe("path_changed")
      expect(NodeFs.readFileSync(NodePath.join(outside, "keep.txt"), "utf8")).toBe("kept\n")
    }))
})

/** A full collection, to count what is held (the `gc` of a context made after the flag is set). */
const gc = (() => {
  V8.setFlagsFromString("--expose-gc")
  return Vm.runInNewContext("gc") as () => void
})()

describe("PreImages: a restore's memory", () => {
  it.live("holds one file's content at a time, not every file's current content and pre-image", () =>
    Effect.gen(function*() {
      const { cwd } = yield* dirs
      const inner = yield* BlobStore
      const n = 8
      const size = 8 * 1024 * 1024
      const files = []
      for (let i = 0; i < n; i++) {
        const now = Buffer.alloc(size, 65 + i)
        NodeFs.writeFileSync(NodePath.join(cwd, `f${i}.bin`), now)
        const blob = yield* inner.put(new Uint8Array(Buffer.alloc(size, 97 + i)))
        files.push({ path: `f${i}.bin`, target: { blob, mode: 0o644 }, expected: Sha256.of(now) })
      }
      // Bytes held when each pre-image is read, after a full collection, less what the memory store
      // itself keeps of the rewind's own pre-images (on disk with a file store).
      let stored = 0
      const held: Array<number> = []
      gc()
      const base = process.memoryUsage().arrayBuffers
      const counting: BlobStore.Service = {
        ...inner,
        put: (bytes) => Effect.tap(inner.put(bytes), () => Effect.sync(() => void (stored += bytes.byteLength))),
        get: (hash) =>
          Effect.tap(inner.get(hash), () =>
            Effect.sync(() => {
              gc()
              held.push(process.memoryUsage().arrayBuffers - base - stored)
            }))
      }
      const checkpoints = yield* PreImages.make().pipe(Effect.provideService(BlobStore, counting))
      const done = yield* checkpoints.restore({ cwd, files, force: false })
      expect(done.changes).toHaveLength(n)
      expect(held).toHaveLength(n)
      // A few files' worth whatever n (the pre-image just read, its copies, the file it replaces): all
      // at once was 2n - 1 of them (120 MiB here, 15 files).
      expect(Math.max(...held)).toBeLessThan(5 * size)
    }).pipe(Effect.scoped, Effect.provide(MemoryBlobStore.layer)), 120_000)
})

describe("PreImages: a restore's reads are bounded", () => {
  // review61b: a forced rewind over a 2.2 GiB file hashed it, then read it whole to keep it (Node
  // refuses a file over 2 GiB: the read failed quietly), and replaced it with no pre-image kept. A
  // file past the cap a file tool's pre-image has (`maxBytes`) is now refused before anything changes.
  it.scoped("a file to replace past the cap is refused too_large, forced or not, and nothing is changed", () =>
    Effect.gen(function*() {
      const { cwd } = yield* dirs
      NodeFs.writeFileSync(NodePath.join(cwd, "a.txt"), "current a\n")
      // Sparse: 2 MiB by its size, no bytes written.
      NodeFs.writeFileSync(NodePath.join(cwd, "z.log"), "")
      NodeFs.truncateSync(NodePath.join(cwd, "z.log"), 2 * 1024 * 1024)
      const blobs = yield* BlobStore
      const a = yield* blobs.put(text("old a\n"))
      const z = yield* blobs.put(text("old z\n"))
      const checkpoints = yield* WorkspaceCheckpoints
      const files = [
        { path: "a.txt", target: { blob: a, mode: 0o644 }, expected: Sha256.of(text("current a\n")) },
        { path: "z.log", target: { blob: z, mode: 0o644 }, expected: Sha256.of(text("z\n")) }
      ]
      for (const force of [false, true]) {
        const refused = yield* Effect.flip(checkpoints.restore({ cwd, files, force }))
        expect(refused).toMatchObject({ _tag: "RewindRefused", reason: "too_large", files: ["z.log"] })
        expect(refused.message).toMatch(/over the 1048576 bytes a rewind keeps of a file it replaces; .*nothing was changed/)
      }
      expect(NodeFs.readFileSync(NodePath.join(cwd, "a.txt"), "utf8")).toBe("current a\n")
      expect(NodeFs.statSync(NodePath.join(cwd, "z.log")).size).toBe(2 * 1024 * 1024)
      // Within the cap, the same rewind goes through and keeps what it replaced.
      NodeFs.truncateSync(NodePath.join(cwd, "z.log"), 0)
      const done = yield* checkpoints.restore({ cwd, files, force: true })
      expect(done.changes.map((change) => [change.path, change.before !== undefined])).toEqual([["a.txt", true], ["z.log", true]])
    }).pipe(Effect.provide(PreImages.layer({ maxBytes: 1024 * 1024 }).pipe(Layer.provideMerge(MemoryBlobStore.layer)))))
})
