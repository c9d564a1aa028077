/**
 * Which model answers the CLI: `--provider` if given; a scripted fake with `--script`; else the
 * first provider whose API key is set; else the built-in echo model. Which one it is goes to stderr.
 *
 * @since 0.1.0
 */
import * as FileSystem from "@effect/platform/FileSystem"
import * as Config from "effect/Config"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import type * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as NodeFsSync from "node:fs"
import * as NodePath from "node:path"
import { Address, ApiKey, FakeModelProvider, type McpCassette, ModelProvider, ProjectSettings, TrustStore } from "../index.js"
import type { AnthropicModelProvider as AnthropicPublic } from "../anthropic.js"
import { CliError } from "./CliError.js"
import * as ConfigProblem from "./ConfigProblem.js"
import { terminalSafe } from "./Terminal.js"
import type { Choice } from "./ModelFlags.js"
import * as NodeServices from "./NodeServices.js"

export type { Choice } from "./ModelFlags.js"

/** Whether Anthropic gets prompt-cache breakpoints: unless `--no-prompt-cache` or the user's settings (`"promptCaching": false`) say no. */
const promptCaching = (choice: Choice) =>
  choice.noPromptCache === true
    ? Effect.succeed(false)
    : Effect.flatMap(TrustStore.configDir, (configDir) => ProjectSettings.readUser(configDir)).pipe(
      Effect.map((user) => user?.promptCaching !== false),
      Effect.mapError((error) => new CliError({ reason: "invalid_file", message: error.message })),
      Effect.provide(NodeServices.layer)
    )

/** A flag's value, or `undefined` when it was not given. */
const given = <A>(flag: Option.Option<A> | undefined): A | undefined => flag === undefined ? undefined : Option.getOrUndefined(flag)

/** The thinking flags given (`--thinking-budget`, `--thinking`, `--thinking-display`, `--effort`). */
const thinkingFlags = (choice: Choice) => ({
  thinkingBudget: given(choice.thinkingBudget),
  thinking: given(choice.thinking),
  thinkingDisplay: given(choice.thinkingDisplay),
  effort: given(choice.effort)
})

/** The thinking flags' names, by their option's. */
const flagNames = { thinkingBudget: "--thinking-budget", thinking: "--thinking", thinkingDisplay: "--thinking-display", effort: "--effort" } as const

type ThinkingOptions = AnthropicPublic.ThinkingOptions
type ThinkingKey = keyof ThinkingOptions
const thinkingKeys: ReadonlyArray<ThinkingKey> = ["thinkingBudget", "thinking", "thinkingDisplay", "effort"]

/** What the thinking options need of the provider's module (loaded only when Anthropic answers). */
interface AnthropicThinking {
  readonly thinkingBudgetProblem: (budget: number, maxOutputTokens: number) => string | undefined
  readonly thinkingProblem: (options: ThinkingOptions, maxOutputTokens: number) => readonly [ThinkingKey, string] | undefined
  readonly thinkingConfigs: { readonly [K in ThinkingKey]: Config.Config<Option.Option<NonNullable<ThinkingOptions[K]>>> }
  readonly thinkingVariables: { readonly [K in ThinkingKey]: string }
  readonly defaultMaxOutputTokens: number
}

/**
 * The thinking options: the flags over the environment's. A flag that picks a kind of thinking
 * (`--thinking adaptive`, `--thinking-budget`) replaces the other kind the environment asks for, and
 * any flag its own variable, which is then not read: a value there that is no good does not fail a
 * run that does not use it. What the API would refuse in the result is a usage error naming the flag
 * (or the variable) it came from, before any request; `--thinking-budget` checked against the output
 * token limit the provider will have (`ANTHROPIC_MAX_OUTPUT_TOKENS`, else its default).
 */
