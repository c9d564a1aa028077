/**
 * A stdio server is stopped with every process it started: a server run through `sh -c`, a wrapper
 * or `npx` is the agent's grandchild, and stopping only the direct child left it running.
 */
import { spawn } from "node:child_process"
import { createInterface } from "node:readline"
import { resolve } from "node:path"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { expect, layer } from "@effect/vitest"
import { onTestFinished } from "vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import * as McpTools from "../../src/layers/McpTools.js"
import { tempDir } from "../helpers.js"
import { alive, ownedByTest } from "../processes.js"

const stubborn = new URL("../fixtures/mcp/stubborn.mjs", import.meta.url).pathname
/** `sh -c` running the server as its child (`; echo` keeps `sh` from exec-ing it), as a wrapper does. */
const wrapped = { command: "/bin/sh", args: ["-c", `"${process.execPath}" "${stubborn}"; echo ended >&2`] }

/** Waits until `pid` is gone, looking again every 20 ms: the condition itself, the test's timeout its only bound. */
const untilGone = async (pid: number) => {
  while (alive(pid)) await new Promise((resolve) => setTimeout(resolve, 20))
}

/** What the fixture starts outlives a failing test (it ignores SIGTERM): killed when the test ends. */
const killedAtEnd = (pid: number) => {
  onTestFinished(() => {
    if (alive(pid)) process.kill(pid, "SIGKILL")
  })
  return pid
}

const pidOf = (tools: McpTools.McpTools) =>
  Effect.gen(function*() {
    const prepared = yield* tools.router.prepare({ toolCallId: "pid", tool: "mcp__stubborn__pid", args: {} }, "/")
    const output = yield* tools.router.execute(prepared, {} as never)
    return killedAtEnd(Number(output.result))
  })

layer(NodeContext.layer)("a stdio server's processes", (it) => {
  // The server ignores SIGTERM and its stdin's end, under `sh -c`, which passes no signal on: before,
  // a call's timeout stopped `sh` alone, and each restart left one more server running, after the
  // session's end too.
  it.effect("a call that times out stops the server's whole process group, and so does the scope's end", () =>
    Effect.gen(function*() {
      const cwd = yield* tempDir
      const scope = yield* Scope.make()
      const tools = yield* Scope.extend(McpTools.make({ servers: { stubborn: { ...wrapped, timeout: 300 } }, cwd }), scope)
      const first = yield* pidOf(tools)
      const prepared = yield* tools.router.prepare({ toolCallId: "hang", tool: "mcp__stubborn__hang", args: {} }, cwd)
      const hung = yield* Effect.either(tools.router.execute(prepared, {} as never))
      expect(Either.isLeft(hung) && hung.left.errorCode).toBe("timeout")
      yield* Effect.promise(() => untilGone(first))
      // The next call started it again; the scope's end stops that one the same way.
      const second = yield* pidOf(tools)
      expect(second).not.toBe(first)
      yield* Scope.close(scope, Exit.void)
      yield* Effect.promise(() => untilGone(second))
    }).pipe(Effect.scoped))

  // What the parent-death signal (`setpriv --pdeathsig KILL`) holds now that a server leads a process
  // group of its own: the process the agent started dies with the agent, even by SIGKILL. (Only that
  // one: a process it started in turn is not the agent's child, and is stopped only by the agent.)
  it.scoped("an agent killed by SIGKILL takes the process it started for a server with it", () =>
    Effect.gen(function*() {
      const cwd = yield* tempDir
      const dist = resolve(import.meta.dirname, "../../dist/layers/McpTools.js")
      const agentScript = `
        import * as Effect from "effect/Effect"
        import * as McpTools from ${JSON.stringify(dist)}
        const server = ${JSON.stringify({ command: process.execPath, args: [stubborn] })}
        await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
          const tools = yield* McpTools.make({ servers: { stubborn: server }, cwd: ${JSON.stringify(cwd)} })
          const prepared = yield* tools.router.prepare({ toolCallId: "pid", tool: "mcp__stubborn__pid", args: {} }, "/")
          const output = yield* tools.router.execute(prepared, {})
          console.log(output.result)
          yield* Effect.never
        })))`
      // Run from the repository, where `effect` resolves.
      const agent = ownedByTest(spawn(process.execPath, ["--input-type=module", "-e", agentScript], { cwd: resolve(import.meta.dirname, "../.."), stdio: ["ignore", "pipe", "inherit"] }))
      const server = yield* Effect.promise(() => new Promise<number>((done) => createInterface({ input: agent.stdout! }).once("line", (line) => done(killedAtEnd(Number(line))))))
      expect(alive(server)).toBe(true)
      agent.kill("SIGKILL")
      yield* Effect.promise(() => untilGone(server))
    }))
})
