/**
 * Red team 7, item 2: the git settings a command could still get the user's next `git status` to
 * run, past the pinned `.git/config`:
 * - a file the pinned config includes (`[include] path = ../.gitconfig`, `[includeIf "gitdir:…"]`)
 *   that is inside cwd: a command wrote `core.fsmonitor` there;
 * - a relative `core.hooksPath` set in the user's global config (`.githooks`, each repository's own):
 *   a command wrote `.githooks/pre-commit`;
 * - a `core.hooksPath` set in an included file;
 * - `core.worktree`, which moves the root a relative `core.hooksPath` is taken from.
 * Commands get each read-only (an include that does not exist yet is made empty first), and the
 * file tools ask before writing them, in every mode that asks.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { execFileSync } from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import * as Sandbox from "../../src/layers/workspace/Sandbox.js"
import * as WorkspaceTools from "../../src/layers/WorkspaceTools.js"
import type { PreparedCall, ToolContext } from "../../src/services/ToolRouter.js"
import { outsideTmp } from "../tmp.js"

const detected = await Effect.runPromise(Sandbox.detect)
const branch = detected._tag === "Workspace" ? "[sandbox]" : `[no sandbox here: ${detected._tag}]`
const root = NodeFs.realpathSync(NodeFs.mkdtempSync(NodePath.join(outsideTmp(), "effect-agent-git-includes-")))
const home = NodePath.join(root, "home")
NodeFs.mkdirSync(home)
const saved = { HOME: process.env.HOME, XDG_CONFIG_HOME: process.env.XDG_CONFIG_HOME, GIT_CONFIG_GLOBAL: process.env.GIT_CONFIG_GLOBAL }
beforeAll(() => {
  process.env.HOME = home
  delete process.env.XDG_CONFIG_HOME
  delete process.env.GIT_CONFIG_GLOBAL
})
afterAll(() => {
  for (const [name, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[name]
    else process.env[name] = value
  }
  NodeFs.rmSync(root, { recursive: true, force: true })
})

let count = 0
const repository = () => {
  const cwd = NodePath.join(root, `ws${++count}`)
  NodeFs.mkdirSync(cwd)
  execFileSync("git", ["init", "-q"], { cwd, env: { ...process.env, HOME: home } })
  return cwd
}
const tools = Effect.runSync(WorkspaceTools.make({ sandbox: "required" }).pipe(Effect.provide(NodeContext.layer)))
const output = (cwd: string, command: string) => {
  const context: ToolContext = { sessionId: "s", turnId: "t", cwd, progress: () => Effect.void }
  return Effect.runPromise(Effect.either(Effect.flatMap(tools.prepare({ toolCallId: "c", tool: "shell", args: { command } }, cwd), (call) => tools.execute(call, context))))
    .then((result) => Either.isRight(result) ? result.right.result : `[failed: ${result.left.errorCode}] ${result.left.message}`)
}
const prepare = (cwd: string, path: string): Promise<PreparedCall> =>
  Effect.runPromise(tools.prepare({ toolCallId: "c1", tool: "write_file", args: { path, content: "[core]\n\tfsmonitor = touch /x\n" } as never }, cwd))
const expectProtected = async (cwd: string, path: string) => {
  const call = await prepare(cwd, path)
  expect(PermissionPolicy.decide({ mode: "acceptEdits" }, { sessionId: "s", cwd, call, remembered: [] }), path).toEqual({ decision: "ask", policy: "protected-path" })
}

describe(`git settings past the pinned config ${branch}`, () => {
  it("a file the repository's config includes, inside cwd: the file tools ask before writing it", async () => {
    const cwd = repository()
    NodeFs.appendFileSync(NodePath.join(cwd, ".git", "config"), "[include]\n\tpath = ../shared.gitconfig\n[includeIf \"gitdir:/\"]\n\tpath = ../conf/when.gitconfig\n")
    NodeFs.writeFileSync(NodePath.join(cwd, "shared.gitconfig"), "[user]\n\tname = t\n")
    await expectProtected(cwd, "shared.gitconfig")
    // Not there yet: git reads it once it is.
    await expectProtected(cwd, "conf/when.gitconfig")
  })

  it("a core.hooksPath in an included file, and a relative one in the user's global config, are protected for the file tools", async () => {
    const cwd = repository()
    NodeFs.writeFileSync(NodePath.join(home, ".gitconfig"), "[core]\n\thooksPath = .githooks\n")
    try {
      await expectProtected(cwd, ".githooks/pre-commit")
    } finally {
      NodeFs.rmSync(NodePath.join(home, ".gitconfig"))
    }
    const included = repository()
    NodeFs.mkdirSync(NodePath.join(root, "outside-conf"), { recursive: true })
    NodeFs.writeFileSync(NodePath.join(root, "outside-conf", "hooks.gitconfig"), "[core]\n\thooksPath = inc-hooks\n")
    NodeFs.appendFileSync(NodePath.join(included, ".git", "config"), `[include]\n\tpath = ${NodePath.join(root, "outside-conf", "hooks.gitconfig")}\n`)
    await expectProtected(included, "inc-hooks/pre-commit")
    // A file your own config includes, in the workspace.
    const team = repository()
    NodeFs.writeFileSync(NodePath.join(home, ".gitconfig"), `[include]\n\tpath = ${NodePath.join(team, "team.gitconfig")}\n`)
    try {
      await expectProtected(team, "team.gitconfig")
    } finally {
      NodeFs.rmSync(NodePath.join(home, ".gitconfig"))
    }
  })

  if (detected._tag !== "Workspace") return

  it(`${branch} a command cannot write a file the pinned config includes (existing or not yet), nor a hooks folder an include or the global config names`, async () => {
    const cwd = repository()
    NodeFs.appendFileSync(NodePath.join(cwd, ".git", "config"), "[include]\n\tpath = ../shared.gitconfig\n[includeIf \"gitdir:/\"]\n\tpath = ../conf/when.gitconfig\n")
    NodeFs.writeFileSync(NodePath.join(cwd, "shared.gitconfig"), "[user]\n\tname = t\n")
    expect(await output(cwd, "sh -c 'printf \"[core]\\n\\tfsmonitor = touch pwned\\n\" >> shared.gitconfig'")).toContain("Read-only file system")
    expect(NodeFs.readFileSync(NodePath.join(cwd, "shared.gitconfig"), "utf8")).toBe("[user]\n\tname = t\n")
    expect(await output(cwd, "sh -c 'mkdir -p conf; printf \"[core]\\n\\tfsmonitor = touch pwned\\n\" > conf/when.gitconfig'")).toMatch(/Read-only file system|Permission denied/)
    expect(NodeFs.readFileSync(NodePath.join(cwd, "conf", "when.gitconfig"), "utf8")).toBe("")
    // git status there runs nothing
    execFileSync("git", ["status", "--short"], { cwd, env: { ...process.env, HOME: home } })
    expect(NodeFs.existsSync(NodePath.join(cwd, "pwned"))).toBe(false)

    const global = repository()
    NodeFs.writeFileSync(NodePath.join(home, ".gitconfig"), "[core]\n\thooksPath = .githooks\n")
    try {
      expect(await output(global, "sh -c 'mkdir -p .githooks && echo touch pwned > .githooks/pre-commit'")).toMatch(/Read-only file system|Permission denied/)
      expect(NodeFs.existsSync(NodePath.join(global, ".githooks", "pre-commit"))).toBe(false)
    } finally {
      NodeFs.rmSync(NodePath.join(home, ".gitconfig"))
    }
  })
})