const thinkingOptions = (choice: Choice, anthropic: AnthropicThinking) =>
  Effect.gen(function*() {
    const flags = thinkingFlags(choice)
    if (flags.thinking !== undefined && flags.thinkingBudget !== undefined) {
      return yield* new CliError({ reason: "invalid_arguments", message: "--thinking adaptive and --thinking-budget exclude each other: adaptive thinking has no budget (--effort sets how much it thinks)" })
    }
    // A limit that is no integer is the configuration's own error, said when the provider is built.
    const limit = yield* Config.option(Config.integer("ANTHROPIC_MAX_OUTPUT_TOKENS")).pipe(Effect.orElseSucceed(() => Option.none<number>()))
    const maxOutputTokens = Option.getOrElse(limit, () => anthropic.defaultMaxOutputTokens)
    const budget = flags.thinkingBudget
    const budgetProblem = budget === undefined ? undefined : anthropic.thinkingBudgetProblem(budget, maxOutputTokens)
    if (budgetProblem !== undefined) return yield* new CliError({ reason: "invalid_arguments", message: `--thinking-budget ${budget} ${budgetProblem}` })
    const kindByFlag = flags.thinking !== undefined || flags.thinkingBudget !== undefined
    const replaced = (key: ThinkingKey) => flags[key] !== undefined || (kindByFlag && (key === "thinking" || key === "thinkingBudget"))
    const fromEnvironment = yield* Effect.forEach(thinkingKeys.filter((key) => !replaced(key)), (key) =>
      Effect.map(
        Effect.mapError(anthropic.thinkingConfigs[key] as Config.Config<Option.Option<unknown>>, ConfigProblem.toCliError),
        Option.match({ onNone: () => [], onSome: (value) => [[key, value] as const] })
      ))
    const options = { ...Object.fromEntries(fromEnvironment.flat()), ...definedOnly(flags) } as ThinkingOptions
    const problem = anthropic.thinkingProblem(options, maxOutputTokens)
    if (problem === undefined) return options
    const [key, why] = problem
    const source = flags[key] !== undefined ? `${flagNames[key]} ${flags[key]}` : `${anthropic.thinkingVariables[key]}=${options[key]}`
    return yield* new CliError({ reason: "invalid_arguments", message: `${source}: ${why}` })
  })

/**
 * What the run asks of thinking, for its banner: from the options it sends (the flags over the
 * environment's), not the flags alone — `ANTHROPIC_THINKING=adaptive` asked and was not shown.
 */
const thinkingShown = (options: ThinkingOptions): string =>
  (options.thinking === "adaptive" ? ", thinking adaptively" : options.thinkingBudget !== undefined ? `, thinking up to ${options.thinkingBudget} tokens` : "") +
  (options.effort === undefined ? "" : `, effort ${options.effort}`)

/** The entries whose value is not `undefined`: an absent option is no key at all. */
const definedOnly = <A extends object>(options: A): Partial<A> => Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined)) as Partial<A>

/**
 * A `--script` file: the fake model's script. It no longer names a file to record the requests to
 * (`recordRequestsTo`, now `--record-requests`): a shared cassette's `"../../.bashrc"` appended every
 * request — the project's `AGENTS.md` in it — to the user's start-up file, unsaid (review 59c).
 */
const ScriptFile = FakeModelProvider.Script
// A key the script does not know is an error naming it: a typo (`"chunk"` for `"chunks"`) would
// otherwise decode as an empty answer and the run would exit 0.
const decodeScript = Schema.decodeUnknown(ScriptFile, { onExcessProperty: "error" })

/** A request's image bytes (a `Map` of blob hash to bytes) as JSON: each image in base64, by its hash. */
const imagesAsBase64 = (_key: string, value: unknown) =>
  value instanceof Map ? Object.fromEntries(Array.from(value, ([hash, bytes]: [string, Uint8Array]) => [hash, Buffer.from(bytes).toString("base64")])) : value

/**
 * Appends `text` to `file` in one `write(2)`: a new file (`0600`) or a regular one, never through a
 * link at its name (`O_NOFOLLOW`: a repository's `requests.jsonl` shipped as a link to `~/.bashrc`
 * fails `ELOOP`) nor blocking on a pipe (`O_NONBLOCK`).
 */
const appendRegular = (file: string, text: string): void => {
  const fd = NodeFsSync.openSync(file, NodeFsSync.constants.O_WRONLY | NodeFsSync.constants.O_APPEND | NodeFsSync.constants.O_CREAT | NodeFsSync.constants.O_NOFOLLOW | NodeFsSync.constants.O_NONBLOCK, 0o600)
  try {
    if (!NodeFsSync.fstatSync(fd).isFile()) throw Object.assign(new Error("not a regular file"), { code: "EINVAL" })
    NodeFsSync.writeSync(fd, text)
  } finally {
    NodeFsSync.closeSync(fd)
  }
}

