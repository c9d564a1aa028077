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
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import {
  AnthropicModelProvider,
  FakeModelProvider,
  IdGenerator,
  JsonlEventStore,
  type ModelProvider,
  OpenAiModelProvider,
  PermissionPolicy,
  PromptComposer,
  SessionEngine,
  WorkspaceTools
} from "../index.js"
import * as Approvals from "./Approvals.js"
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

const provider = Options.choice("provider", ["anthropic", "openai", "fake"]).pipe(
  Options.optional,
  Options.withDescription("The model provider (default: anthropic if ANTHROPIC_API_KEY is set, else openai if OPENAI_API_KEY is, else the echo model)")
)
const model = Options.text("model").pipe(Options.optional, Options.withDescription("The model name"))
const baseUrl = Options.text("base-url").pipe(
  Options.optional,
  Options.withDescription("The provider's API address, e.g. an OpenAI-compatible server such as http://localhost:11434/v1")
)

interface ModelChoice {
  readonly provider: Option.Option<"anthropic" | "openai" | "fake">
  readonly model: Option.Option<string>
  readonly baseUrl: Option.Option<string>
  readonly script: Option.Option<string>
}

const isSet = (name: string) => (process.env[name] ?? "").trim() !== ""

/**
 * The model: `--provider` if given; a scripted fake with `--script`; else the first provider whose
 * API key is set; else the built-in echo model. Which one answers is said on stderr.
 */
const modelLayer = (choice: ModelChoice) =>
  Effect.gen(function*() {
    const overrides = { model: Option.getOrUndefined(choice.model), baseURL: Option.getOrUndefined(choice.baseUrl) }
    const picked = Option.getOrElse(choice.provider, () =>
      Option.isSome(choice.script) ? "fake" : isSet("ANTHROPIC_API_KEY") ? "anthropic" : isSet("OPENAI_API_KEY") ? "openai" : "fake")
    if (picked === "anthropic") {
      if (!isSet("ANTHROPIC_API_KEY")) return yield* Effect.fail(new Error("--provider anthropic needs ANTHROPIC_API_KEY to be set"))
      yield* Console.error(`effect-agent: answering with anthropic ${overrides.model ?? AnthropicModelProvider.defaultModel}.`)
      return AnthropicModelProvider.layerConfig(overrides)
    }
    if (picked === "openai") {
      // A local OpenAI-compatible server (Ollama, LM Studio, vLLM) usually needs no key.
      if (!isSet("OPENAI_API_KEY") && overrides.baseURL === undefined) {
        return yield* Effect.fail(new Error("--provider openai needs OPENAI_API_KEY to be set (or --base-url for a local server)"))
      }
      yield* Console.error(`effect-agent: answering with openai ${overrides.model ?? OpenAiModelProvider.defaultModel}${overrides.baseURL === undefined ? "" : ` at ${overrides.baseURL}`}.`)
      return isSet("OPENAI_API_KEY")
        ? OpenAiModelProvider.layerConfig(overrides)
        : OpenAiModelProvider.layer({ ...overrides, apiKey: Redacted.make("no-key") })
    }
    if (Option.isSome(choice.script)) {
      const fs = yield* FileSystem.FileSystem
      return FakeModelProvider.layer(yield* decodeScript(yield* fs.readFileString(choice.script.value)))
    }
    yield* Console.error("effect-agent: no API key set (ANTHROPIC_API_KEY, OPENAI_API_KEY): answering with the built-in echo model.")
    return FakeModelProvider.layer()
  })

const mode = Options.choice("mode", PermissionPolicy.Mode.literals).pipe(
  Options.withDefault("default" as const),
  Options.withDescription(
    "Permissions: default (reads allowed, writes and commands ask), acceptEdits (edits allowed too), readOnly, bypass (everything allowed)"
  )
)

/** The engine the CLI runs: JSONL store, the workspace tools, the rule-based policy, the prompt composer. */
const engineLayer = <E>(dir: string, model: Layer.Layer<ModelProvider.ModelProvider, E>, permissions: PermissionPolicy.Options = {}) =>
  SessionEngine.layer.pipe(
    Layer.provide(JsonlEventStore.layer({ dataDir: dir })),
    Layer.provide(model),
    Layer.provide(IdGenerator.layer),
    Layer.provide(WorkspaceTools.layer()),
    Layer.provide(PermissionPolicy.layer(permissions)),
    Layer.provide(PromptComposer.layer()),
    Layer.provide(NodeContext.layer)
  )

/** Streams one turn to the terminal, asking the user whenever the policy asks. */
const streamTurn = (engine: SessionEngine.SessionEngine.Service, sessionId: string, stream: ReturnType<SessionEngine.SessionEngine.Service["runTurn"]>) =>
  Effect.gen(function*() {
    const render = Render.make(output, { transcript: false })
    const prompt = yield* Approvals.make
    yield* stream.pipe(
      Stream.runForEach((event) =>
        Effect.gen(function*() {
          if (event.type === "turn.started") render.note(`session ${sessionId}`)
          render.event(event)
          if (event.type === "permission.resolved" && event.payload.decision === "ask") {
            render.endLine()
            const { toolCallId } = event.payload
            const answer = yield* prompt.ask(`  Allow ${Render.describeCall(render.callOf(toolCallId))}?`)
            yield* engine.resolvePermission({ sessionId, toolCallId, ...answer })
          }
        })
      ),
      // Ctrl+C interrupts the stream; the engine stores turn.completed {cancelled} before this runs.
      Effect.onInterrupt(() => Effect.sync(() => render.note("[turn cancelled]")))
    )
  }).pipe(Effect.scoped)

const run = Command.make(
  "run",
  {
    message: Args.text({ name: "message" }).pipe(Args.withDescription("What to ask the agent")),
    session: Options.text("session").pipe(Options.optional, Options.withDescription("Continue this session instead of starting one")),
    script: Options.file("script", { exists: "yes" }).pipe(
      Options.optional,
      Options.withDescription("A JSON file of scripted model responses, answered by the fake model")
    ),
    provider,
    model,
    baseUrl,
    mode,
    dataDir
  },
  ({ baseUrl, dataDir, message, mode, model, provider, script, session }) =>
    Effect.gen(function*() {
      const models = yield* modelLayer({ provider, model, baseUrl, script })
      yield* Effect.gen(function*() {
        const engine = yield* SessionEngine.SessionEngine
        const sessionId = Option.isSome(session)
          ? session.value
          : (yield* engine.createSession({ cwd: process.cwd(), client: "cli" })).sessionId
        yield* streamTurn(engine, sessionId, engine.runTurn({ sessionId, userMessage: message }))
      }).pipe(Effect.provide(engineLayer(dataDir, models, { mode })))
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
      const render = Render.make(output, { transcript: true })
      yield* engine.replaySession({ sessionId }).pipe(
        Stream.runForEach((event) => Effect.sync(() => json ? output.out(JSON.stringify(event) + "\n") : render.event(event)))
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
