/**
 * Trust 45: after a command the sandbox puts back `package.json`'s git hook runners' keys and sets
 * aside the hook managers' configs the command made (`HookConfigsKept`). A sibling subagent's file
 * tool write the user allowed while the command ran — its `lint-staged` changed, a `.lintstagedrc.json`
 * made — was reverted with the command's. The two calls here share one set of workspace tools, as
 * sibling subagents do; the command waits on a named pipe the test writes once the file tool's write
 * has returned, so the write falls inside the command's run every time (no sleeps).
 */
import { execFileSync } from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { afterAll, describe, expect, it } from "vitest"
import * as Sandbox from "../../src/layers/workspace/Sandbox.js"
import * as WorkspaceTools from "../../src/layers/WorkspaceTools.js"
import type { ToolContext } from "../../src/services/ToolRouter.js"
import { holders } from "../fifo.js"

const root = NodeFs.realpathSync(NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "effect-agent-approved-writes-")))
afterAll(() => NodeFs.rmSync(root, { recursive: true, force: true }))

const original = `{\n  "name": "app",\n  "version": "1.0.0",\n  "lint-staged": {\n    "*.js": "eslint"\n  }\n}\n`
let n = 0
const repository = () => {
  const cwd = NodePath.join(root, `repo${++n}`)
  NodeFs.mkdirSync(cwd)
  execFileSync("git", ["init", "-q"], { cwd })
  NodeFs.writeFileSync(NodePath.join(cwd, "package.json"), original)
  return cwd
}

const tools = Effect.runSync(WorkspaceTools.make({ sandbox: "required" }).pipe(Effect.provide(NodeContext.layer)))
const context = (cwd: string): ToolContext => ({ sessionId: "s", turnId: "t", cwd, progress: () => Effect.void })
/** A call run as if approved: its result, or its failure. */
const call = (cwd: string, tool: string, args: Record<string, unknown>): Promise<string> =>
  Effect.runPromise(Effect.gen(function*() {
    const prepared = yield* tools.prepare({ toolCallId: `c${tool}`, tool, args: args as never }, cwd)
    const result = yield* Effect.either(tools.execute(prepared, context(cwd)))
    return Either.isRight(result) ? result.right.result : `[failed: ${result.left.errorCode}] ${result.left.message}`
  }))

/**
 * Runs `then` (in sh) in the sandbox after `meanwhile` (the file tools' calls) has returned: the
 * command holds `started` open once it runs (its files looked at before), then reads `go`.
 */
const commandAround = async (cwd: string, meanwhile: () => Promise<void>, then = "true") => {
  const started = holders(NodePath.join(cwd, "started"))
  execFileSync("mkfifo", [NodePath.join(cwd, "go")])
  const command = call(cwd, "shell", { command: `sh -c 'exec 3>started; read line <go; ${then}; echo done'` })
  const first = await Promise.race([started.opened.then(() => "started"), command])
  expect(first).toBe("started")
  await meanwhile()
  await NodeFs.promises.writeFile(NodePath.join(cwd, "go"), "go\n")
  const said = await command
  await started.closed
  NodeFs.rmSync(NodePath.join(cwd, "started"))
  NodeFs.rmSync(NodePath.join(cwd, "go"))
  return said
}

const detected = await Effect.runPromise(Sandbox.detect)
describe.runIf(detected._tag === "Workspace")("a file tool's write while a command runs is not the command's to undo", () => {
  it("package.json's lint-staged changed by an approved edit stays as the edit left it", async () => {
    const cwd = repository()
    const file = NodePath.join(cwd, "package.json")
    const said = await commandAround(cwd, async () => {
      expect(await call(cwd, "edit_file", { path: "package.json", oldString: `"eslint"`, newString: `"prettier --write"` })).toContain("Replaced 1")
    })
    expect(said).toBe("done\n")
    expect(NodeFs.readFileSync(file, "utf8")).toBe(original.replace(`"eslint"`, `"prettier --write"`))
  })

  it("a .lintstagedrc.json made by an approved write stays, not set aside", async () => {
    const cwd = repository()
    const said = await commandAround(cwd, async () => {
      expect(await call(cwd, "write_file", { path: ".lintstagedrc.json", content: `{ "*.js": "eslint" }\n` })).toContain("Wrote")
    })
    expect(said).toBe("done\n")
    expect(NodeFs.readFileSync(NodePath.join(cwd, ".lintstagedrc.json"), "utf8")).toBe(`{ "*.js": "eslint" }\n`)
    expect(NodeFs.existsSync(NodePath.join(cwd, ".lintstagedrc.json.set-aside"))).toBe(false)
  })

  it("what the command changes after the write is still undone, back to what the write left", async () => {
    const cwd = repository()
    const file = NodePath.join(cwd, "package.json")
    const said = await commandAround(cwd, async () => {
      expect(await call(cwd, "edit_file", { path: "package.json", oldString: `"eslint"`, newString: `"prettier --write"` })).toContain("Replaced 1")
      expect(await call(cwd, "write_file", { path: ".lintstagedrc.json", content: `{ "*.js": "eslint" }\n` })).toContain("Wrote")
    }, `sed -i "s/prettier --write/touch owned/; s/1.0.0/2.0.0/" package.json; echo "{}" >> .lintstagedrc.json`)
    expect(said).toContain("lint-staged (put back as they were)")
    expect(said).toContain(".lintstagedrc.json.set-aside")
    expect(NodeFs.readFileSync(file, "utf8")).toBe(original.replace(`"eslint"`, `"prettier --write"`).replace("1.0.0", "2.0.0"))
    expect(NodeFs.readFileSync(NodePath.join(cwd, ".lintstagedrc.json"), "utf8")).toBe(`{ "*.js": "eslint" }\n`)
    expect(NodeFs.readFileSync(NodePath.join(cwd, ".lintstagedrc.json.set-aside"), "utf8")).toBe(`{ "*.js": "eslint" }\n{}\n`)
  })

  it("a key the command changed before an edit that left the keys alone is not the edit's: put back as it was before the command", async () => {
    const cwd = repository()
    const file = NodePath.join(cwd, "package.json")
    // The command changes lint-staged first; the file tool's edit (a version, no hook key) carries it over.
    const started = holders(NodePath.join(cwd, "started"))
    execFileSync("mkfifo", [NodePath.join(cwd, "go")])
    const command = call(cwd, "shell", { command: `sh -c 'sed -i "s/eslint/touch owned/" package.json; exec 3>started; read line <go; echo done'` })
    expect(await Promise.race([started.opened.then(() => "started"), command])).toBe("started")
    expect(await call(cwd, "edit_file", { path: "package.json", oldString: `"1.0.0"`, newString: `"1.0.1"` })).toContain("Replaced 1")
    await NodeFs.promises.writeFile(NodePath.join(cwd, "go"), "go\n")
    expect(await command).toContain("lint-staged (put back as they were)")
    await started.closed
    expect(NodeFs.readFileSync(file, "utf8")).toBe(original.replace("1.0.0", "1.0.1"))
  })
})