/** `--record-requests`: appends every request the model receives to a file, one JSON line each. */
const recordingTo = (file: string) =>
  Layer.effect(
    ModelProvider.ModelProvider,
    Effect.map(ModelProvider.ModelProvider, (inner) => ({
      ...inner,
      stream: (request: ModelProvider.ModelRequest) =>
        Stream.unwrap(Effect.try(() => appendRegular(file, JSON.stringify(request, imagesAsBase64) + "\n")).pipe(
          Effect.orDie,
          Effect.as(inner.stream(request))
        ))
    }))
  )

/**
 * `--record-requests <file>` checked before the run: a file that is there must be a regular file
 * (a link, a folder or a pipe is refused, naming it), and its folder must exist.
 */
const recordFile = (choice: Choice) =>
  Effect.gen(function*() {
    const file = choice.recordRequests === undefined ? undefined : Option.getOrUndefined(choice.recordRequests)
    if (file === undefined) return undefined
    const info = yield* Effect.sync(() => NodeFsSync.lstatSync(file, { throwIfNoEntry: false }))
    const folder = yield* Effect.sync(() => NodeFsSync.statSync(NodePath.dirname(NodePath.resolve(file)), { throwIfNoEntry: false }))
    const problem = info !== undefined && !info.isFile() ? (info.isSymbolicLink() ? "is a link (the requests are never written through one)" : "is not a regular file")
      : folder?.isDirectory() !== true ? "is in a folder that does not exist" : undefined
    if (problem !== undefined) return yield* new CliError({ reason: "invalid_arguments", message: `--record-requests ${terminalSafe(file)} ${problem}` })
    return file
  })

/** An API key from configuration (the environment), if one is set and not blank. */
const apiKey = (name: string) =>
  Config.option(Config.redacted(name)).pipe(
    Config.map(Option.filter((key) => Redacted.value(key).trim() !== "")),
    Effect.orElseSucceed(() => Option.none<Redacted.Redacted>())
  )

/** A key the SDKs cannot put in a header is refused before anything starts (see `ApiKey.unusable`). */
const usableKey = (name: string, key: Option.Option<Redacted.Redacted>) => {
  const why = Option.isNone(key) ? undefined : ApiKey.unusable(Redacted.value(key.value))
  return why === undefined
    ? Effect.void
    : Effect.fail(new CliError({ reason: "invalid_api_key", message: `${name} ${why}: set it to the key itself` }))
}

/** `config` with the command line's choices laid over it. */
/**
 * A provider's layer read from the configuration as with a key, for a server that takes none (a local
 * OpenAI-compatible one): `variable` (unset or blank, which is why no key is used) reads as a stand-in. Made with the options alone, it
 * read none of the others (`OPENAI_MODEL`, `OPENAI_MAX_OUTPUT_TOKENS`, …): a bad one passed unsaid.
 */
const withoutKey = <A, E, R>(variable: string, layer: Layer.Layer<A, E, R>): Layer.Layer<A, E, R> =>
  Layer.unwrapEffect(Effect.configProviderWith((current) =>
    Effect.succeed(Layer.provide(layer, Layer.setConfigProvider(ConfigProvider.orElse(ConfigProvider.fromMap(new Map([[variable, "no-key"]])), () => current)))))
  )

const withOverrides = <A extends object>(config: Config.Config<A>, overrides: Partial<A>) =>
  Config.map(config, (options) => ({ ...options, ...definedOnly(overrides) }))

/** Reads and decodes a `--script` file; a bad one is one line naming the file and the first issue. */
const readScript = (file: string) =>
  Effect.flatMap(FileSystem.FileSystem, (fs) => fs.readFileString(file)).pipe(
    Effect.flatMap((text): Effect.Effect<typeof ScriptFile.Type, CliError | ParseResult.ParseError> => {
      // A syntax error says where: `--script file:line:column: not valid JSON: …`.
      const json = ProjectSettings.parseJson(text, `--script ${file}`)
      if (!json.ok) return Effect.fail(new CliError({ reason: "invalid_file", message: json.message }))
      // The key that named where requests are recorded is the runner's flag now (`ScriptFile`): said so, not just "unexpected".
      if (typeof json.value === "object" && json.value !== null && "recordRequestsTo" in json.value) {
        return Effect.fail(new CliError({ reason: "invalid_file", message: `--script ${file}: recordRequestsTo is no longer read from a script file; name the file with --record-requests <file>` }))
      }
      return decodeScript(json.value)
    }),
    // One line: the first issue's path and message, not the schema's whole tree.
    Effect.mapError((error) =>
      error._tag === "CliError"
        ? error
        : new CliError({ reason: "invalid_file", message: `--script ${file}: ${error._tag === "ParseError" ? ProjectSettings.firstIssue(error) : error.message}` })
    )
  )

