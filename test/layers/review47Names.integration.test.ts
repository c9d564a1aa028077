/**
 * Review 47, the path findings. Node reads a file name that is not UTF-8 (a byte 0xff) as U+FFFD, a
 * name that is not there: each place below looked the name up as text, missed it, and went on as if
 * it were not there (the cases failed before).
 *
 * - F1: a repository in such a folder was not found by the sandbox's search: its config and hooks
 *   were not kept read-only, and one a command made was not said.
 * - F2: a link out with such a name, in a tree a command walks or matched by a glob, was not seen as
 *   outside, and a snapshot of the workspace left such a file out without saying so.
 * - F3 (sandbox off): after a missing folder, `..` went up but the names after it were taken as
 *   given, unlooked-at: `mkdir -p d/../link-out/x` counted as inside and wrote through the link.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { afterAll, describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import { execFileSync } from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import type { Json } from "../../src/domain/Json.js"
import * as MemoryBlobStore from "../../src/layers/blobs/MemoryBlobStore.js"
import * as CommandLine from "../../src/layers/workspace/CommandLine.js"
import * as CommandPaths from "../../src/layers/workspace/CommandPaths.js"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import * as PreImages from "../../src/layers/workspace/PreImages.js"
import * as Sandbox from "../../src/layers/workspace/Sandbox.js"
import * as WorkspaceTools from "../../src/layers/WorkspaceTools.js"
import type { PreparedCall, ToolContext } from "../../src/services/ToolRouter.js"
import { WorkspaceCheckpoints } from "../../src/services/WorkspaceCheckpoints.js"
import { outsideTmp } from "../tmp.js"

const root = NodeFs.realpathSync(NodeFs.mkdtempSync(NodePath.join(outsideTmp(), "effect-agent-review47-")))
afterAll(() => NodeFs.rmSync(root, { recursive: true, force: true }))
let folders = 0
/** A fresh folder with `ws/` (the cwd) and `out/` beside it. */
const fresh = () => {
  const base = NodePath.join(root, String(++folders))
  const cwd = NodePath.join(base, "ws")
  const out = NodePath.join(base, "out")
  NodeFs.mkdirSync(cwd, { recursive: true })
  NodeFs.mkdirSync(out)
  NodeFs.writeFileSync(NodePath.join(out, "secret.txt"), "SECRET\n")
  return { cwd, out }
}
/** `folder/<0xff><rest>` as bytes: a name that is not UTF-8. */
const badName = (folder: string, rest = "") => Buffer.concat([Buffer.from(`${folder}/`), Buffer.from([0xff]), Buffer.from(rest)])

const tools = (sandbox: "required" | "off" | "auto" = "auto") => Effect.runSync(WorkspaceTools.make({ sandbox }).pipe(Effect.provide(NodeContext.layer)))
const prepare = (shell: ReturnType<typeof tools>, cwd: string, command: string) =>
  Effect.runPromise(shell.prepare({ toolCallId: "c1", tool: "shell", args: { command } }, cwd))
/** What the policy decides for `command` once "always" was said to it. */
const afterAlways = async (shell: ReturnType<typeof tools>, cwd: string, command: string, mode?: "acceptEdits") => {
  const call = await prepare(shell, cwd, command)
  return { call, ...PermissionPolicy.decide(mode === undefined ? {} : { mode }, { sessionId: "s", cwd, call, remembered: [{ scope: call.scope, decision: "allow", sequence: 1 }] }) }
}
const execute = async (shell: ReturnType<typeof tools>, cwd: string, call: PreparedCall) => {
  const context: ToolContext = { sessionId: "s", turnId: "t", cwd, progress: () => Effect.void }
  const result = await Effect.runPromise(Effect.either(shell.execute(call, context)))
  return Either.isRight(result) ? String(result.right.result as Json) : `[failed: ${result.left.errorCode}] ${result.left.message}`
}

const detected = await Effect.runPromise(Sandbox.detect)

