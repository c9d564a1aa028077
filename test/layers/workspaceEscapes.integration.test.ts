/**
 * The file tools' sandbox, tried as a hostile model would: links out of the workspace (to files, to
 * folders, dangling, looping), a folder swapped for a link while a tool runs, and special files.
 * Every file tool (read, write, edit, list, grep) in every permission mode (default, acceptEdits,
 * readOnly, bypass), driven as the engine drives them: `prepare`, the policy's `decide`, and
 * `execute` only when allowed — an `ask` is answered "no", as a closed stdin answers it.
 *
 * In `bypass` mode reaching outside the workspace is allowed by design: there the tests check that
 * what is touched is the real target the call was prepared (and would be prompted) with.
 */
import { execFileSync, spawn } from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { afterAll, describe, expect, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import type { Json } from "../../src/domain/Json.js"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import * as Render from "../../src/cli/Render.js"
import * as MemoryEventStore from "../../src/layers/MemoryEventStore.js"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import * as Mounts from "../../src/layers/workspace/Mounts.js"
import * as Paths from "../../src/layers/workspace/Paths.js"
import * as SafeFile from "../../src/layers/workspace/SafeFile.js"
import * as WorkspaceTools from "../../src/layers/WorkspaceTools.js"
import type { PreparedCall, ToolContext, ToolFailure, ToolOutput } from "../../src/services/ToolRouter.js"
import { collect, engineLayer } from "../helpers.js"
import { ownedByTest } from "../processes.js"

const OUTSIDE = "SECRET-OUTSIDE"
const INSIDE = "SECRET-INSIDE"

/**
 * A fresh temp dir: `ws/` is the session's cwd, `out/` is outside it. Inside: `a.txt`, and links
 * out — to a file, to a folder, dangling (to a file and to a folder not made yet) and in a loop.
 */
const trees: Array<string> = []
afterAll(() => {
  for (const root of trees) NodeFs.rmSync(root, { recursive: true, force: true })
})

const makeTree = () => {
  const root = NodeFs.realpathSync(NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "effect-agent-escapes-")))
  trees.push(root)
  const cwd = NodePath.join(root, "ws")
  const out = NodePath.join(root, "out")
  NodeFs.mkdirSync(cwd)
  NodeFs.mkdirSync(NodePath.join(out, "outdir"), { recursive: true })
  NodeFs.writeFileSync(NodePath.join(cwd, "a.txt"), `${INSIDE}\n`)
  NodeFs.writeFileSync(NodePath.join(out, "outside.txt"), `${OUTSIDE}\n`)
  NodeFs.writeFileSync(NodePath.join(out, "outdir", "secret.txt"), `${OUTSIDE}\n`)
  NodeFs.symlinkSync(NodePath.join(out, "outside.txt"), NodePath.join(cwd, "link_file"))
  NodeFs.symlinkSync(NodePath.join(out, "outdir"), NodePath.join(cwd, "link_dir"))
  NodeFs.symlinkSync(NodePath.join(out, "new.txt"), NodePath.join(cwd, "dangling"))
  NodeFs.symlinkSync(NodePath.join(out, "newdir"), NodePath.join(cwd, "dangling_dir"))
  NodeFs.symlinkSync("loop2", NodePath.join(cwd, "loop1"))
  NodeFs.symlinkSync("loop1", NodePath.join(cwd, "loop2"))
  return { root, cwd, out }
}

/** Every file (path → content) under `dir`, links not followed. */
const snapshot = (dir: string): Record<string, string> => {
  const files: Record<string, string> = {}
  const visit = (at: string) => {
    for (const entry of NodeFs.readdirSync(at, { withFileTypes: true })) {
      const full = NodePath.join(at, entry.name)
      if (entry.isDirectory()) visit(full)
      else if (entry.isFile()) files[full] = NodeFs.readFileSync(full, "utf8")
    }
  }
  visit(dir)
  return files
}

type Mode = PermissionPolicy.Mode
const modes: ReadonlyArray<Mode> = ["default", "acceptEdits", "readOnly", "bypass"]

/** What happened to a call: refused before running (and why), or run with this outcome. */
type Outcome =
  | { readonly stage: "prepare"; readonly failure: ToolFailure }
  | { readonly stage: "decided"; readonly decision: "ask" | "deny"; readonly call: PreparedCall }
  | { readonly stage: "ran"; readonly call: PreparedCall; readonly result: Either.Either<ToolOutput, ToolFailure> }

/** The tools in `cwd`, and a call made as the engine makes it, with every `ask` answered "no". */
const harness = (cwd: string, mode: Mode, options: WorkspaceTools.Options = {}) =>
  Effect.gen(function*() {
    const tools = yield* WorkspaceTools.make(options)
    const context: ToolContext = { sessionId: "s", turnId: "t", cwd, progress: () => Effect.void }
    let n = 0
    const attempt = (tool: string, args: Json): Effect.Effect<Outcome> =>
      Effect.gen(function*() {
        const prepared = yield* Effect.either(tools.prepare({ toolCallId: `c${++n}`, tool, args }, cwd))
        if (Either.isLeft(prepared)) return { stage: "prepare", failure: prepared.left } as const
        const call = prepared.right
        const { decision } = PermissionPolicy.decide({ mode }, { sessionId: "s", cwd, call, remembered: [] })
        if (decision !== "allow") return { stage: "decided", decision, call } as const
        return { stage: "ran", call, result: yield* Effect.either(tools.execute(call, context)) } as const
      })
    return { tools, context, attempt }
  }).pipe(Effect.provide(NodeContext.layer))

/** The text a call's outcome shows the model. */
const shownText = (outcome: Outcome): string =>
  outcome.stage !== "ran" ? "" : Either.isRight(outcome.result) ? outcome.result.right.result : outcome.result.left.message

/** A call that reaches outside: each case names the real target the call must be prepared with. */
interface EscapeCase {
  readonly tool: string
  readonly args: (t: ReturnType<typeof makeTree>) => Json
  /** The real path the call resolves to (relative to the tree's root). */
  readonly target: string
  readonly access: "read" | "write"
  /** A link chain that cannot be resolved: outside, and never touched even when allowed. */
  readonly unresolvable?: boolean
}

