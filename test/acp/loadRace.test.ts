/**
 * `session/load` racing `session/prompt` on one connection. The load replays the log to the client,
 * then re-asks a paused turn's approvals, claiming the session for that turn. A prompt that arrived
 * during the replay used to claim the session first (the load checked for a running turn only
 * before the replay): the load then failed `turn_in_progress` at its end, after the client had been
 * shown the whole conversation, and the paused approval was never asked.
 *
 * Now the load holds the session from its first step: a prompt during it is refused
 * `turn_in_progress` at once, the load answers, and the paused turn's approval is asked. The race is
 * forced with gates in the engine (the replay holds after its first event; the prompt's turn, if it
 * ever reached the engine, holds before it starts), never with time.
 */
import * as acp from "@agentclientprotocol/sdk"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { mkdirSync, mkdtempSync, realpathSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import * as AcpAgent from "../../src/acp/AcpAgent.js"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import * as SessionEngine from "../../src/engine/SessionEngine.js"
import type * as FakeModelProvider from "../../src/layers/FakeModelProvider.js"
import * as JsonlEventStore from "../../src/layers/JsonlEventStore.js"
import { engineLayer, expectWellFormedLog, testTools } from "../helpers.js"

const dir = realpathSync(mkdtempSync(join(tmpdir(), "effect-agent-acp-load-race-")))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const tools = testTools({ act: { risk: "write", run: () => Effect.succeed({ result: "acted" }) } })

const engineOn = (dataDir: string, model: FakeModelProvider.Options) =>
  engineLayer(JsonlEventStore.layer({ dataDir }).pipe(Layer.provide(NodeContext.layer)), model).pipe(
    Layer.provideMerge(tools),
    Layer.provideMerge(NodeContext.layer)
  )

/** A process that stopped while its turn asked about a write: the log holds the turn paused. */
const pausedSession = (dataDir: string, cwd: string) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const context = yield* Layer.buildWithScope(engineOn(dataDir, { responses: [{ toolCalls: [{ tool: "act", args: {}, id: "c1" }] }] }), scope)
    const sessionId = yield* Effect.gen(function*() {
      const engine = yield* SessionEngine.SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd, client: "test" })
      const asked = yield* Deferred.make<void>()
      yield* engine.runTurn({ sessionId, userMessage: "act" }).pipe(
        Stream.tap((event) => event.type === "permission.requested" ? Deferred.succeed(asked, undefined) : Effect.void),
        Stream.runDrain,
        Effect.forkDaemon
      )
      yield* Deferred.await(asked)
      return sessionId
    }).pipe(Effect.provide(context))
    yield* Scope.close(scope, Exit.void)
    return sessionId
  })

/** The engine with gates: its replay holds after the first event, a new turn holds before it starts. */
const gated = (gates: {
  readonly replaying: Deferred.Deferred<void>
  readonly replayGoesOn: Deferred.Deferred<void>
  readonly turnAsked: Deferred.Deferred<void>
  readonly turnGoesOn: Deferred.Deferred<void>
  readonly resumed: Deferred.Deferred<void>
  readonly cancelled: Deferred.Deferred<void>
}) =>
  Layer.effect(
    SessionEngine.SessionEngine,
    Effect.map(SessionEngine.SessionEngine, (engine): SessionEngine.SessionEngine["Type"] => ({
      ...engine,
      replaySession: (input) =>
        engine.replaySession(input).pipe(
          Stream.zipWithIndex,
          Stream.tap(([, i]) => i === 0 ? Effect.zipRight(Deferred.succeed(gates.replaying, undefined), Deferred.await(gates.replayGoesOn)) : Effect.void),
          Stream.map(([event]) => event)
        ),
      cancelTurn: (input) => Effect.zipRight(engine.cancelTurn(input), Deferred.succeed(gates.cancelled, undefined)),
      resumeTurn: (input) => engine.resumeTurn(input).pipe(Stream.ensuring(Deferred.succeed(gates.resumed, undefined))),
      runTurn: (input) =>
        Stream.unwrap(Effect.as(
          Effect.zipRight(Deferred.succeed(gates.turnAsked, undefined), Deferred.await(gates.turnGoesOn)),
          engine.runTurn(input)
        ))
    }))
  )

const settled = <A>(promise: Promise<A>) => promise.then((value) => ({ ok: true as const, value }), (error: unknown) => ({ ok: false as const, error: error as acp.RequestError }))

