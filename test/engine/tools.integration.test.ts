import { readdirSync, readFileSync } from "node:fs"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as FileSystem from "@effect/platform/FileSystem"
import { describe, expect, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import type { Message } from "../../src/domain/Transcript.js"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import { FakeModel } from "../../src/layers/FakeModelProvider.js"
import * as MemoryEventStore from "../../src/layers/MemoryEventStore.js"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import * as WorkspaceTools from "../../src/layers/WorkspaceTools.js"
import { AgentHooks, type Hooks } from "../../src/services/AgentHooks.js"
import type * as FakeModelProvider from "../../src/layers/FakeModelProvider.js"
import type * as SessionEngineModule from "../../src/engine/SessionEngine.js"
import { collect, engineLayer, expectWellFormedLog, tempDir, type TestTool, testTools, typesOf } from "../helpers.js"

type Answer = "allow" | "deny" | "always" | undefined

/** Whether a process runs (a zombie waiting to be reaped has already stopped). */
const isAlive = (pid: number): boolean => {
  try {
    return !readFileSync(`/proc/${pid}/stat`, "utf8").split(" ")[2]!.startsWith("Z")
  } catch {
    return false
  }
}

/** The pids of processes whose command line contains `text`, once `count` of them run. */
const waitForPids = async (text: string, count: number): Promise<Array<number>> => {
  for (;;) {
    // Each process's command line is read once: one may exit between two reads (the shell's wrapper does).
    const sleeps = readdirSync("/proc").filter((name) => /^\d+$/.test(name)).map(Number).filter((pid) => {
      try {
        const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8")
        return cmdline.startsWith("sleep") && cmdline.includes(text) && isAlive(pid)
      } catch {
        return false
      }
    })
    if (sleeps.length >= count) return sleeps
    await new Promise((resolve) => setImmediate(resolve))
  }
}

/** Runs a turn, answering each `ask` with `answer(toolCallId)`; returns the emitted events. */
const runTurn = (sessionId: string, userMessage: string, answer: (event: AgentEvent) => Answer = () => undefined) =>
  Effect.flatMap(SessionEngine, (engine) =>
    collect(engine.runTurn({ sessionId, userMessage }).pipe(
      Stream.tap((event) => {
        if (event.type !== "permission.resolved" || event.payload.decision !== "ask") return Effect.void
        const decision = answer(event)
        return decision === undefined
          ? Effect.void
          : engine.resolvePermission({
            sessionId,
            toolCallId: event.payload.toolCallId,
            decision: decision === "always" ? "allow" : decision,
            remember: decision === "always"
          })
      })
    )))

const newSession = (cwd = "/work") => Effect.map(Effect.flatMap(SessionEngine, (e) => e.createSession({ cwd, client: "test" })), (s) => s.sessionId)
const replay = (sessionId: string) => Effect.flatMap(SessionEngine, (e) => collect(e.replaySession({ sessionId })))
const requests = Effect.flatMap(FakeModel, (m) => m.requests)
const toolMessages = (messages: ReadonlyArray<Message>) => messages.filter((m): m is Extract<Message, { role: "tool" }> => m.role === "tool")

/** The engine on a memory store with the given tools, policy and script. */
const withTools = (
  tools: Layer.Layer<import("../../src/services/ToolRouter.js").ToolRouter>,
  script: FakeModelProvider.Options,
  policy: PermissionPolicy.Options = {},
  options: SessionEngineModule.Options = {},
  hooks?: Hooks
) => {
  const base = engineLayer(MemoryEventStore.layer, script, options).pipe(
    Layer.provideMerge(tools),
    Layer.provideMerge(PermissionPolicy.layer(policy))
  )
  return hooks === undefined ? base : base.pipe(Layer.provideMerge(Layer.succeed(AgentHooks, hooks)))
}

const echoTool: TestTool = { run: (args) => Effect.succeed({ result: `echo ${JSON.stringify(args)}` }) }

describe("the tool loop", () => {
  it.effect("a denied call never starts; the model sees the denial and answers", () =>
    Effect.gen(function*() {
      const sessionId = yield* newSession()
      const events = yield* runTurn(sessionId, "write it")
      expect(typesOf(events)).toEqual([
        "turn.started", "user.message", "context.built", "model.tool_call_requested", "permission.requested", "permission.resolved",
        "tool.failed", "model.delta", "turn.completed"
      ])
      expect(events.find((e) => e.type === "permission.resolved")!.payload).toMatchObject({ decision: "deny", policy: "read-only/no-writes", actor: "policy" })
      expect(events.find((e) => e.type === "tool.failed")!.payload).toMatchObject({ errorCode: "permission_denied" })
      const [, second] = yield* requests
      expect(toolMessages(second!.messages)).toEqual([
        { role: "tool", toolCallId: "call_1", tool: "writer", isError: true, content: expect.stringContaining("Permission denied") }
      ])
      expect(events.at(-1)!.payload).toEqual({ stopReason: "final" })
      expectWellFormedLog(yield* replay(sessionId))
    }).pipe(Effect.provide(withTools(
      testTools({ writer: { ...echoTool, risk: "write" } }),
      { responses: [{ toolCalls: [{ tool: "writer", args: {} }] }, { chunks: ["I may not write here."] }] },
      { mode: "readOnly" }
    ))))

  it.effect("an unknown tool and invalid arguments fail without permission events; the model sees why", () =>
    Effect.gen(function*() {
      const sessionId = yield* newSession()
      const events = yield* runTurn(sessionId, "go")
      const failed = events.filter((e) => e.type === "tool.failed").map((e) => e.payload)
      expect(failed).toEqual([
        expect.objectContaining({ toolCallId: "call_1", errorCode: "unknown_tool" }),
        expect.objectContaining({ toolCallId: "call_2", errorCode: "invalid_arguments" })
      ])
      expect(events.some((e) => e.type === "permission.requested")).toBe(false)
      const [, second] = yield* requests
      expect(toolMessages(second!.messages).map((m) => [m.toolCallId, m.isError])).toEqual([["call_1", true], ["call_2", true]])
      expect(toolMessages(second!.messages)[1]!.content).toContain("path")
      expect(events.at(-1)!.payload).toEqual({ stopReason: "final" })
    }).pipe(Effect.provide(withTools(
      WorkspaceTools.layer().pipe(Layer.provide(NodeContext.layer)),
      { responses: [{ toolCalls: [{ tool: "teleport", args: {} }, { tool: "read_file", args: { path: 42 } }] }, { chunks: ["ok"] }] }
    ))))

  it.effect("maxSteps ends the turn with max_steps after closing the calls it could not run", () =>
    Effect.gen(function*() {
      const sessionId = yield* newSession()
      const events = yield* runTurn(sessionId, "loop")
      expect(events.filter((e) => e.type === "tool.completed")).toHaveLength(1)
      expect(events.filter((e) => e.type === "tool.failed").map((e) => e.payload)).toEqual([
        expect.objectContaining({ toolCallId: "call_2", errorCode: "max_steps" })
      ])
      expect(events.at(-1)!.payload).toEqual({ stopReason: "error", errorCode: "max_steps" })
      expect(yield* requests).toHaveLength(2)
      expectWellFormedLog(yield* replay(sessionId))
    }).pipe(Effect.provide(withTools(
      testTools({ echo: echoTool }),
      { responses: [1, 2, 3].map(() => ({ toolCalls: [{ tool: "echo", args: {} }] })) },
      {},
      { maxSteps: 2 }
    ))))

  it.effect("maxToolCalls ends the turn the same way", () =>
    Effect.gen(function*() {
      const sessionId = yield* newSession()
      const events = yield* runTurn(sessionId, "many")
      expect(events.at(-1)!.payload).toEqual({ stopReason: "error", errorCode: "max_steps" })
      expect(events.filter((e) => e.type === "tool.started")).toHaveLength(0)
      expect(events.filter((e) => e.type === "tool.failed")).toHaveLength(3)
      expectWellFormedLog(yield* replay(sessionId))
    }).pipe(Effect.provide(withTools(
      testTools({ echo: echoTool }),
      { responses: [{ toolCalls: [1, 2, 3].map(() => ({ tool: "echo", args: {} })) }] },
      {},
      { maxToolCalls: 2 }
    ))))

  it.effect("two calls, the first slower: completion-order events, call-order results for the model", () =>
    Effect.gen(function*() {
      const sessionId = yield* newSession()
      const turn = yield* Effect.fork(runTurn(sessionId, "both"))
      yield* TestClock.adjust("10 seconds")
      const events = yield* Fiber.join(turn)
      const order = events.filter((e) => e.type === "tool.started" || e.type === "tool.completed").map((e) => `${e.type}:${e.payload.toolCallId}`)
      expect(order).toEqual(["tool.started:call_1", "tool.started:call_2", "tool.completed:call_2", "tool.completed:call_1"])
      const [, second] = yield* requests
      expect(second!.messages.map((m) => m.role === "tool" ? `tool:${m.toolCallId}:${m.content}` : m.role)).toEqual([
        "user", "assistant", "tool:call_1:slow done", "tool:call_2:fast done"
      ])
      expectWellFormedLog(yield* replay(sessionId))
    }).pipe(Effect.provide(withTools(
      testTools({
        slow: { run: () => Effect.as(Effect.sleep("2 seconds"), { result: "slow done" }) },
        fast: { run: () => Effect.as(Effect.sleep("1 second"), { result: "fast done" }) }
      }),
      { responses: [{ toolCalls: [{ tool: "slow", args: {} }, { tool: "fast", args: {} }] }, { chunks: ["both done"] }] }
    ))))

  it.effect("a sequential tool never runs beside another call", () =>
    Effect.gen(function*() {
      const sessionId = yield* newSession()
      const turn = yield* Effect.fork(runTurn(sessionId, "go"))
      yield* TestClock.adjust("10 seconds")
      const events = yield* Fiber.join(turn)
      const order = events.filter((e) => e.type === "tool.started" || e.type === "tool.completed").map((e) => `${e.type}:${e.payload.toolCallId}`)
      expect(order).toEqual(["tool.started:call_1", "tool.completed:call_1", "tool.started:call_2", "tool.completed:call_2", "tool.started:call_3", "tool.completed:call_3"])
    }).pipe(Effect.provide(withTools(
      testTools({
        step: { run: () => Effect.as(Effect.sleep("1 second"), { result: "ok" }) },
        migrate: { sequential: true, run: () => Effect.as(Effect.sleep("1 second"), { result: "migrated" }) }
      }),
      { responses: [{ toolCalls: [{ tool: "step", args: {} }, { tool: "migrate", args: {} }, { tool: "step", args: {} }] }, { chunks: ["ok"] }] }
    ))))

  it.effect("a tool that throws ends as tool.failed the model can read; the turn goes on", () =>
    Effect.gen(function*() {
      const sessionId = yield* newSession()
      const events = yield* runTurn(sessionId, "go")
      expect(events.find((e) => e.type === "tool.failed")!.payload).toEqual({
        toolCallId: "call_1",
        errorCode: "tool_error",
        message: "The broken tool failed unexpectedly."
      })
      expect(JSON.stringify(events)).not.toContain("kaboom")
      expect(events.at(-1)!.payload).toEqual({ stopReason: "final" })
    }).pipe(Effect.provide(withTools(
      testTools({ broken: { run: () => Effect.die(new Error("kaboom at /srv/app/tool.ts:1:1")) } }),
      { responses: [{ toolCalls: [{ tool: "broken", args: {} }] }, { chunks: ["recovered"] }] }
    ))))

  it.effect("progress reported after a call settled is dropped", () =>
    Effect.gen(function*() {
      const sessionId = yield* newSession()
      const turn = yield* Effect.fork(runTurn(sessionId, "go"))
      yield* TestClock.adjust("10 seconds")
      yield* Fiber.join(turn)
      const log = yield* replay(sessionId)
      expect(log.filter((e) => e.type === "tool.progress").map((e) => e.payload.message)).toEqual(["working"])
      const completed = log.findIndex((e) => e.type === "tool.completed")
      expect(log.slice(completed).some((e) => e.type === "tool.progress")).toBe(false)
      expectWellFormedLog(log)
    }).pipe(Effect.provide(withTools(
      testTools({
        chatty: {
          run: (_, context) =>
            Effect.gen(function*() {
              yield* context.progress("working")
              // A leftover timer reports after the result is in.
              yield* Effect.forkDaemon(Effect.zipRight(Effect.sleep("1 second"), context.progress("too late")))
              return { result: "done" }
            })
        }
      }),
      { responses: [{ toolCalls: [{ tool: "chatty", args: {} }] }, { chunks: ["ok"], delay: "5 seconds" }] }
    ))))
})

describe("approvals", () => {
  const script = { responses: [{ toolCalls: [{ tool: "writer", args: {} }] }, { toolCalls: [{ tool: "writer", args: {} }] }, { chunks: ["done"] }] }
  const tools = testTools({ writer: { ...echoTool, risk: "write" } })

  it.effect("ask pauses the call; the turn's state says so; resolvePermission continues it", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const sessionId = yield* newSession()
      const asked = yield* Deferred.make<string>()
      const turn = yield* engine.runTurn({ sessionId, userMessage: "write" }).pipe(
        Stream.tap((e) => e.type === "permission.resolved" && e.payload.decision === "ask" ? Deferred.succeed(asked, e.payload.toolCallId) : Effect.void),
        collect,
        Effect.fork
      )
      const toolCallId = yield* Deferred.await(asked)
      const state = yield* engine.sessionState({ sessionId })
      expect(state.openTurn?.status).toEqual({ state: "running", phase: "awaiting_approval" })
      expect((yield* engine.pendingApprovals({ sessionId })).map((c) => c.toolCallId)).toEqual([toolCallId])
      const wrong = yield* Effect.either(engine.resolvePermission({ sessionId, toolCallId: "call_404", decision: "allow" }))
      expect(wrong._tag === "Left" && wrong.left._tag).toBe("ApprovalNotPending")
      yield* engine.resolvePermission({ sessionId, toolCallId, decision: "allow", remember: true })
      const events = yield* Fiber.join(turn)
      const resolved = events.filter((e) => e.type === "permission.resolved").map((e) => e.payload)
      expect(resolved).toEqual([
        { toolCallId: "call_1", decision: "ask", policy: "default/write", actor: "policy" },
        { toolCallId: "call_1", decision: "allow", actor: "user", remember: true, scope: "writer" },
        { toolCallId: "call_2", decision: "allow", policy: "remembered", actor: "policy" }
      ])
      expect(events.at(-1)!.payload).toEqual({ stopReason: "final" })
      // Replaying the log reproduces the remembered decision.
      expect((yield* engine.sessionState({ sessionId })).remembered).toEqual([{ scope: "writer", decision: "allow", sequence: 8 }])
      expectWellFormedLog(yield* replay(sessionId))
    }).pipe(Effect.provide(withTools(tools, script))))

  it.effect("a user deny fails the call with permission_denied and the model re-plans", () =>
    Effect.gen(function*() {
      const sessionId = yield* newSession()
      const events = yield* runTurn(sessionId, "write", () => "deny")
      expect(events.filter((e) => e.type === "tool.failed").map((e) => e.payload)).toEqual([
        { toolCallId: "call_1", errorCode: "permission_denied", message: "Permission denied by the user." },
        { toolCallId: "call_2", errorCode: "permission_denied", message: "Permission denied by the user." }
      ])
      expect(events.some((e) => e.type === "tool.started")).toBe(false)
      expect(events.at(-1)!.payload).toEqual({ stopReason: "final" })
    }).pipe(Effect.provide(withTools(tools, script))))

  it.effect("cancel while waiting for approval closes the call cancelled and the turn cancelled", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const sessionId = yield* newSession()
      const asked = yield* Deferred.make<void>()
      const turn = yield* engine.runTurn({ sessionId, userMessage: "write" }).pipe(
        Stream.tap((e) => e.type === "permission.resolved" && e.payload.decision === "ask" ? Deferred.succeed(asked, undefined) : Effect.void),
        collect,
        Effect.fork
      )
      yield* Deferred.await(asked)
      yield* engine.cancelTurn({ sessionId })
      const events = yield* Fiber.join(turn)
      expect(typesOf(events).slice(-2)).toEqual(["tool.failed", "turn.completed"])
      expect(events.at(-2)!.payload).toMatchObject({ toolCallId: "call_1", errorCode: "cancelled" })
      expect(events.at(-1)!.payload).toEqual({ stopReason: "cancelled" })
      expect(yield* engine.pendingApprovals({ sessionId })).toEqual([])
      expectWellFormedLog(yield* replay(sessionId))
    }).pipe(Effect.provide(withTools(tools, script))))

  it.effect("an approval timeout denies the call", () =>
    Effect.gen(function*() {
      const sessionId = yield* newSession()
      const turn = yield* Effect.fork(runTurn(sessionId, "write"))
      yield* TestClock.adjust("1 minute")
      yield* TestClock.adjust("1 minute")
      const events = yield* Fiber.join(turn)
      expect(events.filter((e) => e.type === "permission.resolved").map((e) => e.payload).slice(0, 2)).toEqual([
        { toolCallId: "call_1", decision: "ask", policy: "default/write", actor: "policy" },
        { toolCallId: "call_1", decision: "deny", policy: "approval-timeout", actor: "policy" }
      ])
      expect(events.at(-1)!.payload).toEqual({ stopReason: "final" })
      expectWellFormedLog(yield* replay(sessionId))
    }).pipe(Effect.provide(withTools(tools, script, {}, { approvalTimeout: "30 seconds" }))))
})