const escapeCases: ReadonlyArray<EscapeCase> = [
  { tool: "read_file", args: () => ({ path: "link_file" }), target: "out/outside.txt", access: "read" },
  { tool: "read_file", args: () => ({ path: "link_dir/secret.txt" }), target: "out/outdir/secret.txt", access: "read" },
  { tool: "read_file", args: () => ({ path: "loop1" }), target: "ws/loop1", access: "read", unresolvable: true },
  { tool: "write_file", args: () => ({ path: "dangling", content: "pwned" }), target: "out/new.txt", access: "write" },
  { tool: "write_file", args: () => ({ path: "dangling_dir/x.txt", content: "pwned" }), target: "out/newdir/x.txt", access: "write" },
  { tool: "write_file", args: () => ({ path: "link_file", content: "pwned" }), target: "out/outside.txt", access: "write" },
  { tool: "write_file", args: () => ({ path: "link_dir/new.txt", content: "pwned" }), target: "out/outdir/new.txt", access: "write" },
  { tool: "write_file", args: () => ({ path: "loop1", content: "pwned" }), target: "ws/loop1", access: "write", unresolvable: true },
  { tool: "edit_file", args: () => ({ path: "link_file", oldString: "SECRET", newString: "pwned" }), target: "out/outside.txt", access: "write" },
  { tool: "edit_file", args: () => ({ path: "link_dir/secret.txt", oldString: "SECRET", newString: "pwned" }), target: "out/outdir/secret.txt", access: "write" },
  { tool: "edit_file", args: () => ({ path: "loop2", oldString: "x", newString: "y" }), target: "ws/loop2", access: "write", unresolvable: true },
  { tool: "list_dir", args: () => ({ path: "link_dir" }), target: "out/outdir", access: "read" },
  { tool: "grep", args: () => ({ pattern: "SECRET", path: "link_dir" }), target: "out/outdir", access: "read" },
  { tool: "grep", args: () => ({ pattern: "SECRET", path: "link_file" }), target: "out/outside.txt", access: "read" }
]

/** What the policy must decide for a call outside cwd, per mode. */
const expectedDecision = (mode: Mode, access: "read" | "write") =>
  mode === "bypass" ? "allow" : mode === "readOnly" && access === "write" ? "deny" : "ask"

describe("file tools: links out of the workspace, in every mode", () => {
  for (const mode of modes) {
    for (const c of escapeCases) {
      it.live(`${mode}: ${c.tool} ${JSON.stringify(c.args(undefined as never))} is prepared with its real target and never reaches outside unasked`, () =>
        Effect.gen(function*() {
          const tree = makeTree()
          const before = snapshot(tree.out)
          const { attempt } = yield* harness(tree.cwd, mode)
          const outcome = yield* attempt(c.tool, c.args(tree))
          expect(outcome.stage).not.toBe("prepare")
          if (outcome.stage === "prepare") return
          // The permission check (and the prompt, from `permission.requested`) sees the real target.
          expect(outcome.call.paths[0]).toMatchObject({ resolved: NodePath.join(tree.root, c.target), insideCwd: false, access: c.access })
          const decision = outcome.stage === "decided" ? outcome.decision : "allow"
          expect(decision).toBe(expectedDecision(mode, c.access))
          if (mode !== "bypass") {
            expect(outcome.stage).toBe("decided")
            expect(snapshot(tree.out)).toEqual(before)
            return
          }
          // bypass: outside access is allowed by design, and it is the real target that is touched.
          if (outcome.stage !== "ran") return
          if (c.unresolvable === true) {
            expect(Either.isLeft(outcome.result)).toBe(true)
            expect(snapshot(tree.out)).toEqual(before)
          } else {
            expect(Either.isRight(outcome.result), shownText(outcome)).toBe(true)
            if (c.tool === "write_file") expect(NodeFs.readFileSync(NodePath.join(tree.root, c.target), "utf8")).toBe("pwned")
            if (c.tool === "edit_file") expect(NodeFs.readFileSync(NodePath.join(tree.root, c.target), "utf8")).toBe("pwned-OUTSIDE\n")
          }
          // A link is never replaced by a file: the links still lead where they did.
          expect(NodeFs.readlinkSync(NodePath.join(tree.cwd, "dangling"))).toBe(NodePath.join(tree.out, "new.txt"))
          expect(NodeFs.readlinkSync(NodePath.join(tree.cwd, "link_file"))).toBe(NodePath.join(tree.out, "outside.txt"))
        }))
    }

    it.live(`${mode}: grep and list_dir over the workspace skip links that lead out, and say so`, () =>
      Effect.gen(function*() {
        const tree = makeTree()
        const { attempt } = yield* harness(tree.cwd, mode)
        const grep = yield* attempt("grep", { pattern: "SECRET" })
        expect(grep.stage).toBe("ran")
        const found = shownText(grep)
        expect(found).toContain(`a.txt:1:${INSIDE}`)
        expect(found).not.toContain(OUTSIDE)
        expect(found).toContain("[skipped 6 links that lead outside the working directory]")
        const listing = yield* attempt("list_dir", {})
        expect(listing.stage).toBe("ran")
        const listed = shownText(listing)
        expect(listed).toContain("a.txt")
        expect(listed).toContain("link_dir -> (outside the working directory)")
        expect(listed).toContain("loop1 -> (outside the working directory)")
        expect(listed).not.toContain("secret.txt")
      }))
  }

  it.live("links that stay inside are followed, once per folder", () =>
    Effect.gen(function*() {
      const tree = makeTree()
      NodeFs.mkdirSync(NodePath.join(tree.cwd, "src"))
      NodeFs.writeFileSync(NodePath.join(tree.cwd, "src", "b.txt"), "SECRET-B\n")
      NodeFs.symlinkSync(NodePath.join(tree.cwd, "src"), NodePath.join(tree.cwd, "alias"))
      NodeFs.symlinkSync("src/b.txt", NodePath.join(tree.cwd, "b-link"))
      const { attempt } = yield* harness(tree.cwd, "default")
      const found = shownText(yield* attempt("grep", { pattern: "SECRET-B" }))
      // The folder is walked once (whichever name comes first); a link to a file is read as itself.
      expect(found.split("\n").filter((l) => l.includes("SECRET-B")).sort()).toEqual(["alias/b.txt:1:SECRET-B", "b-link:1:SECRET-B"])
      expect(shownText(yield* attempt("list_dir", {}))).toContain("alias/")
    }))
})