/** A workspace whose log holds a paused turn, and the agent over it in this process, its engine gated, with the SDK's client. */
const connected = (name: string, options: AcpAgent.Options = {}) =>
  Effect.gen(function*() {
    const dataDir = join(dir, name, "data")
    const cwd = join(dir, name, "work")
    mkdirSync(cwd, { recursive: true })
    const sessionId = yield* pausedSession(dataDir, cwd)
    const gates = {
      replaying: yield* Deferred.make<void>(),
      replayGoesOn: yield* Deferred.make<void>(),
      turnAsked: yield* Deferred.make<void>(),
      turnGoesOn: yield* Deferred.make<void>(),
      resumed: yield* Deferred.make<void>(),
      cancelled: yield* Deferred.make<void>()
    }
    const toAgent = new TransformStream<Uint8Array, Uint8Array>()
    const toClient = new TransformStream<Uint8Array, Uint8Array>()
    const layer = gated(gates).pipe(Layer.provideMerge(engineOn(dataDir, { responses: [{ chunks: ["Done after the load."] }] })))
    const agent = yield* AcpAgent.serve(acp.ndJsonStream(toClient.writable, toAgent.readable), options).pipe(Effect.provide(layer), Effect.fork)

    const updates: Array<acp.SessionUpdate> = []
    const asked: Array<acp.RequestPermissionRequest> = []
    let sawDone: () => void = () => {}
    const done = new Promise<void>((resolve) => (sawDone = resolve))
    const connection = acp.client({ name: "load-race-test" })
      .onNotification(acp.methods.client.session.update, ({ params }) => {
        updates.push(params.update)
        if (params.update.sessionUpdate === "agent_message_chunk" && params.update.content.type === "text" && params.update.content.text === "Done after the load.") sawDone()
      })
      .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
        asked.push(params)
        return Promise.resolve({ outcome: { outcome: "selected", optionId: "allow_once" } })
      })
      .connect(acp.ndJsonStream(toAgent.writable, toClient.readable))
    const client = connection.agent
    yield* Effect.promise(() => client.request(acp.methods.agent.initialize, { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {} }))
    const wait = (gate: Deferred.Deferred<void>) => Effect.runPromise(Deferred.await(gate))
    const open = (gate: Deferred.Deferred<void>) => Effect.runPromise(Deferred.succeed(gate, undefined))
    const load = (cancellationSignal?: AbortSignal) =>
      settled(client.request(acp.methods.agent.session.load, { sessionId, cwd, mcpServers: [] }, cancellationSignal === undefined ? undefined : { cancellationSignal }))
    /** The client goes away; the agent's serve returns; the session's log as stored. */
    const close = Effect.gen(function*() {
      yield* Effect.promise(() => toAgent.writable.close())
      yield* Fiber.join(agent)
      return yield* Effect.gen(function*() {
        const engine = yield* SessionEngine.SessionEngine
        return Array.from(yield* Stream.runCollect(engine.replaySession({ sessionId }))) as Array<AgentEvent>
      }).pipe(Effect.provide(engineOn(dataDir, {})))
    })
    return { sessionId, gates, client, updates, asked, done, wait, open, load, close }
  })

const turnEnds = (log: ReadonlyArray<AgentEvent>) => log.flatMap((e) => e.type === "turn.completed" ? [e.payload.stopReason] : [])

