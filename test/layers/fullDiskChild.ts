/**
 * One process that meets a full disk and goes on once it frees, for fullDiskSameProcess and
 * scripts/probe-full-disk.ts (through fullDiskDriver.ts): `fullDiskChild.ts <jsonl|sqlite> <data dir>`. An engine on the store
 * runs a first turn (prints `{"turn":…}`), then for each line on stdin one more turn: the first of
 * them answers with 1 MiB (more than the room the test leaves), the next ones with a short text.
 * Each turn prints how it ended: `{"turn":"final"}` or `{"turn":"<tag>","reason":"<reason>"}`.
 * The parent frees the disk between lines (raises the file-size limit, deletes a filler file), so
 * what the next turn meets is what the same process left behind after the failure.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import * as SessionEngineModule from "../../src/engine/SessionEngine.js"
const { SessionEngine } = SessionEngineModule
import * as JsonlEventStore from "../../src/layers/JsonlEventStore.js"
import * as SqliteEventStore from "../../src/layers/SqliteEventStore.js"
import * as FakeModelProvider from "../../src/layers/FakeModelProvider.js"
import * as IdGenerator from "../../src/services/IdGenerator.js"

const [kind, dataDir] = process.argv.slice(2) as ["jsonl" | "sqlite", string]

const store = kind === "sqlite" ? SqliteEventStore.layer({ filename: `${dataDir}/events.sqlite` }) : JsonlEventStore.layer({ dataDir })
const big = "x".repeat(4096)
const model = { responses: [{ chunks: ["first"] }, { chunks: Array.from({ length: 256 }, () => big) }, { chunks: ["after"] }, { chunks: ["again"] }] }

const nextLine = Effect.async<boolean>((resume) => {
  const onData = () => (process.stdin.off("end", onEnd), resume(Effect.succeed(true)))
  const onEnd = () => (process.stdin.off("data", onData), resume(Effect.succeed(false)))
  process.stdin.once("data", onData)
  process.stdin.once("end", onEnd)
})

const program = Effect.gen(function*() {
  const engine = yield* SessionEngine
  const { sessionId } = yield* engine.createSession({ cwd: "/work", client: "test" })
  const turn = (userMessage: string) =>
    engine.runTurn({ sessionId, userMessage }).pipe(
      Stream.runLast,
      Effect.match({
        onFailure: (error) => ({ turn: error._tag, reason: "reason" in error ? error.reason : undefined }),
        onSuccess: (last) => ({ turn: last._tag === "Some" && last.value.type === "turn.completed" ? last.value.payload.stopReason : "no end" })
      }),
      Effect.tap((result) => Effect.sync(() => process.stdout.write(JSON.stringify(result) + "\n")))
    )
  yield* turn("first")
  let n = 0
  while (yield* nextLine) yield* turn(`turn ${++n}`)
})

Effect.runPromise(program.pipe(Effect.provide(SessionEngineModule.layer().pipe(
  Layer.provideMerge(store),
  Layer.provideMerge(FakeModelProvider.layer(model)),
  Layer.provideMerge(IdGenerator.layerSequential),
  Layer.provideMerge(NodeContext.layer)
)))).then(
  () => process.exit(0),
  (error) => {
    process.stderr.write(`${String(error)}\n`)
    process.exit(1)
  }
)