describe("what is inside", () => {
  it.live("a name that starts with two dots is inside; a link chain that loops or runs too deep is outside", () =>
    Effect.gen(function*() {
      const tree = makeTree()
      NodeFs.writeFileSync(NodePath.join(tree.cwd, "..notes"), "x")
      // 41 links in a row: one more than any resolution follows.
      for (let i = 0; i < 41; i++) NodeFs.symlinkSync(`chain${i + 1}`, NodePath.join(tree.cwd, `chain${i}`))
      NodeFs.writeFileSync(NodePath.join(tree.cwd, "chain41"), "end")
      NodeFs.symlinkSync("chain2", NodePath.join(tree.cwd, "short"))
      const { tools } = yield* harness(tree.cwd, "default")
      const insideOf = (path: string) =>
        Effect.map(tools.prepare({ toolCallId: "c", tool: "read_file", args: { path } }, tree.cwd), (call) => call.paths[0]!.insideCwd)
      expect(yield* insideOf("..notes")).toBe(true)
      expect(yield* insideOf("short")).toBe(true)
      expect(yield* insideOf("chain0")).toBe(false)
      expect(yield* insideOf("loop1/x")).toBe(false)
    }))
})

describe("a cwd reached through a link", () => {
  it.live("is the workspace: paths inside it are inside and shown relative to it", () =>
    Effect.gen(function*() {
      const tree = makeTree()
      const alias = NodePath.join(tree.root, "ws-alias")
      NodeFs.symlinkSync(tree.cwd, alias)
      const { attempt } = yield* harness(alias, "acceptEdits")
      expect(shownText(yield* attempt("write_file", { path: "x.txt", content: "SECRET-X" }))).toBe("Wrote 8 bytes to x.txt")
      expect(shownText(yield* attempt("edit_file", { path: "x.txt", oldString: "X", newString: "Y" }))).toBe("Replaced 1 occurrence in x.txt")
      expect(shownText(yield* attempt("grep", { pattern: "SECRET-Y" }))).toMatch(/^x\.txt:1:SECRET-Y\n/)
      expect(shownText(yield* attempt("read_file", { path: `${alias}/a.txt` }))).toBe(`${INSIDE}\n`)
    }))
})

describe("a dangling link in the approval prompt", () => {
  it.live("acceptEdits asks before write_file through a dangling link, and the prompt names the real target", () =>
    Effect.gen(function*() {
      const tree = makeTree()
      const script = { responses: [{ toolCalls: [{ tool: "write_file", args: { path: "dangling", content: "pwned" } }] }, { chunks: ["ok"] }] }
      const layer = engineLayer(MemoryEventStore.layer, script).pipe(
        Layer.provideMerge(WorkspaceTools.layer().pipe(Layer.provide(NodeContext.layer))),
        Layer.provideMerge(PermissionPolicy.layer({ mode: "acceptEdits" }))
      )
      const pending: Array<{ readonly outsidePaths?: ReadonlyArray<string> }> = []
      const events = yield* Effect.gen(function*() {
        const engine = yield* SessionEngine
        const { sessionId } = yield* engine.createSession({ cwd: tree.cwd, client: "test" })
        return yield* collect(engine.runTurn({ sessionId, userMessage: "write" }).pipe(
          Stream.tap((event) =>
            event.type === "permission.resolved" && event.payload.decision === "ask"
              ? Effect.gen(function*() {
                pending.push(...(yield* engine.pendingApprovals({ sessionId })))
                yield* engine.resolvePermission({ sessionId, toolCallId: event.payload.toolCallId, decision: "deny" })
              })
              : Effect.void
          )
        ))
      }).pipe(Effect.provide(layer))
      const find = <T extends AgentEvent["type"]>(type: T) => events.find((e): e is Extract<AgentEvent, { type: T }> => e.type === type)!
      const target = NodePath.join(tree.out, "new.txt")
      expect(find("permission.requested").payload).toEqual({ toolCallId: "call_1", tool: "write_file", risk: "write", outsidePaths: [target] })
      expect(find("permission.resolved").payload).toMatchObject({ decision: "ask", policy: "outside-cwd" })
      expect(find("tool.failed").payload).toMatchObject({ errorCode: "permission_denied" })
      expect(NodeFs.existsSync(target)).toBe(false)
      // The question the CLI asks, built from these events.
      const info = { ...find("model.tool_call_requested").payload, outsidePaths: find("permission.requested").payload.outsidePaths }
      expect(Render.describeCall(info)).toBe(`write_file dangling (outside the working directory: ${target})`)
      // `effect-agent pending` lists the waiting call the same way.
      expect(pending).toEqual([expect.objectContaining({ tool: "write_file", outsidePaths: [target] })])
    }))
})