describe("hooks", () => {
  it.effect("transformContext failing keeps the request; beforeToolCall blocks; afterToolResult rewrites; shouldStopAfterStep stops", () =>
    Effect.gen(function*() {
      const sessionId = yield* newSession()
      const events = yield* runTurn(sessionId, "go")
      const failed = events.filter((e) => e.type === "tool.failed").map((e) => e.payload)
      expect(failed).toEqual([{ toolCallId: "call_1", errorCode: "blocked", message: "The call was blocked: no secrets." }])
      expect(events.find((e) => e.type === "tool.completed")!.payload).toEqual({ toolCallId: "call_2", result: "[rewritten] echo {}" })
      // The step ran its tools, then the hook stopped the turn before a second request.
      expect(events.at(-1)!.payload).toEqual({ stopReason: "final" })
      expect(yield* requests).toHaveLength(1)
    }).pipe(Effect.provide(withTools(
      testTools({ secret: echoTool, echo: echoTool }),
      { responses: [{ toolCalls: [{ tool: "secret", args: {} }, { tool: "echo", args: {} }] }, { chunks: ["never asked"] }] },
      {},
      {},
      {
        transformContext: () => Effect.fail("transform broke"),
        beforeToolCall: (call) => Effect.succeed(call.tool === "secret" ? { _tag: "Block", reason: "no secrets" } : { _tag: "Proceed" }),
        afterToolResult: (_, output) => Effect.succeed({ ...output, result: `[rewritten] ${output.result}` }),
        shouldStopAfterStep: () => Effect.succeed(true)
      }
    ))))

  it.effect("transformContext rewrites what the model receives", () =>
    Effect.gen(function*() {
      const sessionId = yield* newSession()
      yield* runTurn(sessionId, "hello")
      const [first] = yield* requests
      expect(first!.system).toBe("injected rules")
    }).pipe(Effect.provide(withTools(testTools({}), { responses: [{ chunks: ["hi"] }] }, {}, {}, {
      transformContext: (request) => Effect.succeed({ ...request, system: "injected rules" })
    }))))
})

