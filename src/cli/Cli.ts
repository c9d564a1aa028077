/**
 * The `effect-agent` command line: `run`, `replay` and `sessions`, on the public API only.
 *
 * @since 0.1.0
 */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as FileSystem from "@effect/platform/FileSystem"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { FakeModelProvider, IdGenerator, JsonlEventStore, type ModelProvider, SessionEngine } from "../index.js"
import * as Render from "./Render.js"

const output: Render.Output = {
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text)
}

const dataDir = Options.directory("data-dir").pipe(
  Options.withDefault(".effect-agent"),
  Options.withDescription("Where sessions are stored (JSONL files)")
)

const decodeScript = Schema.decodeUnknown(Schema.parseJson(FakeModelProvider.Script))

/** The model: a scripted fake from `--script`, else the built-in echo model (said on stderr). */
const modelLayer = (script: Option.Option<string>) =>
  Effect.gen(function*() {
    if (Option.isSome(script)) {
      const fs = yield* FileSystem.FileSystem
      const parsed = yield* decodeScript(yield* fs.readFileString(script.value))
      return FakeModelProvider.layer(parsed)
    }
    yield* Console.error("effect-agent: no API key set (ANTHROPIC_API_KEY, OPENAI_API_KEY): answering with the built-in echo model.")
    return FakeModelProvider.layer()
  })

const engineLayer = (dir: string, model: Layer.Layer<ModelProvider.ModelProvider>) =>
  SessionEngine.layer.pipe(
    Layer.provide(JsonlEventStore.layer({ dataDir: dir })),
    Layer.provide(model),
    Layer.provide(IdGenerator.layer),
    Layer.provide(NodeContext.layer)
  )

const run = Command.make(
  "run",
  {
    message: Args.text({ name: "message" }).pipe(Args.withDescription("What to ask the agent")),
    session: Options.text("session").pipe(Options.optional, Options.withDescription("Continue this session instead of starting one")),
    script: Options.file("script", { exists: "yes" }).pipe(
      Options.optional,
      Options.withDescription("A JSON file of scripted model responses, answered by the fake model")
    ),
    dataDir
  },
  ({ dataDir, message, script, session }) =>
    Effect.gen(function*() {
      const model = yield* modelLayer(script)
      yield* Effect.gen(function*() {
        const engine = yield* SessionEngine.SessionEngine
        const sessionId = Option.isSome(session)
          ? session.value
          : (yield* engine.createSession({ cwd: process.cwd(), client: "cli" })).sessionId
        const render = Render.make(output)
        yield* engine.runTurn({ sessionId, userMessage: message }).pipe(
          Stream.runForEach((event) =>
            Effect.sync(() => {
              if (event.type === "turn.started") render.note(`session ${sessionId}`)
              render.event(event, { echoUser: false })
            })
          ),
          // Ctrl+C interrupts the stream; the engine stores turn.completed {cancelled} before this runs.
          Effect.onInterrupt(() => Effect.sync(() => render.note("[turn cancelled]")))
        )
      }).pipe(Effect.provide(engineLayer(dataDir, model)))
    })
).pipe(Command.withDescription("Run one turn: stream the agent's answer to the terminal"))

const replay = Command.make(
  "replay",
  {
    sessionId: Args.text({ name: "sessionId" }),
    json: Options.boolean("json").pipe(Options.withDescription("Print the stored events, one JSON object per line")),
    dataDir
  },
  ({ dataDir, json, sessionId }) =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine.SessionEngine
      const render = Render.make(output)
      yield* engine.replaySession({ sessionId }).pipe(
        Stream.runForEach((event) =>
          Effect.sync(() => json ? output.out(JSON.stringify(event) + "\n") : render.event(event, { echoUser: true }))
        )
      )
    }).pipe(Effect.provide(engineLayer(dataDir, FakeModelProvider.layer())))
).pipe(Command.withDescription("Print a session's transcript (or, with --json, its events)"))

const sessions = Command.make("sessions", { dataDir }, ({ dataDir }) =>
  Effect.gen(function*() {
    const engine = yield* SessionEngine.SessionEngine
    const summaries = yield* engine.listSessions
    if (summaries.length === 0) return yield* Console.error(`No sessions in ${dataDir}.`)
    for (const s of summaries) {
      yield* Console.log(`${s.sessionId}  ${s.lastActivityAt}  ${s.turnCount} turn${s.turnCount === 1 ? "" : "s"}  ${s.client}  ${s.cwd}`)
    }
  }).pipe(Effect.provide(engineLayer(dataDir, FakeModelProvider.layer())))).pipe(
    Command.withDescription("List stored sessions, most recently active first")
  )

/** The root command. */
export const command = Command.make("effect-agent").pipe(
  Command.withDescription("An Effect-TS runtime for coding agents"),
  Command.withSubcommands([run, replay, sessions])
)

/** Runs the CLI on `argv` (as `process.argv`). */
export const main = Command.run(command, { name: "effect-agent", version: "0.1.0" })