describe("hard links (issue 18, item 7): a write through a file that has another name asks", () => {
  /** `ws/linked.txt` is a second name of `out/outside.txt`: a write through it changes the outside file. */
  const linkedTree = () => {
    const tree = makeTree()
    NodeFs.linkSync(NodePath.join(tree.out, "outside.txt"), NodePath.join(tree.cwd, "linked.txt"))
    return tree
  }
  const writes = [
    ["write_file", { path: "linked.txt", content: "pwned" }],
    ["edit_file", { path: "linked.txt", oldString: "SECRET", newString: "pwned" }]
  ] as const

  for (const mode of modes) {
    for (const [tool, args] of writes) {
      it.live(`${mode}: ${tool} through a hard link to a file outside ${mode === "bypass" ? "is allowed by design" : "never changes the outside file unasked"}`, () =>
        Effect.gen(function*() {
          const tree = linkedTree()
          const { attempt } = yield* harness(tree.cwd, mode)
          const outcome = yield* attempt(tool, args)
          expect(outcome.stage).not.toBe("prepare")
          if (outcome.stage === "prepare") return
          expect(outcome.call.paths[0]).toMatchObject({ resolved: NodePath.join(tree.cwd, "linked.txt"), insideCwd: false, access: "write", note: expect.stringContaining("hard links") })
          expect(outcome.stage === "decided" ? outcome.decision : "allow").toBe(expectedDecision(mode, "write"))
          if (mode !== "bypass") expect(NodeFs.readFileSync(NodePath.join(tree.out, "outside.txt"), "utf8")).toBe(`${OUTSIDE}\n`)
        }))
    }
  }

  it.live("reading it is a read inside (a repository cannot ship a link to a file of this machine); a file with one name is written as before", () =>
    Effect.gen(function*() {
      const tree = linkedTree()
      const { attempt } = yield* harness(tree.cwd, "acceptEdits")
      const read = yield* attempt("read_file", { path: "linked.txt" })
      expect(read.stage).toBe("ran")
      const write = yield* attempt("write_file", { path: "a.txt", content: "fine" })
      expect(write.stage === "ran" && Either.isRight(write.result)).toBe(true)
    }))

  it.live("a hard link made after the check is refused when the file is opened", () =>
    Effect.gen(function*() {
      const tree = makeTree()
      const { tools, context } = yield* harness(tree.cwd, "acceptEdits")
      const call = yield* tools.prepare({ toolCallId: "c", tool: "write_file", args: { path: "a.txt", content: "pwned" } }, tree.cwd)
      expect(call.paths[0]!.insideCwd).toBe(true)
      NodeFs.linkSync(NodePath.join(tree.cwd, "a.txt"), NodePath.join(tree.out, "second-name.txt"))
      const result = yield* Effect.either(tools.execute(call, context))
      expect(Either.isLeft(result) && result.left.errorCode).toBe("path_changed")
      // And at the open itself, past the re-check.
      expect(yield* Effect.flip(SafeFile.writeFile(NodePath.join(tree.cwd, "a.txt"), new Uint8Array(), { singleName: true }))).toMatchObject({ code: "path_changed" })
      expect(yield* Effect.flip(SafeFile.updateFile(NodePath.join(tree.cwd, "a.txt"), 1000, (b) => Either.right(b), { singleName: true }))).toMatchObject({ code: "path_changed" })
      expect(NodeFs.readFileSync(NodePath.join(tree.out, "second-name.txt"), "utf8")).toBe(`${INSIDE}\n`)
    }))
})

describe("check-then-use: a folder swapped for a link while the tools run", () => {
  it.live("opening by the checked real path refuses a folder that became a link since the check", () =>
    Effect.gen(function*() {
      const tree = makeTree()
      NodeFs.mkdirSync(NodePath.join(tree.cwd, "d"))
      NodeFs.writeFileSync(NodePath.join(tree.cwd, "d", "secret.txt"), INSIDE)
      const checked = NodePath.join(tree.cwd, "d", "secret.txt")
      expect(new TextDecoder().decode(yield* SafeFile.readFile(checked, 1000))).toBe(INSIDE)
      NodeFs.renameSync(NodePath.join(tree.cwd, "d"), NodePath.join(tree.cwd, "d-real"))
      NodeFs.symlinkSync(NodePath.join(tree.out, "outdir"), NodePath.join(tree.cwd, "d"))
      for (const attempt of [
        SafeFile.readFile(checked, 1000),
        SafeFile.writeFile(NodePath.join(tree.cwd, "d", "new.txt"), new TextEncoder().encode("pwned")),
        SafeFile.updateFile(checked, 1000, () => Either.right(new TextEncoder().encode("pwned"))),
        SafeFile.withFolder(NodePath.join(tree.cwd, "d"), async () => "listed")
      ]) {
        expect(yield* Effect.flip(attempt)).toMatchObject({ code: "path_changed" })
      }
      // A missing folder made for a write cannot be redirected either.
      NodeFs.symlinkSync(NodePath.join(tree.out, "made"), NodePath.join(tree.cwd, "made"))
      expect(yield* Effect.flip(SafeFile.writeFile(NodePath.join(tree.cwd, "made", "sub", "f.txt"), new Uint8Array()))).toMatchObject({ code: "path_changed" })
      expect(NodeFs.readFileSync(NodePath.join(tree.out, "outdir", "secret.txt"), "utf8")).toBe(`${OUTSIDE}\n`)
      expect(NodeFs.existsSync(NodePath.join(tree.out, "outdir", "new.txt"))).toBe(false)
      expect(NodeFs.existsSync(NodePath.join(tree.out, "made"))).toBe(false)
    }))

  /**
   * Another process swaps `d/` (a real folder) with `d` (a link to a folder outside) as fast as it
   * can, while a tool on d/ runs 300 times (outside reads and writes ask; the answer is no). Before
   * the fix about one read_file d/secret.txt in ten returned the outside file. Nothing outside may
   * be shown, created or changed.
   */
  for (const tool of ["read_file", "write_file", "edit_file", "grep", "list_dir"] as const) {
    it.scopedLive(`${tool}: 300 calls against a swapping folder never reach outside`, () =>
      Effect.gen(function*() {
        const tree = makeTree()
        const real = NodePath.join(tree.cwd, "d-real")
        const link = NodePath.join(tree.cwd, "d-link")
        NodeFs.mkdirSync(real)
        NodeFs.writeFileSync(NodePath.join(real, "secret.txt"), `${INSIDE}\n`)
        NodeFs.writeFileSync(NodePath.join(tree.out, "outdir", "inside-name.txt"), `${OUTSIDE}\n`)
        NodeFs.symlinkSync(NodePath.join(tree.out, "outdir"), link)
        const before = snapshot(tree.out)
        const swapper = yield* startSwapper(tree.cwd)
        // Writes in acceptEdits, where a write inside cwd runs without asking.
        const { attempt } = yield* harness(tree.cwd, tool === "edit_file" || tool === "write_file" ? "acceptEdits" : "default")
        const args: Json = tool === "read_file"
          ? { path: "d/secret.txt" }
          : tool === "write_file"
          ? { path: "d/new/written.txt", content: "written" }
          : tool === "edit_file"
          ? { path: "d/secret.txt", oldString: "SECRET", newString: "SECRET" }
          : tool === "grep"
          ? { pattern: "SECRET", path: "d" }
          : { path: "d" }
        const seen = { ran: 0, escaped: 0 }
        for (let i = 0; i < 300; i++) {
          const outcome = yield* attempt(tool, args)
          if (outcome.stage !== "ran") continue
          seen.ran++
          const text = shownText(outcome)
          if (text.includes(OUTSIDE) || text.includes("inside-name")) seen.escaped++
        }
        yield* swapper.stop()
        expect(seen.escaped, JSON.stringify(seen)).toBe(0)
        expect(snapshot(tree.out)).toEqual(before)
      }), 120_000)
  }
})

