/**
 * A path other than the workspace tools' `path` with a NUL or a lone surrogate (half of a UTF-16
 * pair). The system cuts a path at a NUL, and Node writes a lone surrogate as U+FFFD, so the file
 * reached is another name than the one the rules and the question saw. Round 16 refused both in
 * the workspace tools' `path`; here the other ways a model or a client names a file. Failed before:
 * `task`'s `cwd` with a NUL failed `cwd_outside` (a question of where, not of what it is) and with a
 * lone surrogate was resolved and started in the U+FFFD folder; a shell word with a lone surrogate
 * was resolved as a path named by the lone surrogate; `WorkingDirectory.canonical` (HTTP's and
 * ACP's new sessions, the Promise façade) took a lone surrogate. Each now fails typed before any
 * permission is asked — and the JSON Schema the model is shown is unchanged.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import { mkdirSync, mkdtempSync, realpathSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import * as TaskTool from "../../src/layers/TaskTool.js"
import * as WorkingDirectory from "../../src/layers/WorkingDirectory.js"
import * as WorkspaceTools from "../../src/layers/WorkspaceTools.js"

const cwd = realpathSync(mkdtempSync(join(tmpdir(), "effect-agent-unnamable-")))
afterAll(() => rmSync(cwd, { recursive: true, force: true }))
// The folder a lone surrogate is written as: a clone can ship it.
mkdirSync(join(cwd, "sub\ufffd"))
const router = TaskTool.make(Effect.runSync(WorkspaceTools.make().pipe(Effect.provide(NodeContext.layer))))
const failure = async (tool: string, args: Record<string, unknown>) => {
  const exit = await Effect.runPromiseExit(router.prepare({ toolCallId: "c", tool, args: args as never }, cwd))
  return Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error : undefined
}

describe("a NUL or a lone surrogate in a path fails invalid_arguments before any question", () => {
  const task = { description: "d", prompt: "p" }
  it.each([
    ["task cwd, NUL", "task", { ...task, cwd: "sub\u0000/../.." }, "cwd cannot name a directory: it contains a NUL byte"],
    ["task cwd, lone surrogate", "task", { ...task, cwd: "sub\ud800" }, "cwd cannot name a directory: it contains a lone surrogate (half of a UTF-16 pair)"],
    ["shell word, lone surrogate", "shell", { command: "cat sub\udc00" }, "command cannot be read: it contains a lone surrogate (half of a UTF-16 pair)"],
    ["shell redirection, lone surrogate", "shell", { command: "echo a > \ud800x" }, "command cannot be read: it contains a lone surrogate (half of a UTF-16 pair)"],
    ["grep path, NUL", "grep", { pattern: "x", path: "a\u0000" }, "path cannot name a file: it contains a NUL byte"]
  ])("%s", async (_, tool, args, message) => {
    expect(await failure(tool, args)).toMatchObject({ errorCode: "invalid_arguments", message })
  })

  it("a pair that makes one character, and grep's pattern (a regular expression, not a path), are still taken", async () => {
    expect(await failure("task", { ...task, cwd: "sub\ufffd" })).toBeUndefined()
    expect(await failure("shell", { command: "echo \ud83d\ude00" })).toBeUndefined()
    expect(await failure("grep", { pattern: "\udfff" })).toBeUndefined()
  })

  it("a new session's cwd (HTTP, ACP, the Promise façade) with a lone surrogate is refused as invalid input", async () => {
    const exit = await Effect.runPromiseExit(WorkingDirectory.canonical(join(cwd, "sub\ud800")))
    expect(exit).toMatchObject({ _tag: "Failure", cause: { error: { _tag: "InvalidInput", field: "cwd", detail: "cannot name a directory: it contains a lone surrogate (half of a UTF-16 pair)" } } })
    expect(await Effect.runPromise(WorkingDirectory.canonical(join(cwd, "sub\ufffd")))).toBe(join(cwd, "sub\ufffd"))
  })

  it("the task tool's schema, as the model is shown it, has no new constraint", () => {
    expect(TaskTool.definition.inputSchema).toMatchObject({ properties: { cwd: { type: "string" } } })
    expect(JSON.stringify(TaskTool.definition.inputSchema)).not.toMatch(/surrogate|NUL|pattern/)
  })
})
