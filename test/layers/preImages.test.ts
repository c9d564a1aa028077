/**
 * PreImages, the workspace checkpoints: what a shell snapshot sees (gitignore, .git, caps), and a
 * restore given a hostile plan — paths out of cwd, through a linked folder — which must write
 * nothing anywhere.
 */
import * as NodeFs from "node:fs/promises"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as MemoryBlobStore from "../../src/layers/blobs/MemoryBlobStore.js"
import * as Sha256 from "../../src/layers/blobs/Sha256.js"
import * as PreImages from "../../src/layers/workspace/PreImages.js"
import { BlobStore } from "../../src/services/BlobStore.js"
import type { PreparedCall } from "../../src/services/ToolRouter.js"
import { type Capture, WorkspaceCheckpoints } from "../../src/services/WorkspaceCheckpoints.js"

const folder = Effect.acquireRelease(
  Effect.promise(async () => NodeFs.realpath(await NodeFs.mkdtemp(NodePath.join(NodeOs.tmpdir(), "effect-agent-preimages-")))),
  (dir) => Effect.promise(() => NodeFs.rm(dir, { recursive: true, force: true }))
)

const write = (dir: string, files: Record<string, string>) =>
  Effect.promise(async () => {
    for (const [name, content] of Object.entries(files)) {
      await NodeFs.mkdir(NodePath.dirname(NodePath.join(dir, name)), { recursive: true })
      await NodeFs.writeFile(NodePath.join(dir, name), content)
    }
  })

const shellCall = (command: string): PreparedCall => ({
  toolCallId: "call_1",
  tool: "shell",
  args: { command },
  risk: "destructive",
  sequential: false,
  paths: [],
  scope: "shell",
  input: { command }
})

const checkpoints = (options?: PreImages.Options) =>
  PreImages.layer(options).pipe(Layer.provideMerge(MemoryBlobStore.layer))