/** A separate process that swaps `d` between the real folder and the link until stopped (or the test's scope closes). */
const startSwapper = (cwd: string) =>
  Effect.gen(function*() {
    const script = `
      const fs = require("fs"); process.chdir(${JSON.stringify(cwd)});
      let n = 0;
      for (;;) {
        try { fs.renameSync("d-real", "d"); fs.renameSync("d", "d-real"); fs.renameSync("d-link", "d"); fs.renameSync("d", "d-link") } catch {}
        if (++n === 1) process.stdout.write("ready\\n");
      }`
    const child = yield* Effect.acquireRelease(
      Effect.sync(() => ownedByTest(spawn(process.execPath, ["-e", script], { stdio: ["ignore", "pipe", "inherit"] }))),
      (child) => Effect.sync(() => child.kill("SIGKILL"))
    )
    const ready = yield* Deferred.make<void>()
    child.stdout.on("data", () => Deferred.unsafeDone(ready, Effect.void))
    yield* Deferred.await(ready)
    return {
      stop: () =>
        Effect.async<void>((resume) => {
          child.once("exit", () => {
            // Leave the folder in a known state whatever the swap was doing.
            if (!NodeFs.existsSync(NodePath.join(cwd, "d-real"))) NodeFs.renameSync(NodePath.join(cwd, "d"), NodePath.join(cwd, "d-real"))
            resume(Effect.void)
          })
          child.kill("SIGKILL")
        })
    }
  })

