/**
 * An engine whose tools are MCP servers' (real subprocesses) beside the workspace tools, and the
 * small readers the MCP tests share: turns run against it, the tool calls' ends, a server's marker files.
 */
import { spawn } from "node:child_process"
import { existsSync, readFileSync } from "node:fs"
import { join } from "node:path"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import { FakeModel, type ScriptedResponse } from "../../src/layers/FakeModelProvider.js"
import * as McpTools from "../../src/layers/McpTools.js"
import * as MemoryEventStore from "../../src/layers/MemoryEventStore.js"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import * as WorkspaceTools from "../../src/layers/WorkspaceTools.js"
import { collect, engineLayer } from "../helpers.js"
import { ownedByTest } from "../processes.js"

export const lines = (dir: string, file: string) => existsSync(join(dir, file)) ? readFileSync(join(dir, file), "utf8").trim().split("\n") : []

/** Waits (in real time: the test's clock is a TestClock) until the server has written a line to its marker file. */
export const untilWritten = (dir: string, file: string) =>
  Effect.promise(() =>
    new Promise<void>((resolve) => {
      const check = setInterval(() => {
        if (lines(dir, file).length > 0) {
          clearInterval(check)
          resolve()
        }
      }, 20)
    })
  )

export interface Run {
  readonly servers: McpTools.Options["servers"]
  readonly responses: ReadonlyArray<ScriptedResponse>
  readonly policy?: PermissionPolicy.Options
  readonly options?: Partial<McpTools.Options>
  readonly cwd: string
}

export const engineWith = (run: Run) =>
  engineLayer(MemoryEventStore.layer, { responses: run.responses }).pipe(
    Layer.provide(Layer.mergeAll(
      McpTools.extend({ servers: run.servers, cwd: run.cwd, ...run.options }).pipe(Layer.provide(WorkspaceTools.layer())),
      PermissionPolicy.layer(run.policy ?? {})
    )),
    Layer.provide(NodeContext.layer)
  )

/** Runs turns (one per message) and returns the log and the requests the model got. */
export const turns = (run: Run, messages: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const engine = yield* SessionEngine
    const session = yield* engine.createSession({ cwd: run.cwd, client: "test" })
    for (const userMessage of messages) yield* collect(engine.runTurn({ sessionId: session.sessionId, userMessage }))
    const events = yield* collect(engine.replaySession({ sessionId: session.sessionId }))
    const requests = yield* Effect.flatMap(FakeModel, (m) => m.requests)
    return { events, requests }
  }).pipe(Effect.provide(engineWith(run)))

/** How each tool call ended: `tool.completed` or `tool.failed`'s payload. */
export const ends = (events: ReadonlyArray<AgentEvent>) =>
  events.flatMap((e) => (e.type === "tool.completed" || e.type === "tool.failed" ? [e.payload] : []))

/**
 * Starts an HTTP fixture (`test/fixtures/mcp/<script>`, given a port file and `args`) on a free port
 * of 127.0.0.1 and waits for its port; its `/mcp` URL. Stopped with the scope.
 */
export const httpFixture = (script: string, dir: string, env: Record<string, string> = {}, args: ReadonlyArray<string> = []) =>
  Effect.acquireRelease(
    Effect.async<{ readonly url: string; readonly stop: () => void }>((resume) => {
      const portFile = join(dir, `port-${Math.random().toString(36).slice(2)}`)
      const path = new URL(`../fixtures/mcp/${script}`, import.meta.url).pathname
      const child = ownedByTest(spawn(process.execPath, [path, ...args, portFile], { env: { ...process.env, ...env }, stdio: "ignore" }))
      const poll = setInterval(() => {
        const port = existsSync(portFile) ? readFileSync(portFile, "utf8") : ""
        if (port === "") return
        clearInterval(poll)
        resume(Effect.succeed({ url: `http://127.0.0.1:${port}/mcp`, stop: () => child.kill("SIGKILL") }))
      }, 20)
    }),
    (server) => Effect.sync(server.stop)
  )
