/**
 * A stdio server is stopped with every process it started: a server run through `sh -c`, a wrapper
 * or `npx` is the agent's grandchild, and stopping only the direct child left it running.
 */
import { execFileSync, spawn } from "node:child_process"
import { randomUUID } from "node:crypto"
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

/** The processes whose command line holds `marker` (`pgrep -f`). */
const pgrep = (marker: string): ReadonlyArray<number> => {
  try {
    return execFileSync("pgrep", ["-f", marker], { encoding: "utf8" }).trim().split("\n").map(Number)
  } catch {
    // pgrep's exit code 1: none.
    return []
  }
}

/** Waits until `condition` holds, looking again every 20 ms: the test's timeout its only bound. */
const until = async (condition: () => boolean) => {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 20))
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

  // reach45: a server that exits on its own (a crash) while a process its wrapper started runs on.
  // Before, the guardian ended with the server at once: a helper that ignores SIGTERM ran on (the
  // agent's SIGTERM at the server's end is all it got) until the next call or the session's end — for
  // good once the agent was gone — and one that held the server's stdout kept the agent from seeing
  // the end, so the call in flight waited for its time limit (here an hour: these tests timed out).
  // Every process of the tree carries a unique marker in its command line, found with pgrep.
  const helper = `process.on("SIGTERM", () => {}); setInterval(() => {}, 1 << 30)`
  const server = new URL("../fixtures/mcp/server.mjs", import.meta.url).pathname
  it.effect.each([
    ["holds the server's stdout", ""],
    ["has its own stdio", " </dev/null >/dev/null 2>&1"]
  ])("a server that crashes while a helper its wrapper started %s: the call fails at once, and the helper is stopped with the group, the session going on", ([, redirect]) =>
    Effect.gen(function*() {
      const cwd = yield* tempDir
      const marker = `effect-agent-crash-${randomUUID()}`
      onTestFinished(() => {
        for (const pid of pgrep(marker)) if (alive(pid)) process.kill(pid, "SIGKILL")
      })
      const script = `"$0" -e "$1" "$2-helper"${redirect} & "$0" "$3" "$2-server"; exit $?`
      const crashing = { command: "/bin/sh", args: ["-c", script, process.execPath, helper, marker, server], timeout: 3_600_000 }
      const scope = yield* Scope.make()
      const tools = yield* Scope.extend(McpTools.make({ servers: { crashing }, cwd }), scope)
      yield* Effect.promise(() => until(() => pgrep(`${marker}-helper`).length === 1))
      // The guardian, the wrapper, the server and the helper.
      const tree = pgrep(marker)
      expect(tree).toHaveLength(4)
      const prepared = yield* tools.router.prepare({ toolCallId: "crash", tool: "mcp__crashing__crash", args: {} }, cwd)
      const crashed = yield* Effect.either(tools.router.execute(prepared, {} as never))
      expect(Either.isLeft(crashed) && crashed.left.errorCode).toBe("mcp_server_failed")
      // Nothing of that tree is left, the scope still open (the call's end started the server again, a tree of its own).
      yield* Effect.promise(() => until(() => tree.every((pid) => !alive(pid))))
      yield* Scope.close(scope, Exit.void)
      yield* Effect.promise(() => until(() => pgrep(marker).length === 0))
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