describe("special files", () => {
  it.live("a FIFO is refused at once by every file tool, and grep walks past it", () =>
    Effect.gen(function*() {
      const tree = makeTree()
      for (let i = 0; i < 6; i++) execFileSync("mkfifo", [NodePath.join(tree.cwd, `fifo${i}`)])
      const { attempt } = yield* harness(tree.cwd, "bypass")
      // More FIFOs than libuv has threads: a blocking open of each would stall every later file operation.
      const reads = yield* Effect.forEach([0, 1, 2, 3, 4, 5], (i) => attempt("read_file", { path: `fifo${i}` }), { concurrency: "unbounded" })
      for (const outcome of reads) expect(outcome.stage === "ran" && Either.isLeft(outcome.result) && outcome.result.left.errorCode).toBe("not_a_regular_file")
      for (const [tool, args] of [
        ["write_file", { path: "fifo0", content: "x" }],
        ["edit_file", { path: "fifo1", oldString: "x", newString: "y" }]
      ] as const) {
        const outcome = yield* attempt(tool, args)
        expect(outcome.stage === "ran" && Either.isLeft(outcome.result) && outcome.result.left.errorCode).toBe("not_a_regular_file")
      }
      expect(shownText(yield* attempt("grep", { pattern: "SECRET" }))).toContain(`a.txt:1:${INSIDE}`)
      expect(shownText(yield* attempt("list_dir", {}))).toContain("fifo0")
      // And the process's own file writes still go through.
      const after = yield* attempt("write_file", { path: "after.txt", content: "fine" })
      expect(after.stage === "ran" && Either.isRight(after.result)).toBe(true)
    }))

  /**
   * A small file is read with synchronous system calls (`SafeFile.readSmallNow`): a FIFO must never
   * reach them (a blocking open or read would hold the whole process, not one threadpool thread), nor
   * a device, nor a link to either, inside or outside, nor a FIFO put in a file's place after the call
   * was prepared. Each is refused at once, and the synchronous read leaves every one of them alone.
   */
  it.live("FIFOs and devices, behind links inside and outside and swapped in after the check, are refused at once and never read synchronously", () =>
    Effect.gen(function*() {
      const tree = makeTree()
      yield* Effect.promise(() => Mounts.refresh())
      execFileSync("mkfifo", [NodePath.join(tree.cwd, "fifo")])
      execFileSync("mkfifo", [NodePath.join(tree.out, "fifo_out")])
      NodeFs.symlinkSync("fifo", NodePath.join(tree.cwd, "to_fifo"))
      NodeFs.symlinkSync(NodePath.join(tree.out, "fifo_out"), NodePath.join(tree.cwd, "to_fifo_out"))
      NodeFs.symlinkSync("/dev/null", NodePath.join(tree.cwd, "to_null"))
      NodeFs.symlinkSync("/dev/zero", NodePath.join(tree.cwd, "to_zero"))
      for (const real of [NodePath.join(tree.cwd, "fifo"), NodePath.join(tree.out, "fifo_out"), "/dev/null", "/dev/zero", NodePath.join(tree.cwd, "to_fifo")]) {
        expect(SafeFile.readSmallNow(real, 1 << 20), real).toBeUndefined()
      }
      const { tools, context, attempt } = yield* harness(tree.cwd, "bypass")
      for (const path of ["fifo", "to_fifo", "to_fifo_out", "to_null", "to_zero"]) {
        const outcome = yield* attempt("read_file", { path })
        expect(outcome.stage === "ran" && Either.isLeft(outcome.result) && outcome.result.left.errorCode, path).toBe("not_a_regular_file")
      }
      // A regular file when the call is prepared, a FIFO (with no writer) when it runs.
      NodeFs.writeFileSync(NodePath.join(tree.cwd, "later"), "regular\n")
      const call = yield* tools.prepare({ toolCallId: "swap", tool: "read_file", args: { path: "later" } }, tree.cwd)
      NodeFs.rmSync(NodePath.join(tree.cwd, "later"))
      execFileSync("mkfifo", [NodePath.join(tree.cwd, "later")])
      const swapped = yield* Effect.either(tools.execute(call, context))
      expect(Either.isLeft(swapped) && swapped.left.errorCode).toBe("not_a_regular_file")
      // And an ordinary file is read synchronously, the same bytes as the asynchronous way.
      expect(Buffer.from(SafeFile.readSmallNow(NodePath.join(tree.cwd, "a.txt"), 1 << 20)!).toString()).toBe(`${INSIDE}\n`)
    }))

  /**
   * A process that may open a file (a command, sandboxed or not: same user) can take a write lease on
   * it; another process's open then waits until the holder lets go or the kernel breaks the lease
   * (`/proc/sys/fs/lease-break-time`, 45 s by default) — inside a synchronous call, the whole agent
   * would wait. Opened `O_NONBLOCK`, it fails at once (EAGAIN) on both ways.
   */
  it.live("a file another process holds a write lease on is not waited for", () =>
    Effect.gen(function*() {
      const tree = makeTree()
      yield* Effect.promise(() => Mounts.refresh())
      const file = NodePath.join(tree.cwd, "leased.txt")
      NodeFs.writeFileSync(file, `${INSIDE}\n`)
      // F_SETLEASE (1024) with F_WRLCK (1); SIGIO, which tells the holder to let go, is ignored.
      const holder = ownedByTest(spawn("perl", ["-e", '$SIG{IO} = "IGNORE"; open(my $fh, "+<", $ARGV[0]) or die; fcntl($fh, 1024, 1) or die "lease: $!"; $| = 1; print "ready\\n"; sleep 60', file], { stdio: ["ignore", "pipe", "inherit"] }))
      try {
        yield* Effect.async<void>((resume) => {
          holder.stdout.once("data", () => resume(Effect.void))
        })
        expect(SafeFile.readSmallNow(file, 1 << 20)).toBeUndefined()
        const { attempt } = yield* harness(tree.cwd, "default")
        const outcome = yield* attempt("read_file", { path: "leased.txt" })
        expect(outcome.stage === "ran" && Either.isLeft(outcome.result) && outcome.result.left.message).toBe("leased.txt: could not be accessed (EAGAIN)")
      } finally {
        holder.kill("SIGKILL")
      }
    }))

  it.live("the synchronous read leaves to the asynchronous one: a folder on the way that is a link, a large, empty or over-the-cap file, /proc", () =>
    Effect.gen(function*() {
      const tree = makeTree()
      yield* Effect.promise(() => Mounts.refresh())
      // As if `d` had been swapped for a link to a folder outside after the check: never followed.
      NodeFs.writeFileSync(NodePath.join(tree.out, "outdir", "a.txt"), OUTSIDE)
      NodeFs.symlinkSync(NodePath.join(tree.out, "outdir"), NodePath.join(tree.cwd, "d"))
      expect(SafeFile.readSmallNow(NodePath.join(tree.cwd, "d", "a.txt"), 1 << 20)).toBeUndefined()
      expect(yield* Effect.flip(SafeFile.readFile(NodePath.join(tree.cwd, "d", "a.txt"), 1 << 20))).toMatchObject({ code: "path_changed" })
      const large = NodePath.join(tree.cwd, "large.txt")
      NodeFs.writeFileSync(large, "y".repeat(SafeFile.smallFileBytes + 1))
      expect(SafeFile.readSmallNow(large, 1 << 20)).toBeUndefined()
      expect((yield* SafeFile.readFile(large, 1 << 20)).byteLength).toBe(SafeFile.smallFileBytes + 1)
      expect(SafeFile.readSmallNow(NodePath.join(tree.cwd, "a.txt"), 4)).toBeUndefined()
      expect(yield* Effect.flip(SafeFile.readFile(NodePath.join(tree.cwd, "a.txt"), 4))).toMatchObject({ code: "file_too_large" })
      NodeFs.writeFileSync(NodePath.join(tree.cwd, "empty"), "")
      expect(SafeFile.readSmallNow(NodePath.join(tree.cwd, "empty"), 1 << 20)).toBeUndefined()
      expect((yield* SafeFile.readFile(NodePath.join(tree.cwd, "empty"), 1 << 20)).byteLength).toBe(0)
      expect(SafeFile.readSmallNow("/proc/self/status", 1 << 20)).toBeUndefined()
      expect(SafeFile.readSmallNow(`/proc/${process.pid}/environ`, 1 << 20)).toBeUndefined()
    }))

  /**
   * `read_file`'s check holds the file's folder open for the read (`Paths.resolveSyncHolding`, then
   * `SafeFile.readSmallIn`), instead of opening every folder from `/` again. Whatever is swapped
   * between the two — the folder moved away and a link or another folder put in its place, the file
   * swapped for a link or a FIFO — the held folder is not taken for the path: nothing is read, and
   * the asynchronous read decides, as it does after `readSmallNow`.
   */
  it.live("the folder a check holds for the read is not fooled by a folder or file swapped after the check", () =>
    Effect.gen(function*() {
      const tree = makeTree()
      yield* Effect.promise(() => Mounts.refresh())
      const d = NodePath.join(tree.cwd, "d")
      const file = NodePath.join(d, "a.txt")
      const fresh = () => {
        NodeFs.rmSync(d, { recursive: true, force: true })
        NodeFs.mkdirSync(d)
        NodeFs.writeFileSync(file, `${INSIDE}\n`)
      }
      const hold = () => {
        const { access, held } = Paths.resolveSyncHolding(NodePath, tree.cwd, "d/a.txt", "read")
        expect(access?.resolved).toBe(file)
        expect(held?.regularFile).toBe(true)
        return held!
      }
      const readHeld = (swap: () => void) => {
        const held = hold()
        try {
          swap()
          return SafeFile.readSmallIn(held, file, 1 << 20)
        } finally {
          Paths.closeQuietlyNow(held.fd)
        }
      }
      // Nothing swapped: the bytes, as `readSmallNow` reads them.
      fresh()
      expect(Buffer.from(readHeld(() => {})!).toString()).toBe(`${INSIDE}\n`)
      // The folder moved away and a link to a folder outside put in its place.
      NodeFs.writeFileSync(NodePath.join(tree.out, "outdir", "a.txt"), `${OUTSIDE}\n`)
      fresh()
      expect(readHeld(() => {
        NodeFs.renameSync(d, `${d}_moved`)
        NodeFs.symlinkSync(NodePath.join(tree.out, "outdir"), d)
      })).toBeUndefined()
      NodeFs.rmSync(d)
      NodeFs.rmSync(`${d}_moved`, { recursive: true })
      // The folder moved away and another folder made in its place: the held one is not it.
      fresh()
      expect(readHeld(() => {
        NodeFs.renameSync(d, `${d}_old`)
        NodeFs.mkdirSync(d)
        NodeFs.writeFileSync(file, "new\n")
      })).toBeUndefined()
      NodeFs.rmSync(`${d}_old`, { recursive: true })
      // The file swapped for a link to a file outside, or for a FIFO with no writer: not followed, not waited on.
      fresh()
      expect(readHeld(() => {
        NodeFs.rmSync(file)
        NodeFs.symlinkSync(NodePath.join(tree.out, "outside.txt"), file)
      })).toBeUndefined()
      fresh()
      expect(readHeld(() => {
        NodeFs.rmSync(file)
        execFileSync("mkfifo", [file])
      })).toBeUndefined()
      // A walk that ends at a FIFO holds its folder, but says it is no regular file: never opened.
      const { held } = Paths.resolveSyncHolding(NodePath, tree.cwd, "d/a.txt", "read")
      try {
        expect(held?.regularFile).toBe(false)
        expect(SafeFile.readSmallIn(held!, file, 1 << 20)).toBeUndefined()
      } finally {
        if (held !== undefined) Paths.closeQuietlyNow(held.fd)
      }
      // A path to a folder or to nothing holds nothing.
      expect(Paths.resolveSyncHolding(NodePath, tree.cwd, "d", "read").held).toBeUndefined()
      expect(Paths.resolveSyncHolding(NodePath, tree.cwd, "d/missing.txt", "read").held).toBeUndefined()
      // And through `read_file`, the same answers as before the change.
      fresh()
      const { attempt } = yield* harness(tree.cwd, "default")
      const outcome = yield* attempt("read_file", { path: "d/a.txt" })
      expect(shownText(outcome)).toContain(INSIDE)
    }))

  it.live("/dev/zero in bypass mode is refused, not read into memory", () =>
    Effect.gen(function*() {
      const tree = makeTree()
      const { attempt } = yield* harness(tree.cwd, "bypass")
      for (const tool of ["read_file", "edit_file", "grep"] as const) {
        const outcome = yield* attempt(tool, tool === "read_file" ? { path: "/dev/zero" } : tool === "grep" ? { pattern: "x", path: "/dev/zero" } : { path: "/dev/zero", oldString: "x", newString: "y" })
        expect(outcome.stage === "ran" && Either.isLeft(outcome.result) && outcome.result.left.errorCode, tool).toBe("not_a_regular_file")
      }
    }))

  it.live("/proc files (size 0, any length) are read with the byte cap counted while reading", () =>
    Effect.gen(function*() {
      const tree = makeTree()
      expect(NodeFs.statSync("/proc/self/maps").size).toBe(0)
      const small = yield* harness(tree.cwd, "bypass", { maxFileBytes: 64 })
      const capped = yield* small.attempt("read_file", { path: "/proc/self/maps" })
      expect(capped.stage === "ran" && Either.isLeft(capped.result) && capped.result.left.errorCode).toBe("file_too_large")
      const normal = yield* harness(tree.cwd, "bypass")
      const status = yield* normal.attempt("read_file", { path: "/proc/self/status" })
      expect(shownText(status)).toContain(`Pid:\t${process.pid}`)
    }))

  it.live("a process's environment (the agent's keys) is read by no file tool, in bypass too: by name, through a link, by grep", () =>
    Effect.gen(function*() {
      const tree = makeTree()
      const secret = `sk-agent-secret-${process.pid}`
      // What the kernel shows in /proc/<pid>/environ is the environment a process started with: a child that has one.
      const child = ownedByTest(spawn("sleep", ["30"], { env: { ...process.env, ANTHROPIC_API_KEY: secret }, stdio: "ignore" }))
      try {
        expect(NodeFs.readFileSync(`/proc/${child.pid}/environ`, "utf8")).toContain(secret)
        NodeFs.symlinkSync(`/proc/${child.pid}/environ`, NodePath.join(tree.cwd, "env_link"))
        const tools = yield* harness(tree.cwd, "bypass")
        for (const path of [`/proc/${child.pid}/environ`, "/proc/self/environ", "env_link"]) {
          const read = yield* tools.attempt("read_file", { path })
          expect(read.stage === "ran" && Either.isLeft(read.result) && read.result.left.errorCode, path).toBe("forbidden_path")
        }
        const grep = yield* tools.attempt("grep", { pattern: "sk-agent-secret", path: `/proc/${child.pid}` })
        expect(shownText(grep)).not.toContain(secret)
      } finally {
        child.kill("SIGKILL")
      }
    }))
})