/**
 * The MCP servers a `--script` cassette recorded (see `McpCassette`): they answer instead of the
 * configured servers, so a replay starts none. None without `--script` (or with another provider
 * than the scripted one), or when the script has none.
 */
export const recordedMcp = (choice: Choice) =>
  Option.isNone(choice.script) || Option.exists(choice.provider, (provider) => provider !== "fake")
    ? Effect.succeed(Option.none<McpCassette.Recording>())
    : Effect.map(readScript(choice.script.value), (script) => Option.fromNullable(script.mcp))

/** A provider's `*_MODEL` variable as the provider reads it (none when unset or unreadable), for the notice. */
const modelVariable = (name: string) => Config.option(Config.string(name)).pipe(Effect.orElseSucceed(() => Option.none<string>()))

/**
 * ` at <url>` for a `--base-url`, or else the vendor's `<P>_BASE_URL` (which the provider reads as
 * well: a run sent to an address the environment set named only the vendor), shown without its
 * query or credentials; nothing without either.
 */
const atBaseUrl = (baseURL: string | undefined) => baseURL === undefined ? "" : ` at ${Address.shown(baseURL)}`

/**
 * The model layer for a choice, and its notice (which model answers), to print once nothing else
 * can fail first: a command that then fails on a bad settings file or `.mcp.json` says only that.
 * `model` names it in words for a line of the command's own (`serve`'s start banner).
 */
export const chosen = (choice: Choice) =>
  Effect.flatMap(recordFile(choice), (file) =>
    Effect.map(chosenModel(choice), (model) =>
      file === undefined ? model : {
        ...model,
        notice: Effect.zipRight(model.notice, Console.error(`effect-agent: appending every request the model is sent to ${terminalSafe(file)} (--record-requests).`)),
        layer: recordingTo(file).pipe(Layer.provide(model.layer))
      }))

