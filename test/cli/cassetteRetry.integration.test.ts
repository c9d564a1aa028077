/**
 * Issue 19, item 4, in another process: a session recorded with retried model requests (by an
 * embedder whose retry policy waits 300 ms) is exported with `effect-agent export-script` and run
 * again by the CLI with `--script`: the CLI waits exactly the recorded delays, and every event's type
 * and payload is the recording's.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import * as TestContext from "effect/TestContext"
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import * as SessionEngineModule from "../../src/engine/SessionEngine.js"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import * as FakeModelProvider from "../../src/layers/FakeModelProvider.js"
import * as JsonlEventStore from "../../src/layers/JsonlEventStore.js"
import type { AgentEvent } from "../../src/index.js"
import * as IdGenerator from "../../src/services/IdGenerator.js"
import { collect, expectWellFormedLog } from "../helpers.js"
import { eventsOf, run, scratch, sessionIdIn } from "./subprocess.js"

const { dir } = scratch("cassette-retry")

/** Records one turn whose request is refused twice before it is answered, with a 300 ms retry policy. */
const record = (dataDir: string, cwd: string) =>
  Effect.gen(function*() {
    const engine = yield* SessionEngine
    const { sessionId } = yield* engine.createSession({ cwd, client: "cli" })
    yield* engine.runTurn({ sessionId, userMessage: "fetch it" }).pipe(
      Stream.tap((e) => (e.type === "model.retry" ? TestClock.adjust(e.payload.delayMs) : Effect.void)),
      collect
    )
    return sessionId
  }).pipe(
    Effect.provide(
      SessionEngineModule.layer({ retry: Schedule.spaced("300 millis") }).pipe(
        Layer.provideMerge(JsonlEventStore.layer({ dataDir })),
        Layer.provideMerge(FakeModelProvider.layer({ responses: [{ failure: { reason: "rate_limited" } }, { failure: { reason: "server" } }, { chunks: ["here", " it is"] }] })),
        Layer.provideMerge(IdGenerator.layer),
        Layer.provide(NodeContext.layer)
      )
    ),
    Effect.provide(TestContext.TestContext)
  )

/** Each event's type and payload after session.created; `context.built` counts the CLI's own prompt and tools, which the recording had none of. */
const shape = (log: ReadonlyArray<AgentEvent.AgentEvent>) =>
  log.slice(1).filter((e) => e.type !== "context.built").map(({ payload, type }) => ({ type, payload }))

describe("export-script of a session with retries", () => {
  it("the CLI run with the exported script waits the recorded delays and stores the recorded events", async () => {
    const work = join(dir, "work")
    mkdirSync(work)
    const recordedDir = join(dir, "recorded")
    const sessionId = await Effect.runPromise(record(recordedDir, work))
    const exported = await run(["export-script", sessionId, "--data-dir", recordedDir], { cwd: dir })
    expect(exported.code).toBe(0)
    const cassette = join(dir, "cassette.json")
    writeFileSync(cassette, exported.stdout)

    const replayedDir = join(dir, "replayed")
    const again = await run(["run", "fetch it", "--script", cassette, "--data-dir", replayedDir], { cwd: work })
    expect(again.code).toBe(0)
    const before = eventsOf((await run(["replay", sessionId, "--json", "--data-dir", recordedDir], { cwd: dir })).stdout)
    const after = eventsOf((await run(["replay", sessionIdIn(again.stderr)!, "--json", "--data-dir", replayedDir], { cwd: dir })).stdout)
    expectWellFormedLog(after)
    const delays = (log: ReadonlyArray<AgentEvent.AgentEvent>) => log.flatMap((e) => (e.type === "model.retry" ? [e.payload.delayMs] : []))
    expect(delays(before)).toEqual([300, 300])
    expect(delays(after)).toEqual([300, 300])
    expect(shape(after)).toEqual(shape(before))
  })
})