describe("tools in a real workspace", () => {
  const workspaceEngine = (script: FakeModelProvider.Options, policy: PermissionPolicy.Options = {}) =>
    withTools(WorkspaceTools.layer().pipe(Layer.provide(NodeContext.layer)), script, policy)

  it.scoped("paths escaping cwd by .., an absolute path or a symlink are asked about, and untouched when denied", () =>
    Effect.gen(function*() {
      const fs = yield* FileSystem.FileSystem
      const root = yield* tempDir
      const cwd = `${root}/project`
      yield* fs.makeDirectory(`${cwd}/src`, { recursive: true })
      yield* fs.writeFileString(`${root}/secret.txt`, "top secret")
      yield* fs.symlink(root, `${cwd}/src/escape`)
      const calls = [
        { tool: "read_file", args: { path: "../secret.txt" } },
        { tool: "read_file", args: { path: `${root}/secret.txt` } },
        { tool: "read_file", args: { path: "src/escape/secret.txt" } },
        { tool: "write_file", args: { path: "../planted.txt", content: "x" } },
        { tool: "write_file", args: { path: "src/escape/planted2.txt", content: "x" } },
        { tool: "list_dir", args: { path: "src/escape" } }
      ]
      yield* Effect.gen(function*() {
        const sessionId = yield* newSession(cwd)
        const asked: Array<string> = []
        const events = yield* runTurn(sessionId, "look around", (e) => {
          if (e.type === "permission.resolved") asked.push(e.payload.toolCallId)
          return "deny"
        })
        const resolved = events.filter((e) => e.type === "permission.resolved" && e.payload.actor === "policy")
        expect(resolved.map((e) => e.payload)).toEqual(calls.map((_, i) => expect.objectContaining({ toolCallId: `call_${i + 1}`, decision: "ask", policy: "outside-cwd" })))
        expect(asked).toHaveLength(calls.length)
        expect(events.some((e) => e.type === "tool.started")).toBe(false)
        expect(JSON.stringify(events)).not.toContain("top secret")
        expect(yield* fs.exists(`${root}/planted.txt`)).toBe(false)
        expect(yield* fs.exists(`${root}/planted2.txt`)).toBe(false)
        expectWellFormedLog(yield* replay(sessionId))
      }).pipe(Effect.provide(workspaceEngine({ responses: [{ toolCalls: calls }, { chunks: ["ok"] }] })))
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("an approved read outside cwd runs: the user's approval is what lets it out", () =>
    Effect.gen(function*() {
      const fs = yield* FileSystem.FileSystem
      const root = yield* tempDir
      yield* fs.makeDirectory(`${root}/project`)
      yield* fs.writeFileString(`${root}/notes.txt`, "outside notes")
      yield* Effect.gen(function*() {
        const sessionId = yield* newSession(`${root}/project`)
        const events = yield* runTurn(sessionId, "read it", () => "allow")
        expect(events.find((e) => e.type === "tool.completed")!.payload).toEqual({ toolCallId: "call_1", result: "outside notes" })
      }).pipe(Effect.provide(workspaceEngine({ responses: [{ toolCalls: [{ tool: "read_file", args: { path: "../notes.txt" } }] }, { chunks: ["ok"] }] })))
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("chaining, pipes, redirection, substitution, sudo and rm -rf are denied and never run", () =>
    Effect.gen(function*() {
      const fs = yield* FileSystem.FileSystem
      const cwd = yield* tempDir
      yield* fs.writeFileString(`${cwd}/keep.txt`, "keep")
      const commands = [
        "ls; touch chained.txt",
        "ls && touch chained2.txt",
        "cat keep.txt | tee piped.txt",
        "echo hi > redirected.txt",
        "echo $(touch substituted.txt)",
        "echo `touch backticked.txt`",
        "touch bg.txt &",
        "sudo touch root.txt",
        "rm -rf keep.txt"
      ]
      yield* Effect.gen(function*() {
        const sessionId = yield* newSession(cwd)
        // Even answering "allow" to anything asked: these are denied by the policy before any ask.
        const events = yield* runTurn(sessionId, "try", () => "allow")
        const denied = events.filter((e) => e.type === "tool.failed").map((e) => e.payload)
        expect(denied).toHaveLength(commands.length)
        for (const failure of denied) {
          expect(failure.errorCode).toBe("permission_denied")
          expect(failure.message).toContain("command-hazards")
        }
        expect(events.some((e) => e.type === "tool.started")).toBe(false)
        expect((yield* fs.readDirectory(cwd)).sort()).toEqual(["keep.txt"])
      }).pipe(Effect.provide(workspaceEngine({
        responses: [{ toolCalls: commands.map((command) => ({ tool: "shell", args: { command } })) }, { chunks: ["ok"] }]
      }, { mode: "bypass" })))
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("a rule can allow shell syntax explicitly; then it runs through /bin/sh", () =>
    Effect.gen(function*() {
      const cwd = yield* tempDir
      yield* Effect.gen(function*() {
        const sessionId = yield* newSession(cwd)
        const events = yield* runTurn(sessionId, "count")
        expect(events.find((e) => e.type === "tool.completed")!.payload).toEqual({ toolCallId: "call_1", result: "3\n", exitCode: 0 })
      }).pipe(Effect.provide(workspaceEngine({
        responses: [{ toolCalls: [{ tool: "shell", args: { command: "printf 'a\\nb\\nc\\n' | wc -l" } }] }, { chunks: ["three"] }]
      }, { rules: [{ name: "allow-wc-pipe", tool: "shell", command: "printf * | wc -l", decision: "allow" }] })))
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("cancel while a shell command runs kills its whole process group and closes the call cancelled", () =>
    Effect.gen(function*() {
      const cwd = yield* tempDir
      const marker = `${process.pid}${Date.now() % 100000}`
      // Two sleeps in one process group, started through /bin/sh (a rule allows the background job).
      const command = `sleep 300.${marker}1 & sleep 300.${marker}2; wait`
      yield* Effect.gen(function*() {
        const engine = yield* SessionEngine
        const sessionId = yield* newSession(cwd)
        const started = yield* Deferred.make<void>()
        const turn = yield* engine.runTurn({ sessionId, userMessage: "wait" }).pipe(
          Stream.tap((e) => e.type === "tool.started" ? Deferred.succeed(started, undefined) : Effect.void),
          collect,
          Effect.fork
        )
        yield* Deferred.await(started)
        const pids = yield* Effect.promise(() => waitForPids(`300.${marker}`, 2))
        expect(pids).toHaveLength(2)
        yield* engine.cancelTurn({ sessionId })
        for (const pid of pids) expect(isAlive(pid), `process ${pid} survived the cancel`).toBe(false)
        const events = yield* Fiber.join(turn)
        expect(events.at(-2)!.payload).toMatchObject({ toolCallId: "call_1", errorCode: "cancelled" })
        expect(events.at(-1)!.payload).toEqual({ stopReason: "cancelled" })
        expectWellFormedLog(yield* replay(sessionId))
      }).pipe(Effect.provide(workspaceEngine({
        responses: [{ toolCalls: [{ tool: "shell", args: { command } }] }]
      }, { rules: [{ name: "allow-sleeps", tool: "shell", command: "sleep * & sleep *; wait", decision: "allow" }] })))
    }).pipe(Effect.provide(NodeContext.layer)))
})

describe("the running phase", () => {
  it.effect("while one call still runs, the turn is tool_running even after another call completed", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const sessionId = yield* newSession()
      const fastDone = yield* Deferred.make<void>()
      const turn = yield* engine.runTurn({ sessionId, userMessage: "both" }).pipe(
        Stream.tap((e) => e.type === "tool.completed" && e.payload.toolCallId === "call_2" ? Deferred.succeed(fastDone, undefined) : Effect.void),
        collect,
        Effect.fork
      )
      yield* TestClock.adjust("1 second")
      yield* Deferred.await(fastDone)
      expect((yield* engine.sessionState({ sessionId })).openTurn?.status).toEqual({ state: "running", phase: "tool_running" })
      yield* TestClock.adjust("10 seconds")
      yield* Fiber.join(turn)
    }).pipe(Effect.provide(withTools(
      testTools({
        slow: { run: () => Effect.as(Effect.sleep("5 seconds"), { result: "slow done" }) },
        fast: { run: () => Effect.as(Effect.sleep("1 second"), { result: "fast done" }) }
      }),
      { responses: [{ toolCalls: [{ tool: "slow", args: {} }, { tool: "fast", args: {} }] }, { chunks: ["done"] }] }
    ))))
})