describe("acp: session/load racing session/prompt", () => {
  it("a prompt sent while the load replays is refused turn_in_progress (it failed the load before); the load answers and re-asks the paused approval, whose answer finishes the turn", async () => {
    await Effect.runPromise(Effect.gen(function*() {
      const { asked, client, close, done, gates, load, open, sessionId, updates, wait } = yield* connected("prompt")
      const result = yield* Effect.promise(async () => {
        const loading = load()
        await wait(gates.replaying)
        // The load is replaying: a prompt now. It is either refused at once or reaches the engine.
        const prompt = settled(client.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "meanwhile" }] }))
        await Promise.race([prompt, wait(gates.turnAsked)])
        await open(gates.replayGoesOn)
        const loaded = await loading
        await open(gates.turnGoesOn)
        return { loaded, prompted: await prompt }
      })
      expect(result.loaded.ok ? "loaded" : result.loaded.error.data).toBe("loaded")
      expect(result.prompted.ok ? "answered" : result.prompted.error.data).toMatchObject({ errorCode: "turn_in_progress", sessionId })
      // The prompt never reached the engine: no turn was asked for while the load held the session.
      expect(yield* Deferred.isDone(gates.turnAsked)).toBe(false)
      yield* Effect.promise(() => done)
      expect(asked.map((a) => a.toolCall.toolCallId)).toEqual(["c1"])
      expect(updates.flatMap((u) => u.sessionUpdate === "user_message_chunk" && u.content.type === "text" ? [u.content.text] : [])).toEqual(["act"])
      // The resumed turn's stream has ended (its end stored); then the client goes away.
      yield* Deferred.await(gates.resumed)
      const log = yield* close
      expectWellFormedLog(log)
      expect(turnEnds(log)).toEqual(["final"])
      expect(log.some((e) => e.type === "permission.resolved" && e.payload.actor === "user" && e.payload.decision === "allow")).toBe(true)
    }))
  })

  it("a second load while one replays is refused turn_in_progress; the first asks the approval once", async () => {
    await Effect.runPromise(Effect.gen(function*() {
      const { asked, close, done, gates, load, open, sessionId, wait } = yield* connected("second-load")
      const result = yield* Effect.promise(async () => {
        const first = load()
        await wait(gates.replaying)
        const second = await load()
        await open(gates.replayGoesOn)
        return { first: await first, second }
      })
      expect(result.first.ok).toBe(true)
      expect(result.second.ok ? "loaded" : result.second.error.data).toMatchObject({ errorCode: "turn_in_progress", sessionId })
      yield* Effect.promise(() => done)
      expect(asked.map((a) => a.toolCall.toolCallId)).toEqual(["c1"])
      yield* Deferred.await(gates.resumed)
      expect(turnEnds(yield* close)).toEqual(["final"])
    }))
  })

  it("a session/cancel while the load replays closes the paused turn: the load answers and asks nothing", async () => {
    await Effect.runPromise(Effect.gen(function*() {
      const { asked, client, close, gates, load, open, sessionId, wait } = yield* connected("cancel")
      const loaded = yield* Effect.promise(async () => {
        const loading = load()
        await wait(gates.replaying)
        await client.notify(acp.methods.agent.session.cancel, { sessionId })
        await wait(gates.cancelled)
        await open(gates.replayGoesOn)
        return loading
      })
      expect(loaded.ok).toBe(true)
      expect(asked).toEqual([])
      const log = yield* close
      expectWellFormedLog(log)
      expect(turnEnds(log)).toEqual(["cancelled"])
    }))
  })

  // Leftovers 42, item 3: a load cancelled ($/cancel_request) while it replayed answered -32800 but had
  // already made the servers it started the session's (replacing any it had). Now they are bound only
  // once the load succeeds; a cancelled one stops them. Failed on main (bound, not discarded).
  it("a $/cancel_request while the load replays: -32800, nothing asked, and the servers it started are stopped, not the session's", async () => {
    const servers: Array<string> = []
    const sessionServers: AcpAgent.Options["sessionServers"] = () =>
      Effect.sync(() => {
        servers.push("started")
        return {
          bind: (id) => Effect.sync(() => servers.push(`bound to ${id}`)),
          discard: Effect.sync(() => servers.push("stopped"))
        }
      })
    await Effect.runPromise(Effect.gen(function*() {
      const { asked, client, close, gates, load, open, sessionId, wait } = yield* connected("cancel-request", { sessionServers })
      const controller = new AbortController()
      const loaded = yield* Effect.promise(async () => {
        const loading = load(controller.signal)
        await wait(gates.replaying)
        controller.abort()
        // The agent reads its messages in order: once a later request is answered, the cancel has been read.
        await client.request(acp.methods.agent.session.list, {})
        await open(gates.replayGoesOn)
        return loading
      })
      expect(loaded.ok ? "loaded" : loaded.error.code).toBe(-32800)
      expect(asked).toEqual([])
      expect(servers).toEqual(["started", "stopped"])
      // The cancelled load did not open the session on this connection: a prompt is told to load it.
      const prompted = yield* Effect.promise(() => settled(client.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "hi" }] })))
      expect(prompted.ok ? "answered" : prompted.error.code).toBe(-32002)
      // Still paused: nothing was closed.
      expect(turnEnds(yield* close)).toEqual([])
    }))
  })
})