describe("PreImages: a shell command's snapshot", () => {
  it.scoped("records changed, deleted and created files with pre-images, leaving out .git and what .gitignore ignores", () =>
    Effect.gen(function*() {
      const dir = yield* folder
      yield* write(dir, { ".gitignore": "*.log\nbuild/\n", "a.txt": "a\n", "c.txt": "c\n", ".git/HEAD": "ref\n", "sub/.gitignore": "local.txt\n", "sub/x.txt": "x\n" })
      const { blobs, cp } = yield* Effect.all({ blobs: BlobStore, cp: WorkspaceCheckpoints })
      const capture = (yield* cp.watch(shellCall("sh"), dir))!
      yield* write(dir, { "a.txt": "A\n", "b.log": "ignored\n", "build/out": "ignored\n", ".git/HEAD": "other\n", "new.txt": "new\n", "sub/local.txt": "ignored\n" })
      yield* Effect.promise(() => NodeFs.rm(NodePath.join(dir, "c.txt")))
      const { changes, incomplete } = yield* capture
      expect(incomplete).toBeUndefined()
      expect(changes.map((c) => c.path)).toEqual(["a.txt", "c.txt", "new.txt"])
      const [a, c, created] = changes
      expect(a!.after).toBe(Sha256.of(new TextEncoder().encode("A\n")))
      expect(new TextDecoder().decode(yield* blobs.get(a!.before!.blob))).toBe("a\n")
      expect(c!.after).toBeUndefined()
      expect(new TextDecoder().decode(yield* blobs.get(c!.before!.blob))).toBe("c\n")
      expect(created!.before).toBeUndefined()
    }).pipe(Effect.provide(checkpoints())))

  it.scoped("a .gitignore of more rules than a snapshot applies is not applied (a clone's 200,000 rules cost 175 ms of the event loop per entry); one within the limits is", () =>
    Effect.gen(function*() {
      const dir = yield* folder
      const { ignoreFileBytes, ignoreRulesInForce, ignoreRulesRead } = PreImages.ignoreLimits
      // Rules that match nothing, then one that matches: over the limit, none of them applies.
      const rules = (n: number, last: string) => Array.from({ length: n - 1 }, (_, i) => `nothing${i}/*.x`).concat(last).join("\n")
      yield* write(dir, {
        "a/.gitignore": rules(ignoreRulesInForce, "a.log"),
        "a/a.log": "1",
        // Its parent's rules and its own are over the rules in force together.
        "a/deep/.gitignore": "deep.log\n",
        "a/deep/deep.log": "1",
        "b/.gitignore": rules(ignoreRulesInForce + 1, "b.log"),
        "b/b.log": "1",
        // Comments and blank lines are not rules.
        "c/.gitignore": `# a comment\n\n${rules(10, "c.log")}\n`,
        "c/c.log": "1",
        "d/.gitignore": `${"#".repeat(ignoreFileBytes)}\nd.log\n`,
        "d/d.log": "1"
      })
      const cp = yield* WorkspaceCheckpoints
      const capture = (yield* cp.watch(shellCall("sh"), dir))!
      yield* write(dir, { "a/a.log": "2", "a/deep/deep.log": "2", "b/b.log": "2", "c/c.log": "2", "d/d.log": "2" })
      const { changes } = yield* capture
      expect(changes.map((c) => c.path)).toEqual(["a/deep/deep.log", "b/b.log", "d/d.log"])
      expect(ignoreRulesRead).toBeGreaterThan(ignoreRulesInForce)
    }).pipe(Effect.provide(checkpoints())))

  it.scoped("the rules read by one snapshot are bounded too: past them, a later .gitignore is not applied", () =>
    Effect.gen(function*() {
      const dir = yield* folder
      const { ignoreRulesInForce, ignoreRulesRead } = PreImages.ignoreLimits
      const files: Record<string, string> = {}
      // Sibling folders, each within the rules in force, together past the rules read.
      const folders = Math.ceil(ignoreRulesRead / ignoreRulesInForce) + 1
      for (let i = 0; i < folders; i++) {
        files[`p${String(i).padStart(2, "0")}/.gitignore`] = Array.from({ length: ignoreRulesInForce - 1 }, (_, j) => `nothing${j}/*.x`).concat("x.log").join("\n")
        files[`p${String(i).padStart(2, "0")}/x.log`] = "1"
      }
      yield* write(dir, files)
      const cp = yield* WorkspaceCheckpoints
      const capture = (yield* cp.watch(shellCall("sh"), dir))!
      yield* write(dir, Object.fromEntries(Object.keys(files).filter((f) => f.endsWith(".log")).map((f) => [f, "2"])))
      const { changes } = yield* capture
      const applied = ignoreRulesRead / ignoreRulesInForce
      expect(changes.map((c) => c.path)).toEqual(Array.from({ length: folders - applied }, (_, i) => `p${String(applied + i).padStart(2, "0")}/x.log`))
    }).pipe(Effect.provide(checkpoints())))

  it.scoped("a read-only call is not watched", () =>
    Effect.gen(function*() {
      const dir = yield* folder
      const cp = yield* WorkspaceCheckpoints
      expect(yield* cp.watch({ ...shellCall("ls"), risk: "read" }, dir)).toBeUndefined()
      expect(yield* cp.watch({ ...shellCall("x"), tool: "read_file" }, dir)).toBeUndefined()
    }).pipe(Effect.provide(checkpoints())))

  it.scoped("past the file cap or the byte cap, the snapshot says it is incomplete", () =>
    Effect.gen(function*() {
      const dir = yield* folder
      yield* write(dir, { "1.txt": "1", "2.txt": "2", "3.txt": "3" })
      const few = yield* Effect.provide(
        Effect.flatMap(WorkspaceCheckpoints, (cp) => Effect.flatten(Effect.map(cp.watch(shellCall("x"), dir), (c) => c!))),
        checkpoints({ maxFiles: 2 })
      )
      expect(few.incomplete).toBe("more than 2 files in the working directory")
      yield* write(dir, { "big.txt": "0123456789" })
      const small = yield* Effect.provide(
        Effect.gen(function*() {
          const cp = yield* WorkspaceCheckpoints
          const capture = (yield* cp.watch(shellCall("x"), dir))!
          yield* write(dir, { "big.txt": "changed" })
          return yield* capture
        }),
        checkpoints({ maxBytes: 5 })
      )
      expect(small.incomplete).toMatch(/more than 5 bytes|past the snapshot's byte cap/)
      expect(small.changes.map((c) => c.path)).not.toContain("big.txt")
    }))
})

describe("PreImages: two commands at once in one cwd (kernel45: both were only marked incomplete)", () => {
  /**
   * Runs `steps` in order in a folder of a.txt, b.txt, c.txt: `+x` starts command x's snapshot, `-x`
   * ends it, a file name changes that file. Answers each command's capture: its paths and `incomplete`.
   */
  const interleaved = (steps: ReadonlyArray<string>) =>
    Effect.gen(function*() {
      const dir = yield* folder
      yield* write(dir, { "a.txt": "a\n", "b.txt": "b\n", "c.txt": "c\n" })
      const cp = yield* WorkspaceCheckpoints
      const running = new Map<string, Effect.Effect<Capture>>()
      const captures: Record<string, { readonly changes: ReadonlyArray<string>; readonly incomplete: string | undefined }> = {}
      for (const step of steps) {
        const name = step.slice(1)
        if (step.startsWith("+")) running.set(name, (yield* cp.watch(shellCall(name), dir))!)
        else if (step.startsWith("-")) {
          const { changes, incomplete } = yield* running.get(name)!
          captures[name] = { changes: changes.map((c) => c.path), incomplete }
        } else yield* write(dir, { [step]: `${step} changed\n` })
      }
      return captures
    }).pipe(Effect.provide(checkpoints()))
  const uncertain = (files: string) => `another command ran in this working directory at the same time: ${files} changed while it ran, and may be its change recorded here as this command's`

  it.scoped("one inside the other: only what changed while both ran is uncertain, and named", () =>
    Effect.map(interleaved(["+outer", "a.txt", "+inner", "b.txt", "-inner", "c.txt", "-outer"]), (captures) =>
      expect(captures).toEqual({
        outer: { changes: ["a.txt", "b.txt", "c.txt"], incomplete: uncertain("b.txt") },
        inner: { changes: ["b.txt"], incomplete: uncertain("b.txt") }
      })))

  it.scoped("overlapping ends: each names only the files changed while both ran", () =>
    Effect.map(interleaved(["+first", "a.txt", "+second", "b.txt", "-first", "c.txt", "-second"]), (captures) =>
      expect(captures).toEqual({
        first: { changes: ["a.txt", "b.txt"], incomplete: uncertain("b.txt") },
        second: { changes: ["b.txt", "c.txt"], incomplete: uncertain("b.txt") }
      })))

  it.scoped("nothing changed while both ran: neither record is incomplete", () =>
    Effect.map(interleaved(["+outer", "a.txt", "+inner", "-inner", "c.txt", "-outer"]), (captures) =>
      expect(captures).toEqual({
        outer: { changes: ["a.txt", "c.txt"], incomplete: undefined },
        inner: { changes: [], incomplete: undefined }
      })))
})

// review60b: commands were grouped by exact cwd, so one in `dir` and a subagent's in `dir/sub` each
// recorded the other's writes as their own, neither incomplete.
describe("PreImages: commands in nested folders at the same time", () => {
  const uncertain = (files: string) => `another command ran in this working directory at the same time: ${files} changed while it ran, and may be its change recorded here as this command's`

  it.scoped("share the inner folder: what changed there is uncertain for both, the rest is the outer's", () =>
    Effect.gen(function*() {
      const dir = yield* folder
      yield* write(dir, { "a.txt": "a\n", "sub/x.txt": "x\n" })
      const cp = yield* WorkspaceCheckpoints
      const outer = (yield* cp.watch(shellCall("outer"), dir))!
      const inner = (yield* cp.watch(shellCall("inner"), NodePath.join(dir, "sub")))!
      yield* write(dir, { "sub/x.txt": "X by inner\n", "a.txt": "A by outer\n" })
      const innerCapture = yield* inner
      const outerCapture = yield* outer
      expect({ changes: innerCapture.changes.map((c) => c.path), incomplete: innerCapture.incomplete }).toEqual({ changes: ["x.txt"], incomplete: uncertain("x.txt") })
      expect({ changes: outerCapture.changes.map((c) => c.path), incomplete: outerCapture.incomplete }).toEqual({ changes: ["a.txt", "sub/x.txt"], incomplete: uncertain("sub/x.txt") })
    }).pipe(Effect.provide(checkpoints())))

  it.scoped("one after the other in nested folders: neither is uncertain", () =>
    Effect.gen(function*() {
      const dir = yield* folder
      yield* write(dir, { "sub/x.txt": "x\n" })
      const cp = yield* WorkspaceCheckpoints
      const inner = (yield* cp.watch(shellCall("inner"), NodePath.join(dir, "sub")))!
      yield* write(dir, { "sub/x.txt": "X by inner\n" })
      expect((yield* inner).incomplete).toBeUndefined()
      const outer = (yield* cp.watch(shellCall("outer"), dir))!
      yield* write(dir, { "sub/x.txt": "X by outer\n" })
      expect((yield* outer).incomplete).toBeUndefined()
    }).pipe(Effect.provide(checkpoints())))
})

// review60b: every scan taken while a long command ran was kept on it until it ended.
describe("PreImages: the scans a command keeps of the others", () => {
  it("are at most maxKeptScans, the first and the newest kept", () => {
    const scans: Array<number> = []
    for (let i = 0; i < 10_000; i++) PreImages.keepScan(scans, i)
    expect(scans.length).toBeLessThanOrEqual(PreImages.maxKeptScans)
    expect(scans[0]).toBe(0)
    expect(scans.at(-1)).toBe(9_999)
    expect([...scans].sort((a, b) => a - b)).toEqual(scans)
  })

  it.scoped("with few kept, a change while another command ran is still named uncertain", () =>
    Effect.gen(function*() {
      const dir = yield* folder
      yield* write(dir, { "a.txt": "a\n", "b.txt": "b\n" })
      const cp = yield* WorkspaceCheckpoints
      const long = (yield* cp.watch(shellCall("long"), dir))!
      for (let i = 0; i < 3 * PreImages.maxKeptScans; i++) {
        const short = (yield* cp.watch(shellCall(`short ${i}`), dir))!
        if (i === PreImages.maxKeptScans) yield* write(dir, { "b.txt": "b by a short one\n" })
        yield* short
      }
      yield* write(dir, { "a.txt": "a by long\n" })
      const capture = yield* long
      expect(capture.changes.map((c) => c.path)).toEqual(["a.txt", "b.txt"])
      expect(capture.incomplete).toContain("b.txt")
    }).pipe(Effect.provide(checkpoints())))
})

describe("PreImages: a restore from a hostile plan writes nothing", () => {
  for (const path of ["../escape.txt", "/tmp/escape.txt", "a/../../escape.txt", "", "./a.txt", "linked/x.txt"]) {
    it.scoped(`refuses ${JSON.stringify(path)} as unsafe_path`, () =>
      Effect.gen(function*() {
        const dir = yield* folder
        const outside = yield* folder
        yield* Effect.promise(() => NodeFs.symlink(outside, NodePath.join(dir, "linked")))
        const { blobs, cp } = yield* Effect.all({ blobs: BlobStore, cp: WorkspaceCheckpoints })
        const blob = yield* blobs.put(new TextEncoder().encode("payload"))
        const refused = yield* Effect.flip(cp.restore({
          cwd: dir,
          files: [{ path: "ok.txt", target: { blob, mode: 0o644 } }, { path, target: { blob, mode: 0o644 } }],
          force: true
        }))
        expect(refused._tag === "RewindRefused" && refused.reason).toBe("unsafe_path")
        expect(yield* Effect.promise(() => NodeFs.readdir(outside))).toEqual([])
        expect((yield* Effect.promise(() => NodeFs.readdir(dir))).sort()).toEqual(["linked"])
        expect(yield* Effect.promise(() => NodeFs.access(NodePath.join(NodePath.dirname(dir), "escape.txt")).then(() => true, () => false))).toBe(false)
      }).pipe(Effect.provide(checkpoints())))
  }

  // A log's workspace.changed can name any path and its blob area any content: an adopted session's
  // rewind wrote an executable git hook (run by the next `git commit`, outside the sandbox) without a question.
  for (const path of [".git/hooks/pre-commit", "sub/.git/config", ".GIT/config", ".git", ".effect-agent/settings.json"]) {
    it.scoped(`refuses ${JSON.stringify(path)}: a protected folder is never written by a rewind`, () =>
      Effect.gen(function*() {
        const dir = yield* folder
        yield* write(dir, { ".git/HEAD": "ref\n", "sub/.git/HEAD": "ref\n", ".effect-agent/x": "x" })
        const { blobs, cp } = yield* Effect.all({ blobs: BlobStore, cp: WorkspaceCheckpoints })
        const blob = yield* blobs.put(new TextEncoder().encode("#!/bin/sh\ntouch /tmp/owned\n"))
        const refused = yield* Effect.flip(cp.restore({
          cwd: dir,
          files: [{ path: "ok.txt", target: { blob, mode: 0o644 } }, { path, target: { blob, mode: 0o755 } }],
          force: true
        }))
        expect(refused._tag === "RewindRefused" && refused.reason).toBe("unsafe_path")
        expect(refused._tag === "RewindRefused" && refused.files).toEqual([path])
        expect((yield* Effect.promise(() => NodeFs.readdir(dir))).sort()).toEqual([".effect-agent", ".git", "sub"])
        expect((yield* Effect.promise(() => NodeFs.readdir(NodePath.join(dir, ".git"))))).toEqual(["HEAD"])
        expect((yield* Effect.promise(() => NodeFs.readdir(NodePath.join(dir, "sub", ".git"))))).toEqual(["HEAD"])
        expect((yield* Effect.promise(() => NodeFs.readdir(NodePath.join(dir, ".effect-agent"))))).toEqual(["x"])
      }).pipe(Effect.provide(checkpoints())))
  }

  // The rest of what the file tools protect: an adopted log's rewind wrote `.husky/pre-commit` (run by
  // git's hook at the next commit), `.vscode/tasks.json` (run when the editor opens the folder), the
  // folder `core.hooksPath` names and a home folder's start-up file, all outside the sandbox.
  // And a hook manager's config, which its installed hook reads at the next commit (review 52).
  for (const path of [".husky/pre-commit", ".vscode/tasks.json", "sub/.IDEA/workspace.xml", ".pre-commit-config.yaml", "lefthook.yml", ".lefthook/x.sh", ".lintstagedrc.json"]) {
    it.scoped(`refuses ${JSON.stringify(path)}: what the file tools protect a rewind never writes`, () =>
      Effect.gen(function*() {
        const dir = yield* folder
        const { blobs, cp } = yield* Effect.all({ blobs: BlobStore, cp: WorkspaceCheckpoints })
        const blob = yield* blobs.put(new TextEncoder().encode("#!/bin/sh\ntouch /tmp/owned\n"))
        const refused = yield* Effect.flip(cp.restore({ cwd: dir, files: [{ path: "ok.txt", target: { blob, mode: 0o644 } }, { path, target: { blob, mode: 0o755 } }], force: true }))
        expect(refused._tag === "RewindRefused" && refused.reason).toBe("unsafe_path")
        expect(refused._tag === "RewindRefused" && refused.files).toEqual([path])
        expect(yield* Effect.promise(() => NodeFs.readdir(dir))).toEqual([])
      }).pipe(Effect.provide(checkpoints())))
  }

  it.scoped("refuses the folder the repository's core.hooksPath names, and a home folder's start-up file when cwd holds home", () =>
    Effect.gen(function*() {
      const dir = yield* folder
      yield* write(dir, { ".git/HEAD": "ref: refs/heads/main\n", ".git/config": "[core]\n\thooksPath = githooks\n" })
      const { blobs, cp } = yield* Effect.all({ blobs: BlobStore, cp: WorkspaceCheckpoints })
      const blob = yield* blobs.put(new TextEncoder().encode("#!/bin/sh\ntouch /tmp/owned\n"))
      const hooks = yield* Effect.flip(cp.restore({ cwd: dir, files: [{ path: "githooks/pre-commit", target: { blob, mode: 0o755 } }], force: true }))
      expect(hooks._tag === "RewindRefused" && hooks.reason).toBe("unsafe_path")
      expect((yield* Effect.promise(() => NodeFs.readdir(dir))).sort()).toEqual([".git"])
      // The session's cwd holds the home folder: `.bashrc` runs at the user's next login.
      const home = NodePath.join(dir, "home")
      yield* Effect.promise(() => NodeFs.mkdir(home))
      const before = process.env.HOME
      yield* Effect.acquireRelease(Effect.sync(() => { process.env.HOME = home }), () => Effect.sync(() => { process.env.HOME = before }))
      const rc = yield* Effect.flip(cp.restore({ cwd: dir, files: [{ path: "home/.bashrc", target: { blob, mode: 0o644 } }], force: true }))
      expect(rc._tag === "RewindRefused" && rc.reason).toBe("unsafe_path")
      expect(yield* Effect.promise(() => NodeFs.readdir(home))).toEqual([])
      // What the session may write in it is restored as before.
      yield* cp.restore({ cwd: dir, files: [{ path: "home/notes/a.txt", target: { blob, mode: 0o644 } }], force: true })
      expect(yield* Effect.promise(() => NodeFs.readdir(NodePath.join(home, "notes")))).toEqual(["a.txt"])
    }).pipe(Effect.provide(checkpoints())))

  it.scoped("a pre-image missing from the blob area fails before any file is touched", () =>
    Effect.gen(function*() {
      const dir = yield* folder
      const cp = yield* WorkspaceCheckpoints
      const failure = yield* Effect.flip(cp.restore({
        cwd: dir,
        files: [{ path: "a.txt", target: { blob: Sha256.of(new TextEncoder().encode("never stored")), mode: 0o644 } }],
        force: false
      }))
      expect(failure._tag).toBe("EventStoreFailure")
      expect(yield* Effect.promise(() => NodeFs.readdir(dir))).toEqual([])
    }).pipe(Effect.provide(checkpoints())))
})
