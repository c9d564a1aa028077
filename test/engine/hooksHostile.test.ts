/**
 * Agent hooks that throw (a plain JS bug, not an Effect failure) or answer something of the wrong
 * shape: each falls back as src/services/AgentHooks.ts and docs/embedding.md promise, never ending
 * the turn (review61a found them ending it `internal_error`, and a misspelt verdict letting a call run).
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import * as MemoryEventStore from "../../src/layers/MemoryEventStore.js"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import { AgentHooks, type Hooks } from "../../src/services/AgentHooks.js"
import type * as FakeModelProvider from "../../src/layers/FakeModelProvider.js"
import { collect, engineLayer, type TestTool, testTools } from "../helpers.js"

const echoTool: TestTool = { run: (args) => Effect.succeed({ result: `echo ${JSON.stringify(args)}` }) }

const withHooks = (script: FakeModelProvider.Options, hooks: Hooks) =>
  engineLayer(MemoryEventStore.layer, script, {}).pipe(
    Layer.provideMerge(testTools({ echo: echoTool })),
    Layer.provideMerge(PermissionPolicy.layer({})),
    Layer.provideMerge(Layer.succeed(AgentHooks, hooks))
  )

const script: FakeModelProvider.Options = { responses: [{ toolCalls: [{ tool: "echo", args: { a: 1 } }] }, { chunks: ["done"] }] }

const turn = Effect.gen(function*() {
  const engine = yield* SessionEngine
  const { sessionId } = yield* engine.createSession({ cwd: "/tmp", client: "test" })
  const events = yield* collect(engine.runTurn({ sessionId, userMessage: "go" }))
  return events
})

const summary = (events: ReadonlyArray<AgentEvent>) => ({
  tools: events.filter((e) => e.type === "tool.completed" || e.type === "tool.failed").map((e) => `${e.type}:${JSON.stringify(e.payload)}`),
  end: events.at(-1)!.payload
})

const boom = (): never => {
  throw new Error("hook bug /home/secret/path")
}

describe("hooks that throw synchronously (a plain JS bug, not an Effect failure)", () => {
  it.effect("beforeToolCall throws: documented 'a failure blocks too' — the call blocked, the turn goes on", () =>
    Effect.gen(function*() {
      const events = yield* turn
      expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
      expect(events.filter((e) => e.type === "tool.failed").map((e) => e.payload.errorCode)).toEqual(["blocked"])
    }).pipe(Effect.provide(withHooks(script, { beforeToolCall: () => boom() }))))

  it.effect("afterToolResult throws: documented 'a failure keeps the original'", () =>
    Effect.gen(function*() {
      const events = yield* turn
      expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
      // The tool ran: its own result is kept, never "did not finish".
      expect(summary(events).tools).toEqual([`tool.completed:${JSON.stringify({ toolCallId: "call_1", result: 'echo {"a":1}' })}`])
    }).pipe(Effect.provide(withHooks(script, { afterToolResult: () => boom() }))))

  it.effect("shouldStopAfterStep throws: documented 'a failure continues'", () =>
    Effect.gen(function*() {
      const events = yield* turn
      expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
    }).pipe(Effect.provide(withHooks(script, { shouldStopAfterStep: () => boom() }))))

  it.effect("transformContext throws: documented 'a failure keeps the original request; it never ends the turn'", () =>
    Effect.gen(function*() {
      const events = yield* turn
      expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
    }).pipe(Effect.provide(withHooks(script, { transformContext: () => boom() }))))
})

describe("hooks returning hostile data", () => {
  it.effect("afterToolResult returns a result that is not a string", () =>
    Effect.gen(function*() {
      const events = yield* turn
      expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
    }).pipe(Effect.provide(withHooks(script, { afterToolResult: () => Effect.succeed({ result: 42 } as never) }))))

  it.effect("afterToolResult returns an escape-laden result: escaped before the log", () =>
    Effect.gen(function*() {
      const events = yield* turn
      const completed = events.find((e) => e.type === "tool.completed")
      expect(JSON.stringify(completed?.payload)).not.toContain("\\u001b[2J")
    }).pipe(Effect.provide(withHooks(script, { afterToolResult: (_, o) => Effect.succeed({ ...o, result: "\u001b[2J\u001b]0;pwned\u0007x" }) }))))

  it.effect("transformContext returns a request without messages", () =>
    Effect.gen(function*() {
      const events = yield* turn
      expect(events.at(-1)!.payload).toMatchObject({ stopReason: "final" })
    }).pipe(Effect.provide(withHooks(script, { transformContext: (r) => Effect.succeed({ ...r, messages: undefined } as never) }))))

  it.effect("beforeToolCall returns a misspelt verdict {_tag: 'block'}: blocks", () =>
    Effect.gen(function*() {
      const events = yield* turn
      expect(events.some((e) => e.type === "tool.completed")).toBe(false)
      expect(events.filter((e) => e.type === "tool.failed").map((e) => e.payload.errorCode)).toEqual(["blocked"])
    }).pipe(Effect.provide(withHooks(script, { beforeToolCall: () => Effect.succeed({ _tag: "block", reason: "no" } as never) }))))
})