const chosenModel = (choice: Choice) =>
  Effect.gen(function*() {
    const overrides = { model: Option.getOrUndefined(choice.model), baseURL: Option.getOrUndefined(choice.baseUrl) }
    // Before any request (fetch refuses `user:password@` with no system code: "could not reach …"), never quoting it.
    const unusableUrl = overrides.baseURL === undefined ? undefined : Address.unusable(overrides.baseURL)
    if (unusableUrl !== undefined) {
      return yield* new CliError({ reason: "invalid_arguments", message: `--base-url ${Address.shown(overrides.baseURL!)} ${unusableUrl}` })
    }
    const anthropicKey = yield* apiKey("ANTHROPIC_API_KEY")
    const openAiKey = yield* apiKey("OPENAI_API_KEY")
    const picked = Option.getOrElse(choice.provider, () =>
      Option.isSome(choice.script) ? "fake" : Option.isSome(anthropicKey) ? "anthropic" : Option.isSome(openAiKey) ? "openai" : "fake")
    // Extended thinking is Anthropic's: another provider given the flag would ignore it unsaid.
    const thinkingFlag = Object.entries(thinkingFlags(choice)).find(([, value]) => value !== undefined)
    if (picked !== "anthropic" && thinkingFlag !== undefined) {
      return yield* new CliError({ reason: "invalid_arguments", message: `${flagNames[thinkingFlag[0] as keyof typeof flagNames]} is for --provider anthropic, not ${picked}` })
    }
    if (picked === "anthropic") {
      if (Option.isNone(anthropicKey)) {
        return yield* new CliError({ reason: "missing_api_key", message: "--provider anthropic needs ANTHROPIC_API_KEY to be set" })
      }
      yield* usableKey("ANTHROPIC_API_KEY", anthropicKey)
      // Loaded only when used: the SDK costs start-up time for every other run.
      const { AnthropicModelProvider } = yield* Effect.promise(() => import("../anthropic.js"))
      const caching = yield* promptCaching(choice)
      const thinking = yield* thinkingOptions(choice, AnthropicModelProvider)
      // As the provider reads it: `--model`, else `ANTHROPIC_MODEL`, else its default (before, the notice named the default while ANTHROPIC_MODEL answered).
      const model = `anthropic ${overrides.model ?? Option.getOrUndefined(yield* modelVariable("ANTHROPIC_MODEL")) ?? AnthropicModelProvider.defaultModel}${atBaseUrl(overrides.baseURL ?? Option.getOrUndefined(yield* modelVariable("ANTHROPIC_BASE_URL")))}`
      const thinks = thinkingShown(thinking)
      return {
        model,
        notice: Console.error(`effect-agent: answering with ${model}${thinks}.`),
        layer: AnthropicModelProvider.layerConfig(
          Config.map(withOverrides(AnthropicModelProvider.connectionConfig, { ...overrides, promptCaching: caching }), (options) => ({ ...options, ...thinking }))
        ).pipe(Layer.mapError(ConfigProblem.toCliError))
      }
    }
    if (picked === "openai") {
      // A local OpenAI-compatible server (Ollama, LM Studio, vLLM) usually needs no key.
      if (Option.isNone(openAiKey) && overrides.baseURL === undefined) {
        return yield* new CliError({
          reason: "missing_api_key",
          message: "--provider openai needs OPENAI_API_KEY to be set (or --base-url for a local server)"
        })
      }
      yield* usableKey("OPENAI_API_KEY", openAiKey)
      const { OpenAiModelProvider } = yield* Effect.promise(() => import("../openai.js"))
      // The model the provider will use: `--model`, else `OPENAI_MODEL` (read as the provider reads it), else its default.
      const model = `openai ${overrides.model ?? Option.getOrUndefined(yield* modelVariable("OPENAI_MODEL")) ?? OpenAiModelProvider.defaultModel}${atBaseUrl(overrides.baseURL ?? Option.getOrUndefined(yield* modelVariable("OPENAI_BASE_URL")))}`
      return {
        model,
        notice: Console.error(`effect-agent: answering with ${model}.`),
        layer: Option.isSome(openAiKey)
          ? OpenAiModelProvider.layerConfig(withOverrides(OpenAiModelProvider.config, overrides)).pipe(Layer.mapError(ConfigProblem.toCliError))
          : withoutKey("OPENAI_API_KEY", OpenAiModelProvider.layerConfig(withOverrides(OpenAiModelProvider.config, overrides))).pipe(Layer.mapError(ConfigProblem.toCliError))
      }
    }
    if (Option.isSome(choice.script)) {
      const script = yield* readScript(choice.script.value)
      return { model: `the scripted model (${choice.script.value})`, notice: Effect.void, layer: FakeModelProvider.layer(script) }
    }
    return {
      model: "the built-in echo model (no API key set: ANTHROPIC_API_KEY, OPENAI_API_KEY)",
      // A --model the echo model does not use is named: the user asked for it and did not get it.
      notice: Console.error(
        `effect-agent: no API key set (ANTHROPIC_API_KEY, OPENAI_API_KEY): answering with the built-in echo model${
          overrides.model === undefined || Option.isSome(choice.provider) ? "" : `, not ${terminalSafe(overrides.model)}; set a key, or --provider openai --base-url <url> for a local server`
        }.`
      ),
      layer: FakeModelProvider.layer()
    }
  })

/**
 * The model layer of a choice that says which model answers at its first request: a command that
 * may not call it (`compact` of a session with nothing to compact) says only what it did.
 */
export const announcedAtFirstRequest = <E, R>({ layer, notice }: { readonly layer: Layer.Layer<ModelProvider.ModelProvider, E, R>; readonly notice: Effect.Effect<void> }) =>
  Layer.effect(
    ModelProvider.ModelProvider,
    Effect.map(ModelProvider.ModelProvider, (inner) => {
      let announced = false
      const announce = Effect.suspend(() => {
        if (announced) return Effect.void
        announced = true
        return notice
      })
      return { ...inner, stream: (request) => Stream.unwrap(Effect.as(announce, inner.stream(request))) }
    })
  ).pipe(Layer.provide(layer))

