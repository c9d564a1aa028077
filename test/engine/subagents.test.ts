/**
 * Subagents through the engine, with scripted models for parent and children: a `task` call runs a
 * child session (its own log, linked both ways), whose final answer is the call's result; hostile
 * calls (a cwd outside, tools or a mode wider than the parent's, endless recursion, many tasks at
 * once, a child whose provider fails) are refused or contained; a child's ask reaches the parent's
 * stream and is answered on the child; a cancel cascades; one budget stops the whole tree.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import type { EventOfType } from "../../src/domain/AgentEvent.js"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import * as MemoryEventStore from "../../src/layers/MemoryEventStore.js"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import * as PermissionEngine from "../../src/services/PermissionEngine.js"
import * as ToolRouter from "../../src/services/ToolRouter.js"
import * as TaskTool from "../../src/layers/TaskTool.js"
import * as WorkspaceTools from "../../src/layers/WorkspaceTools.js"
import { collect, engineLayer, expectWellFormedLog, tempDir } from "../helpers.js"
import { ofType, withTools } from "./subagentEngine.js"

const logOf = (sessionId: string) => Effect.flatMap(SessionEngine, (engine) => collect(engine.replaySession({ sessionId })))

/** A workspace with a `sub` directory and a link `out` that leads outside it. */
const workspace = Effect.map(tempDir, (dir) => {
  const root = NodeFs.realpathSync(dir)
  const cwd = NodePath.join(root, "ws")
  NodeFs.mkdirSync(NodePath.join(cwd, "sub"), { recursive: true })
  NodeFs.mkdirSync(NodePath.join(root, "elsewhere"))
  NodeFs.writeFileSync(NodePath.join(cwd, "sub", "notes.txt"), "the notes\n")
  NodeFs.symlinkSync(NodePath.join(root, "elsewhere"), NodePath.join(cwd, "out"))
  return cwd
})

const task = (args: Record<string, unknown>, id?: string) => ({ tool: "task", args: { description: "look around", prompt: "child: read", ...args }, ...(id === undefined ? {} : { id }) })