describe("bounded walks", () => {
  it.live("three links to .. and a loop back inside finish at once, each folder walked once", () =>
    Effect.gen(function*() {
      const tree = makeTree()
      for (const name of ["up1", "up2", "up3"]) NodeFs.symlinkSync("..", NodePath.join(tree.cwd, name))
      NodeFs.mkdirSync(NodePath.join(tree.cwd, "sub"))
      for (const name of ["back1", "back2", "back3"]) NodeFs.symlinkSync("..", NodePath.join(tree.cwd, "sub", name))
      const { attempt } = yield* harness(tree.cwd, "default")
      const found = shownText(yield* attempt("grep", { pattern: "SECRET" }))
      expect(found.split("\n").filter((l) => l.includes(INSIDE))).toEqual([`a.txt:1:${INSIDE}`])
      // up1-3 and the six links of the tree lead out; back1-3 lead to the workspace, already walked.
      expect(found).toContain("[skipped 9 links that lead outside the working directory]")
    }))

  /** A folder inside a fresh tree, away from the tree's links out. */
  const insideTree = () => {
    const cwd = NodePath.join(makeTree().cwd, "inside")
    NodeFs.mkdirSync(cwd)
    return cwd
  }

  it.live("mend48: a folder whose name is not UTF-8 is said to be one, not a link that leads outside", () =>
    Effect.gen(function*() {
      const cwd = insideTree()
      NodeFs.writeFileSync(NodePath.join(cwd, "a.txt"), "hit\n")
      NodeFs.mkdirSync(Buffer.concat([Buffer.from(`${cwd}/`), Buffer.from([0x66, 0xff])]))
      const { attempt } = yield* harness(cwd, "default")
      const found = shownText(yield* attempt("grep", { pattern: "hit" }))
      expect(found).toContain("[skipped 1 folder or link whose name is not UTF-8]")
      expect(found).not.toContain("links that lead")
      expect(found).not.toContain("link that leads")
    }))

  it.live("mend48: a file name holding `:<digits>:` is quoted, so it cannot forge a match's line", () =>
    Effect.gen(function*() {
      const cwd = insideTree()
      NodeFs.writeFileSync(NodePath.join(cwd, "a.txt:1:token=x"), "hit\n")
      const { attempt } = yield* harness(cwd, "default")
      const found = shownText(yield* attempt("grep", { pattern: "hit" }))
      expect(found.split("\n")).toContain(`"a.txt:1:token=x":1:hit`)
    }))

  it.live("entries and depth are bounded, and the result says which bound cut the walk", () =>
    Effect.gen(function*() {
      const tree = makeTree()
      for (let i = 0; i < 20; i++) NodeFs.writeFileSync(NodePath.join(tree.cwd, `f${String(i).padStart(2, "0")}.txt`), "hit\n")
      NodeFs.mkdirSync(NodePath.join(tree.cwd, "deep", "er", "still"), { recursive: true })
      NodeFs.writeFileSync(NodePath.join(tree.cwd, "deep", "er", "still", "bottom.txt"), "hit\n")
      const few = yield* harness(tree.cwd, "default", { maxWalkEntries: 5 })
      const cut = shownText(yield* few.attempt("grep", { pattern: "hit" }))
      expect(cut).toContain("[search stopped after 5 entries; narrow the path]")
      expect(cut.split("\n").filter((l) => l.includes(":1:hit")).length).toBeLessThanOrEqual(5)
      expect(shownText(yield* few.attempt("list_dir", {}))).toContain("[… listing stopped after 5 entries]")
      const shallow = yield* harness(tree.cwd, "default", { maxWalkDepth: 2 })
      const shallowFound = shownText(yield* shallow.attempt("grep", { pattern: "hit" }))
      expect(shallowFound).not.toContain("bottom.txt")
      expect(shallowFound).toContain("[folders deeper than 2 levels were not searched]")
    }))

  it.effect("the walk has a time budget (TestClock: a budget of zero stops at the first entry)", () =>
    Effect.gen(function*() {
      const tree = makeTree()
      const { attempt } = yield* harness(tree.cwd, "default", { walkTimeBudget: 0 })
      const found = shownText(yield* attempt("grep", { pattern: "SECRET" }))
      expect(found).toContain("[search stopped after 0ms; narrow the path]")
    }))

  it.live("a pattern that backtracks for ever freezes nothing, is cancelled at once, and meets the time limit", () =>
    Effect.gen(function*() {
      const tree = makeTree()
      NodeFs.writeFileSync(NodePath.join(tree.cwd, "evil.txt"), `${"a".repeat(60)}!\n`)
      const tools = yield* harness(tree.cwd, "acceptEdits")
      // (a+)+$ on sixty a's and a "!" backtracks about 2^60 times: longer than anyone waits.
      const search = yield* Effect.fork(tools.attempt("grep", { pattern: "(a+)+$" }))
      // Meanwhile the process still does its own work: another tool call writes a file.
      const write = yield* tools.attempt("write_file", { path: "meanwhile.txt", content: "done" })
      expect(write.stage === "ran" && Either.isRight(write.result)).toBe(true)
      expect(Option.isNone(yield* Fiber.poll(search))).toBe(true)
      // A cancel stops the search (its worker is terminated mid-match).
      yield* Fiber.interrupt(search)
      const limited = yield* harness(tree.cwd, "default", { fileTimeout: "1 second" })
      const outcome = yield* limited.attempt("grep", { pattern: "(a+)+$" })
      expect(outcome.stage === "ran" && Either.isLeft(outcome.result) && outcome.result.left.errorCode, JSON.stringify(outcome)).toBe("timeout")
    }))

  it.live("every file tool has a time limit: past it the call fails with timeout", () =>
    Effect.gen(function*() {
      // A limit far below what the work needs (thousands of files, several system calls each), so a
      // busier machine only makes the outcome surer.
      const tree = makeTree()
      for (let i = 0; i < 2000; i++) NodeFs.writeFileSync(NodePath.join(tree.cwd, `f${i}.txt`), "SECRET\n")
      const { attempt } = yield* harness(tree.cwd, "default", { fileTimeout: "1 millis" })
      const outcome = yield* attempt("grep", { pattern: "SECRET" })
      expect(outcome.stage === "ran" && Either.isLeft(outcome.result) && outcome.result.left).toMatchObject({
        errorCode: "timeout",
        message: "grep did not finish within 1ms and was stopped"
      })
    }))
})