describe("F1: a repository in a folder whose name is not UTF-8", () => {
  it("is found by the sandbox's search, named with its bytes escaped (a submodule's and a worktree's git folder too)", async () => {
    const { cwd } = fresh()
    execFileSync("git", ["init", "-q", cwd])
    execFileSync("git", ["init", "-q", "tmp"], { cwd })
    NodeFs.renameSync(NodePath.join(cwd, "tmp"), badName(cwd))
    NodeFs.mkdirSync(badName(`${cwd}/.git/modules`), { recursive: true })
    NodeFs.mkdirSync(badName(`${cwd}/.git/worktrees`), { recursive: true })
    const found = await Sandbox.findRepositories(cwd)
    expect(found.unnamed).toEqual(expect.arrayContaining(["\\xff/.git", ".git/modules/\\xff", ".git/worktrees/\\xff"]))
    // The search never names a path it cannot bind.
    expect([...found.gitDirs].filter((dir) => dir.includes("\uFFFD"))).toEqual([])
  })

  it.runIf(detected._tag === "Workspace")("a command is not run while one is there; one a command made is said", async () => {
    const { cwd } = fresh()
    execFileSync("git", ["init", "-q", cwd])
    const shell = tools("required")
    // Made by a command: said in its result.
    NodeFs.writeFileSync(NodePath.join(cwd, "setup.sh"), `d="$(printf '\\377')"\ngit init -q "$d"\necho done\n`)
    const made = await execute(shell, cwd, await prepare(shell, cwd, "sh setup.sh"))
    expect(made).toContain("done")
    expect(made).toContain("\\xff/.git")
    // There now: the next command does not run (its config could not be kept read-only).
    const refused = await execute(shell, cwd, await prepare(shell, cwd, `printf '[core]\\n\\tfsmonitor = touch pwned\\n' >> "$(printf '\\377')/.git/config"; echo wrote`))
    expect(refused).not.toMatch(/^wrote/m)
    expect(refused).toContain("\\xff/.git")
    expect(NodeFs.readFileSync(badName(cwd, "/.git/config"), "utf8")).not.toContain("fsmonitor")
  })

  it.runIf(detected._tag === "Workspace")("a hooks folder (`core.hooksPath`) whose path is not UTF-8: no command runs, none is made under another name", async () => {
    const { cwd } = fresh()
    execFileSync("git", ["init", "-q", cwd])
    NodeFs.appendFileSync(NodePath.join(cwd, ".git", "config"), Buffer.concat([Buffer.from("[core]\n\thooksPath = "), Buffer.from([0xff]), Buffer.from("hooks\n")]))
    const shell = tools("required")
    const refused = await execute(shell, cwd, await prepare(shell, cwd, "echo ran"))
    expect(refused).not.toMatch(/^ran/m)
    expect(refused).toContain("\\xef\\xbf\\xbdhooks")
    expect(NodeFs.readdirSync(cwd)).toEqual([".git"])
  })
})

describe("F2: a link out whose name is not UTF-8", () => {
  it("in a tree `grep -R` walks, or matched by a glob the shell expands: outside, so \"always\" still asks", async () => {
    const { cwd, out } = fresh()
    NodeFs.mkdirSync(NodePath.join(cwd, "bad"))
    NodeFs.symlinkSync(out, badName(`${cwd}/bad`, "x"))
    // A folder with such a name: what is in it cannot be looked at by name either.
    NodeFs.mkdirSync(NodePath.join(cwd, "deep"))
    NodeFs.mkdirSync(badName(`${cwd}/deep`))
    NodeFs.symlinkSync(out, badName(`${cwd}/deep`, "/escape"))
    const shell = tools()
    for (const command of ["grep -R SECRET bad", "grep -R SECRET deep"]) {
      const decided = await afterAlways(shell, cwd, command)
      expect.soft(decided.decision, command).toBe("ask")
    }
    // What a shell would pass on for `bad/*` cannot be named as text: not checked (the path is outside, with that note).
    for (const glob of ["bad/*", "bad/*/secret.txt"]) {
      const word = CommandLine.tokenize(glob).tokens[0] as CommandLine.Word
      expect.soft(await CommandPaths.expandGlob(word, cwd, cwd, 1000), glob).toEqual({ unchecked: expect.stringContaining("\\xffx") })
    }
  })

  it.scoped("a shell snapshot says it left such a file out", () =>
    Effect.gen(function*() {
      const { cwd } = fresh()
      NodeFs.writeFileSync(badName(cwd), "before\n")
      const cp = yield* WorkspaceCheckpoints
      const call: PreparedCall = { toolCallId: "c", tool: "shell", args: { command: "sh" }, risk: "destructive", sequential: false, paths: [], scope: "shell", input: { command: "sh" } }
      const capture = (yield* cp.watch(call, cwd))!
      NodeFs.writeFileSync(badName(cwd), "after\n")
      const { incomplete } = yield* capture
      expect(incomplete).toContain("\\xff")
    }).pipe(Effect.provide(PreImages.layer().pipe(Layer.provideMerge(MemoryBlobStore.layer)))))
})

describe("F3 (sandbox off): `..` after a missing folder", () => {
  it("looks at the names after it again: a link out there is outside, and nothing is written through it", async () => {
    const { cwd, out } = fresh()
    NodeFs.symlinkSync(out, NodePath.join(cwd, "link-out"))
    NodeFs.writeFileSync(NodePath.join(cwd, "payload"), "x\n")
    const shell = tools("off")
    for (const command of ["mkdir -p d/../link-out/evil", "install -D payload e/../link-out/installed", "mkdir -p f/g/../../link-out/deeper"]) {
      const decided = await afterAlways(shell, cwd, command, "acceptEdits")
      expect.soft(decided.decision, command).toBe("ask")
      if (decided.decision === "allow") await execute(shell, cwd, decided.call)
    }
    expect(NodeFs.readdirSync(out)).toEqual(["secret.txt"])
  })
})