describe("subagents", () => {
  it.scoped("a task runs a child session in a narrower cwd; its final answer is the call's result; both logs link and replay", () =>
    Effect.gen(function*() {
      const cwd = yield* workspace
      yield* Effect.gen(function*() {
        const engine = yield* SessionEngine
        const { sessionId } = yield* engine.createSession({ cwd, client: "test" })
        const events = yield* collect(engine.runTurn({ sessionId, userMessage: "delegate" }))
        const started = ofType(events, "subagent.started")
        expect(started).toHaveLength(1)
        const { childSessionId } = started[0]!.payload
        expect(started[0]!.payload).toMatchObject({ toolCallId: "t1", description: "look around", cwd: NodePath.join(cwd, "sub"), mode: "inherit" })
        const completed = ofType(events, "subagent.completed")
        expect(completed.map((e) => e.payload)).toEqual([{ toolCallId: "t1", childSessionId, outcome: "final", steps: 2 }])
        expect(ofType(events, "tool.completed").find((e) => e.payload.toolCallId === "t1")?.payload.result).toBe("the notes say hi")
        expect(events.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
        expectWellFormedLog(yield* logOf(sessionId))

        const child = yield* logOf(childSessionId)
        expectWellFormedLog(child)
        expect(child[0]).toMatchObject({ type: "session.created", payload: { cwd: NodePath.join(cwd, "sub"), client: "test", parent: { sessionId, toolCallId: "t1", depth: 1 } } })
        expect(ofType(child, "user.message")[0]!.payload.content).toBe("child: read")
        // The child read the file relative to its own cwd.
        expect(ofType(child, "tool.completed")[0]!.payload.result).toContain("the notes")
        // A real session: listed.
        const listed = (yield* engine.listSessions).map((s) => s.sessionId)
        expect(listed).toContain(childSessionId)
        // The parent's own session.created has no parent field.
        expect((yield* logOf(sessionId))[0]!.payload).toEqual({ cwd, client: "test" })
      }).pipe(Effect.provide(withTools({
        responses: [
          { toolCalls: [task({ cwd: "sub" }, "t1")] },
          { chunks: ["done"] }
        ],
        subagents: {
          "child: read": [
            { toolCalls: [{ tool: "read_file", args: { path: "notes.txt" } }] },
            { chunks: ["the notes", " say hi"] }
          ]
        }
      })))
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("hostile tasks are refused with typed errors and no child session: a cwd outside (`..`, a link), a tool the session lacks, a wider mode", () =>
    Effect.gen(function*() {
      const cwd = yield* workspace
      yield* Effect.gen(function*() {
        const engine = yield* SessionEngine
        const { sessionId } = yield* engine.createSession({ cwd, client: "test" })
        const events = yield* collect(engine.runTurn({ sessionId, userMessage: "escape" }))
        const failed = Object.fromEntries(ofType(events, "tool.failed").map((e) => [e.payload.toolCallId, e.payload.errorCode]))
        expect(failed).toEqual({
          up: "cwd_outside",
          link: "cwd_outside",
          abs: "cwd_outside",
          tool: "tool_not_allowed",
          bypass: "mode_not_allowed",
          accept: "mode_not_allowed"
        })
        // Refused while prepared: no permission asked, no session made.
        expect(ofType(events, "permission.requested")).toHaveLength(0)
        expect(ofType(events, "subagent.started")).toHaveLength(0)
        expect(yield* engine.listSessions).toHaveLength(1)
        expect(events.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
      }).pipe(Effect.provide(withTools({
        responses: [
          {
            toolCalls: [
              task({ cwd: ".." }, "up"),
              task({ cwd: "out" }, "link"),
              task({ cwd: "/" }, "abs"),
              task({ tools: ["read_file", "launch_missiles"] }, "tool"),
              task({ mode: "bypass" }, "bypass"),
              task({ mode: "acceptEdits" }, "accept")
            ]
          },
          { chunks: ["ok"] }
        ]
      })))
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("a child's tools are a subset: it cannot start a grandchild with a tool it lacks; a read-only child's write is denied", () =>
    Effect.gen(function*() {
      const cwd = yield* workspace
      yield* Effect.gen(function*() {
        const engine = yield* SessionEngine
        const { sessionId } = yield* engine.createSession({ cwd, client: "test" })
        const events = yield* collect(engine.runTurn({ sessionId, userMessage: "go" }))
        const children = ofType(events, "subagent.started").map((e) => e.payload)
        expect(children.map((c) => [c.toolCallId, c.tools, c.mode])).toEqual([["narrow", ["read_file", "task"], "inherit"], ["ro", undefined, "readOnly"]])
        const narrow = yield* logOf(children[0]!.childSessionId)
        expect(ofType(narrow, "tool.failed").map((e) => e.payload.errorCode)).toEqual(["tool_not_allowed", "unknown_tool"])
        const ro = yield* logOf(children[1]!.childSessionId)
        expect(ofType(ro, "permission.resolved").map((e) => [e.payload.decision, e.payload.policy])).toEqual([["deny", "subagent/read-only"]])
        expect(NodeFs.existsSync(NodePath.join(cwd, "x.txt"))).toBe(false)
        expectWellFormedLog(narrow)
        expectWellFormedLog(ro)
      }).pipe(Effect.provide(withTools({
        responses: [
          { toolCalls: [task({ prompt: "narrow", tools: ["read_file", "task"] }, "narrow"), task({ prompt: "ro", mode: "readOnly" }, "ro")] },
          { chunks: ["ok"] }
        ],
        subagents: {
          narrow: [
            { toolCalls: [task({ prompt: "wider", tools: ["shell"] }, "n1"), { tool: "shell", args: { command: "ls" }, id: "n2" }] },
            { chunks: ["narrow done"] }
          ],
          ro: [
            { toolCalls: [{ tool: "write_file", args: { path: "x.txt", content: "x" }, id: "r1" }] },
            { chunks: ["ro done"] }
          ]
        }
      })))
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("a task that recurses forever stops at the depth limit (2): the grandchild is offered no task tool", () =>
    Effect.gen(function*() {
      const cwd = yield* workspace
      yield* Effect.gen(function*() {
        const engine = yield* SessionEngine
        const { sessionId } = yield* engine.createSession({ cwd, client: "test" })
        const events = yield* collect(engine.runTurn({ sessionId, userMessage: "recurse" }))
        expect(events.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
        const sessions = yield* engine.listSessions
        // The top session, a child, a grandchild: nothing deeper.
        expect(sessions).toHaveLength(3)
        const depths: Array<number> = []
        for (const s of sessions) {
          const log = yield* logOf(s.sessionId)
          expectWellFormedLog(log)
          const created = log[0] as EventOfType<"session.created">
          depths.push(created.payload.parent?.depth ?? 0)
          if (created.payload.parent?.depth === 2) {
            expect(ofType(log, "tool.failed").map((e) => e.payload.errorCode)).toEqual(["unknown_tool"])
          }
        }
        expect(depths.sort()).toEqual([0, 1, 2])
      }).pipe(Effect.provide(withTools({
        responses: [{ toolCalls: [task({ prompt: "again" })] }, { chunks: ["top done"] }],
        // Every subagent with this prompt asks for one more: the same script, over and over.
        // (Both take from one list, in request order: the child's first, the grandchild's two, the child's last.)
        subagents: { again: [{ toolCalls: [task({ prompt: "again" })] }, { toolCalls: [task({ prompt: "again" })] }, { chunks: ["grandchild down"] }, { chunks: ["child down"] }] }
      })))
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("two hundred tasks in one step run at most toolConcurrency (3) at once, and every one closes in both logs", () =>
    Effect.gen(function*() {
      const cwd = yield* workspace
      yield* Effect.gen(function*() {
        const engine = yield* SessionEngine
        const { sessionId } = yield* engine.createSession({ cwd, client: "test" })
        const fiber = yield* Effect.fork(collect(engine.runTurn({ sessionId, userMessage: "fan out" })))
        // Each child's answer waits a second of the test clock: the clock moves until the turn is done.
        while ((yield* Fiber.poll(fiber))._tag === "None") {
          yield* TestClock.adjust("1 second")
          yield* Effect.yieldNow()
        }
        const events = yield* Fiber.join(fiber)
        let running = 0
        let most = 0
        for (const e of events) {
          if (e.type === "subagent.started") most = Math.max(most, ++running)
          if (e.type === "subagent.completed") running--
        }
        expect(ofType(events, "subagent.completed")).toHaveLength(200)
        expect(most).toBeGreaterThan(1)
        expect(most).toBeLessThanOrEqual(3)
        expect(ofType(events, "tool.completed").every((e) => e.payload.result === "leaf")).toBe(true)
        expectWellFormedLog(yield* logOf(sessionId))
        for (const s of yield* engine.listSessions) expectWellFormedLog(yield* logOf(s.sessionId))
      }).pipe(Effect.provide(withTools({
        responses: [{ toolCalls: Array.from({ length: 200 }, (_, i) => task({ prompt: "leaf" }, `c${i}`)) }, { chunks: ["fanned"] }],
        subagents: { leaf: Array.from({ length: 200 }, () => ({ chunks: ["leaf"], delay: "1 second" })) }
      }, { toolConcurrency: 3, maxToolCalls: 200 })))
    }).pipe(Effect.provide(NodeContext.layer)), 120_000)

  it.scoped("a child whose provider fails ends the call with an error result; the parent turn goes on to its answer", () =>
    Effect.gen(function*() {
      const cwd = yield* workspace
      yield* Effect.gen(function*() {
        const engine = yield* SessionEngine
        const { sessionId } = yield* engine.createSession({ cwd, client: "test" })
        const events = yield* collect(engine.runTurn({ sessionId, userMessage: "try" }))
        expect(ofType(events, "tool.failed").map((e) => e.payload.errorCode)).toEqual(["subagent_failed"])
        expect(ofType(events, "subagent.completed")[0]!.payload).toMatchObject({ outcome: "error", errorCode: "authentication" })
        expect(events.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
        expect(ofType(events, "model.delta").map((e) => e.payload.text).join("")).toBe("the child failed; carrying on")
      }).pipe(Effect.provide(withTools({
        responses: [{ toolCalls: [task({ prompt: "fail" })] }, { chunks: ["the child failed; carrying on"] }],
        subagents: { fail: [{ failure: { reason: "authentication" } }] }
      })))
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("a child's ask reaches the parent's stream labelled with its task; answered on the child, recorded in the child's log", () =>
    Effect.gen(function*() {
      const cwd = yield* workspace
      yield* Effect.gen(function*() {
        const engine = yield* SessionEngine
        const { sessionId } = yield* engine.createSession({ cwd, client: "test" })
        const events = yield* collect(engine.runTurn({ sessionId, userMessage: "write" }).pipe(
          Stream.tap((event) =>
            event.type === "subagent.asked"
              ? Effect.gen(function*() {
                // Pending on the child, where the answer goes.
                const pending = yield* engine.pendingApprovals({ sessionId: event.payload.childSessionId })
                expect(pending.map((c) => c.toolCallId)).toEqual([event.payload.childToolCallId])
                yield* engine.resolvePermission({ sessionId: event.payload.childSessionId, toolCallId: event.payload.childToolCallId, decision: "allow" })
              })
              : Effect.void
          )
        ))
        const asked = ofType(events, "subagent.asked")
        expect(asked.map((e) => ({ ...e.payload, childSessionId: "-" }))).toEqual([{
          toolCallId: "t1",
          childSessionId: "-",
          description: "write the file",
          childToolCallId: "w1",
          tool: "write_file",
          args: { path: "x.txt", content: "hello" },
          risk: "write"
        }])
        expect(NodeFs.readFileSync(NodePath.join(cwd, "x.txt"), "utf8")).toBe("hello")
        const child = yield* logOf(asked[0]!.payload.childSessionId)
        expect(ofType(child, "permission.resolved").map((e) => [e.payload.decision, e.payload.actor])).toEqual([["ask", "policy"], ["allow", "user"]])
        expect(events.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
      }).pipe(Effect.provide(withTools({
        responses: [{ toolCalls: [task({ description: "write the file", prompt: "w" }, "t1")] }, { chunks: ["ok"] }],
        subagents: { w: [{ toolCalls: [{ tool: "write_file", args: { path: "x.txt", content: "hello" }, id: "w1" }] }, { chunks: ["written"] }] }
      })))
    }).pipe(Effect.provide(NodeContext.layer)))

  // review61a: the child's question said nothing of where a link leads; the parent's own call's does.
  it.scoped("a child's write through a link leading outside: its subagent.asked carries the child's outsidePaths", () =>
    Effect.gen(function*() {
      const cwd = yield* workspace
      yield* Effect.gen(function*() {
        const engine = yield* SessionEngine
        const { sessionId } = yield* engine.createSession({ cwd, client: "test" })
        const events = yield* collect(engine.runTurn({ sessionId, userMessage: "write" }).pipe(
          Stream.tap((event) =>
            event.type === "subagent.asked"
              ? engine.resolvePermission({ sessionId: event.payload.childSessionId, toolCallId: event.payload.childToolCallId, decision: "deny" })
              : Effect.void
          )
        ))
        const asked = ofType(events, "subagent.asked")
        const child = yield* logOf(asked[0]!.payload.childSessionId)
        const requested = ofType(child, "permission.requested")[0]!.payload.outsidePaths
        expect(requested?.length).toBe(1)
        expect(asked.map((e) => e.payload.outsidePaths)).toEqual([requested])
        expect(NodeFs.existsSync(NodePath.join(cwd, "..", "elsewhere", "x.txt"))).toBe(false)
      }).pipe(Effect.provide(withTools({
        responses: [{ toolCalls: [task({ description: "write the file", prompt: "w" }, "t1")] }, { chunks: ["ok"] }],
        subagents: { w: [{ toolCalls: [{ tool: "write_file", args: { path: "out/x.txt", content: "hello" }, id: "w1" }] }, { chunks: ["denied"] }] }
      })))
    }).pipe(Effect.provide(NodeContext.layer)))

  // The task's cwd is checked when the task starts; the child then works in that path for many
  // steps. Swapped for a link meanwhile (the parent's own command in the same step can, as `sub` is
  // inside its workspace: `sleep 1; rm -r sub; ln -s ~ sub`), the child's workspace became the
  // link's target: its reads there were "inside its cwd" for its rules and its parent's alike, so a
  // read of `.ssh/id_rsa` asked nothing. Here the swap happens while the child's write waits for
  // its approval, and the child reads a file of the link's target next.
  it.scoped("a child's cwd swapped for a link after the task started: its calls fail cwd_moved, nothing read or written outside", () =>
    Effect.gen(function*() {
      const cwd = yield* workspace
      const elsewhere = NodePath.join(NodePath.dirname(cwd), "elsewhere")
      NodeFs.writeFileSync(NodePath.join(elsewhere, "secret.txt"), "the secret\n")
      yield* Effect.gen(function*() {
        const engine = yield* SessionEngine
        const { sessionId } = yield* engine.createSession({ cwd, client: "test" })
        const events = yield* collect(engine.runTurn({ sessionId, userMessage: "go" }).pipe(
          Stream.tap((event) =>
            event.type === "subagent.asked"
              ? Effect.gen(function*() {
                NodeFs.rmSync(NodePath.join(cwd, "sub"), { recursive: true })
                NodeFs.symlinkSync(elsewhere, NodePath.join(cwd, "sub"))
                yield* engine.resolvePermission({ sessionId: event.payload.childSessionId, toolCallId: event.payload.childToolCallId, decision: "allow" })
              })
              : Effect.void
          )
        ))
        const child = yield* logOf(ofType(events, "subagent.started")[0]!.payload.childSessionId)
        const ends = [...ofType(child, "tool.completed"), ...ofType(child, "tool.failed")].map((e) =>
          [e.payload.toolCallId, e.type === "tool.failed" ? e.payload.errorCode : e.payload.result]
        )
        expect(ends).toEqual([["w1", "cwd_moved"], ["r1", "cwd_moved"]])
        expect(NodeFs.existsSync(NodePath.join(elsewhere, "x.txt"))).toBe(false)
        expect(events.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
        expectWellFormedLog(child)
      }).pipe(Effect.provide(withTools({
        responses: [{ toolCalls: [task({ cwd: "sub", description: "work in sub", prompt: "w" }, "t1")] }, { chunks: ["ok"] }],
        subagents: {
          w: [
            { toolCalls: [{ tool: "write_file", args: { path: "x.txt", content: "hello" }, id: "w1" }] },
            { toolCalls: [{ tool: "read_file", args: { path: "secret.txt" }, id: "r1" }] },
            { chunks: ["done"] }
          ]
        }
      })))
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("cancelling the parent cancels the running child: both stored cancelled, no call left open in either", () =>
    Effect.gen(function*() {
      const cwd = yield* workspace
      yield* Effect.gen(function*() {
        const engine = yield* SessionEngine
        const { sessionId } = yield* engine.createSession({ cwd, client: "test" })
        const fiber = yield* Effect.fork(collect(engine.runTurn({ sessionId, userMessage: "be slow" }).pipe(
          // The child is waiting for its model (a delay the test clock never reaches): cancel the parent then.
          Stream.tap((event) => event.type === "subagent.started" ? Effect.fork(engine.cancelTurn({ sessionId })) : Effect.void)
        )))
        const events = yield* Fiber.join(fiber)
        expect(events.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "cancelled" } })
        const completed = ofType(events, "subagent.completed")
        expect(completed.map((e) => e.payload.outcome)).toEqual(["cancelled"])
        expect(ofType(events, "tool.failed").map((e) => e.payload.errorCode)).toEqual(["cancelled"])
        const child = yield* logOf(completed[0]!.payload.childSessionId)
        expect(child.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "cancelled" } })
        expectWellFormedLog(child)
        expectWellFormedLog(yield* logOf(sessionId))
      }).pipe(Effect.provide(withTools({
        responses: [{ toolCalls: [task({ prompt: "slow" })] }, { chunks: ["never"] }],
        subagents: { slow: [{ chunks: ["zzz"], delay: "1 hour" }] }
      })))
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("a budget holds without subagents too: a turn of one session (no task tool) crossing maxTokens ends budget_exceeded before its next request", () =>
    Effect.gen(function*() {
      const cwd = yield* workspace
      yield* Effect.gen(function*() {
        const engine = yield* SessionEngine
        const { sessionId } = yield* engine.createSession({ cwd, client: "test" })
        const events = yield* collect(engine.runTurn({ sessionId, userMessage: "spend", budget: { maxTokens: 1000 } }))
        expect(events.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "error", errorCode: "budget_exceeded" } })
        expect(ofType(events, "model.usage")).toHaveLength(1)
        expectWellFormedLog(yield* logOf(sessionId))
      }).pipe(Effect.provide(
        engineLayer(MemoryEventStore.layer, {
          responses: [
            { toolCalls: [{ tool: "read_file", args: { path: "a.txt" } }], usage: { inputTokens: 900, outputTokens: 200 } },
            { chunks: ["never asked"] }
          ]
        }).pipe(
          Layer.provideMerge(WorkspaceTools.layer().pipe(Layer.provide(NodeContext.layer))),
          Layer.provideMerge(PermissionPolicy.layer({ mode: "bypass" }))
        )
      ))
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("one budget for the tree: a child's tokens count on the parent (subagent.progress); crossing maxTokens ends child and parent budget_exceeded", () =>
    Effect.gen(function*() {
      const cwd = yield* workspace
      yield* Effect.gen(function*() {
        const engine = yield* SessionEngine
        const { sessionId } = yield* engine.createSession({ cwd, client: "test" })
        const events = yield* collect(engine.runTurn({ sessionId, userMessage: "go and spend", budget: { maxTokens: 1000 } }))
        const progress = ofType(events, "subagent.progress")
        expect(progress.length).toBeGreaterThan(0)
        expect(progress[0]!.payload.usage).toEqual({ inputTokens: 900, outputTokens: 200 })
        const completed = ofType(events, "subagent.completed")[0]!
        expect(completed.payload).toMatchObject({ outcome: "error", errorCode: "budget_exceeded", steps: 1, usage: { inputTokens: 900, outputTokens: 200 } })
        expect(ofType(events, "tool.failed").map((e) => e.payload.errorCode)).toEqual(["budget_exceeded"])
        expect(events.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "error", errorCode: "budget_exceeded" } })
        const child = yield* logOf(completed.payload.childSessionId)
        expect(child.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "error", errorCode: "budget_exceeded" } })
        // The child never made its second request.
        expect(ofType(child, "model.usage")).toHaveLength(1)
      }).pipe(Effect.provide(withTools({
        responses: [{ toolCalls: [task({ prompt: "spend" })] }, { chunks: ["never asked"] }],
        subagents: {
          spend: [
            { toolCalls: [{ tool: "read_file", args: { path: "sub/notes.txt" } }], usage: { inputTokens: 900, outputTokens: 200 } },
            { chunks: ["never asked"] }
          ]
        }
      })))
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("a subagent's decision is never wider than its parent's, whatever the permission engine keeps per session", () =>
    Effect.gen(function*() {
      const cwd = yield* workspace
      // A permission engine with rules per directory: everything allowed in `sub`, writes denied elsewhere.
      const perCwd = Layer.succeed(PermissionEngine.PermissionEngine, {
        decide: (request) =>
          Effect.succeed(request.cwd.endsWith("/sub") || request.call.risk === "read"
            ? { decision: "allow" as const, policy: "test/allow" }
            : { decision: "deny" as const, policy: "test/no-writes" })
      })
      yield* Effect.gen(function*() {
        const engine = yield* SessionEngine
        const { sessionId } = yield* engine.createSession({ cwd, client: "test" })
        const events = yield* collect(engine.runTurn({ sessionId, userMessage: "go" }))
        const child = yield* logOf(ofType(events, "subagent.started")[0]!.payload.childSessionId)
        expect(ofType(child, "permission.resolved").map((e) => [e.payload.decision, e.payload.policy])).toEqual([["deny", "parent/test/no-writes"]])
        expect(NodeFs.existsSync(NodePath.join(cwd, "sub", "x.txt"))).toBe(false)
      }).pipe(Effect.provide(engineLayer(MemoryEventStore.layer, {
        responses: [{ toolCalls: [task({ prompt: "write in sub", cwd: "sub" })] }, { chunks: ["ok"] }],
        subagents: { "write in sub": [{ toolCalls: [{ tool: "write_file", args: { path: "x.txt", content: "x" } }] }, { chunks: ["tried"] }] }
      }).pipe(
        Layer.provideMerge(TaskTool.layer.pipe(Layer.provide(WorkspaceTools.layer().pipe(Layer.provide(NodeContext.layer))))),
        Layer.provideMerge(perCwd)
      )))
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("a subagent's own decision names the top session of its tree (topSession), a grandchild's too; the top session's own names none", () =>
    Effect.gen(function*() {
      const cwd = yield* workspace
      const seen: Array<PermissionEngine.PermissionRequest> = []
      const recording = Layer.succeed(PermissionEngine.PermissionEngine, {
        decide: (request) => Effect.sync(() => (seen.push(request), { decision: "allow" as const, policy: "test/allow" }))
      })
      yield* Effect.gen(function*() {
        const engine = yield* SessionEngine
        const { sessionId } = yield* engine.createSession({ cwd, client: "test" })
        const events = yield* collect(engine.runTurn({ sessionId, userMessage: "go" }))
        const child = ofType(events, "subagent.started")[0]!.payload.childSessionId
        const grandchild = ofType(yield* logOf(child), "subagent.started")[0]!.payload.childSessionId
        const named = (id: string) => seen.filter((r) => r.sessionId === id && r.call.tool === "list_dir").map((r) => r.topSession)
        expect(named(grandchild)).toEqual([{ sessionId, cwd }])
        // The child's own call, and the grandchild's decided again on the child's session (the stricter stands).
        expect(named(child)).toEqual([{ sessionId, cwd }, { sessionId, cwd }])
        // The top session's decisions (its own task call, its children's calls decided again on it) name none.
        const top = seen.filter((r) => r.sessionId === sessionId)
        expect(top.length).toBeGreaterThan(0)
        expect(top.filter((r) => r.topSession !== undefined)).toEqual([])
      }).pipe(Effect.provide(engineLayer(MemoryEventStore.layer, {
        responses: [{ toolCalls: [task({ prompt: "child" })] }, { chunks: ["ok"] }],
        subagents: {
          child: [{ toolCalls: [task({ prompt: "grandchild", cwd: "sub" }), { tool: "list_dir", args: { path: "." } }] }, { chunks: ["child done"] }],
          grandchild: [{ toolCalls: [{ tool: "list_dir", args: { path: "." } }] }, { chunks: ["grandchild done"] }]
        }
      }).pipe(
        Layer.provideMerge(TaskTool.layer.pipe(Layer.provide(WorkspaceTools.layer().pipe(Layer.provide(NodeContext.layer))))),
        Layer.provideMerge(recording)
      )))
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("a subagent has the tools its top session has of its own (MCP servers given for that session), narrowed as ever", () =>
    Effect.gen(function*() {
      const cwd = yield* workspace
      // Sessions whose client gave them a tool of their own (as ACP's session/new gives MCP servers).
      const own = new Set<string>()
      const ping = { name: "mcp__srv__ping", description: "ping", inputSchema: { type: "object", properties: {} }, sequential: false }
      const sessionTools = Layer.effect(ToolRouter.ToolRouter, Effect.map(ToolRouter.ToolRouter, (base): ToolRouter.ToolRouter.Service => {
        const withPing: ToolRouter.ToolRouter.Service = {
          ...base,
          definitions: [...base.definitions, ping],
          prepare: (call, at) =>
            call.tool === ping.name
              ? Effect.succeed({ ...call, risk: "read" as const, sequential: false, paths: [], scope: ping.name, input: {} })
              : base.prepare(call, at),
          execute: (call, context) => call.tool === ping.name ? Effect.succeed({ result: "pong" }) : base.execute(call, context)
        }
        return { ...base, forSession: (id) => own.has(id) ? withPing : base }
      }))
      yield* Effect.gen(function*() {
        const engine = yield* SessionEngine
        const { sessionId } = yield* engine.createSession({ cwd, client: "test" })
        own.add(sessionId)
        const events = yield* collect(engine.runTurn({ sessionId, userMessage: "go" }))
        const child = yield* logOf(ofType(events, "subagent.started")[0]!.payload.childSessionId)
        expect(ofType(child, "tool.completed").map((e) => e.payload.result)).toEqual(["pong"])
        expect(ofType(child, "tool.failed")).toEqual([])
      }).pipe(Effect.provide(engineLayer(MemoryEventStore.layer, {
        responses: [{ toolCalls: [task({ prompt: "ping it", cwd: "sub" })] }, { chunks: ["ok"] }],
        subagents: { "ping it": [{ toolCalls: [{ tool: "mcp__srv__ping", args: {} }] }, { chunks: ["pinged"] }] }
      }).pipe(
        Layer.provideMerge(TaskTool.layer.pipe(Layer.provide(sessionTools), Layer.provide(WorkspaceTools.layer().pipe(Layer.provide(NodeContext.layer))))),
        Layer.provideMerge(PermissionPolicy.layer({}))
      )))
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("the engine's maxCost counts the whole tree's dollars: two subagents at once, each under it, together over it", () =>
    Effect.gen(function*() {
      const cwd = yield* workspace
      yield* Effect.gen(function*() {
        const engine = yield* SessionEngine
        const { sessionId } = yield* engine.createSession({ cwd, client: "test" })
        const events = yield* collect(engine.runTurn({ sessionId, userMessage: "two helpers" }))
        // Each subagent's first response costs $0.60 (claude-haiku-4-5: 100k in at $1/M, 100k out at $5/M): $1.20 together, over $1.
        const completed = ofType(events, "subagent.completed").map((e) => e.payload)
        // (Which of the two sees the other's cost first is up to scheduling: one may make a second request.)
        for (const c of completed) expect([0.6, 1.2]).toContain(c.cost)
        expect(completed.some((c) => c.cost === 0.6)).toBe(true)
        expect(completed.map((c) => c.errorCode)).toEqual(["budget_exceeded", "budget_exceeded"])
        expect(events.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "error", errorCode: "budget_exceeded" } })
      }).pipe(Effect.provide(withTools({
        provider: "anthropic",
        model: "claude-haiku-4-5",
        responses: [{ toolCalls: [task({ prompt: "helper" }, "h1"), task({ prompt: "helper" }, "h2")] }, { chunks: ["never"] }],
        subagents: {
          helper: Array.from({ length: 4 }, () => ({
            toolCalls: [{ tool: "list_dir", args: { path: "." } }],
            usage: { inputTokens: 100_000, outputTokens: 100_000 },
            delay: "1 second"
          }))
        }
      }, { budget: { maxCost: 1 } })))
    }).pipe(Effect.provide(NodeContext.layer), Effect.fork, Effect.flatMap((fiber) =>
      Effect.gen(function*() {
        while ((yield* Fiber.poll(fiber))._tag === "None") {
          yield* TestClock.adjust("1 second")
          yield* Effect.yieldNow()
        }
        return yield* Fiber.join(fiber)
      }))))

  it.scoped("a budget that is not a positive number is refused before anything is stored", () =>
    Effect.gen(function*() {
      const cwd = yield* workspace
      yield* Effect.gen(function*() {
        const engine = yield* SessionEngine
        const { sessionId } = yield* engine.createSession({ cwd, client: "test" })
        const error = yield* Effect.flip(collect(engine.runTurn({ sessionId, userMessage: "x", budget: { maxCost: -1 } })))
        expect(error).toMatchObject({ _tag: "InvalidInput", field: "budget" })
        expect(yield* logOf(sessionId)).toHaveLength(1)
      }).pipe(Effect.provide(withTools({})))
    }).pipe(Effect.provide(NodeContext.layer)))
})
