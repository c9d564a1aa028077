/**
 * The hostile-wire tests' shared parts: the engine on a memory store, the vendor providers on a
 * wire server, and streams written in the vendors' shapes.
 */
import * as AnthropicClient from "@effect/ai-anthropic/AnthropicClient"
import * as AnthropicLanguageModel from "@effect/ai-anthropic/AnthropicLanguageModel"
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import { afterAll, beforeAll, beforeEach } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import * as SessionEngineModule from "../../src/engine/SessionEngine.js"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import * as AnthropicModelProvider from "../../src/layers/AnthropicModelProvider.js"
import * as EffectAiModelProvider from "../../src/layers/EffectAiModelProvider.js"
import * as MemoryEventStore from "../../src/layers/MemoryEventStore.js"
import * as OpenAiModelProvider from "../../src/layers/OpenAiModelProvider.js"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import * as IdGenerator from "../../src/services/IdGenerator.js"
import type { ModelProvider } from "../../src/services/ModelProvider.js"
import type { ToolRouter } from "../../src/services/ToolRouter.js"
import { collect, testTools } from "../helpers.js"
import * as WireServer from "./WireServer.js"

/** The engine on a memory store, with `read_file` answering with its arguments (so each result says which call it is). */
export const engine = (
  provider: () => Layer.Layer<ModelProvider>,
  options: SessionEngineModule.Options = {},
  tools: () => Layer.Layer<ToolRouter> = () => testTools({ read_file: { run: (args) => Effect.succeed({ result: `contents of ${JSON.stringify(args)}` }) } })
) =>
  Layer.suspend(() =>
    SessionEngineModule.layer(options).pipe(
      Layer.provide(MemoryEventStore.layer),
      Layer.provide(IdGenerator.layerSequential),
      Layer.provide(provider()),
      Layer.provide(Layer.mergeAll(tools(), PermissionPolicy.layer({ mode: "bypass" })))
    ))
/** A wire server for a file's tests: started before them, reset before each (a failed test leaves nothing queued), closed after. */
export const serverForTests = (): WireServer.WireServer => {
  let server: WireServer.WireServer | undefined
  beforeAll(async () => {
    server = await WireServer.start()
  })
  afterAll(() => server?.close())
  beforeEach(() => server?.reset())
  const started = () => server!
  return {
    get url() {
      return started().url
    },
    get received() {
      return started().received
    },
    clientClosed: () => started().clientClosed(),
    respond: (...recordings) => started().respond(...recordings),
    reset: () => started().reset(),
    close: () => started().close()
  }
}

/** The vendor providers on the wire server `server()` gives (read when a layer is built). */
export const vendorLayers = (server: () => WireServer.WireServer) => ({
  anthropic: () => AnthropicModelProvider.layer({ apiKey: Redacted.make("k"), baseURL: server().url }),
  openai: () => OpenAiModelProvider.layer({ apiKey: Redacted.make("k"), baseURL: `${server().url}/v1` }),
  /** `@effect/ai-anthropic` through the bridge, on the same Messages streams. */
  effectAiAnthropic: () =>
    EffectAiModelProvider.layer({ model: "claude-sonnet-4-5" }).pipe(
      Layer.provide(AnthropicLanguageModel.model("claude-sonnet-4-5")),
      Layer.provide(AnthropicClient.layer({ apiKey: Redacted.make("k"), apiUrl: server().url })),
      Layer.provide(FetchHttpClient.layer)
    )
})

/** A streamed response: each event as an SSE message (Anthropic's carry their `event:` name), OpenAI's ended by `[DONE]`. */
export const sse = (events: ReadonlyArray<Record<string, unknown>>, done = false) => ({
  status: 200,
  headers: { "content-type": "text/event-stream" },
  body: events.map((e) => `${typeof e.type === "string" ? `event: ${e.type}\n` : ""}data: ${JSON.stringify(e)}\n\n`).join("") +
    (done ? "data: [DONE]\n\n" : "")
})

export const a = {
  start: { type: "message_start", message: { id: "msg_1", type: "message", role: "assistant", model: "claude-sonnet-4-5", content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 10, output_tokens: 1 } } },
  tool: (index: number, id: string, args: unknown, name = "read_file") => [
    { type: "content_block_start", index, content_block: { type: "tool_use", id, name, input: {} } },
    { type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json: JSON.stringify(args) } },
    { type: "content_block_stop", index }
  ],
  text: (index: number, text: string) => [
    { type: "content_block_start", index, content_block: { type: "text", text: "" } },
    { type: "content_block_delta", index, delta: { type: "text_delta", text } },
    { type: "content_block_stop", index }
  ],
  end: (reason: string) => [{ type: "message_delta", delta: { stop_reason: reason, stop_sequence: null }, usage: { output_tokens: 5 } }, { type: "message_stop" }],
  response: (...blocks: ReadonlyArray<ReadonlyArray<Record<string, unknown>>>) => (reason: string) => sse([a.start, ...blocks.flat(), ...a.end(reason)]),
  answer: () => a.response(a.text(0, "done"))("end_turn")
}

export const o = {
  chunk: (delta: unknown, finish: string | null = null) => ({ id: "chatcmpl-1", object: "chat.completion.chunk", created: 1, model: "gpt-4.1-mini", choices: [{ index: 0, delta, finish_reason: finish }], usage: null }),
  usage: { id: "chatcmpl-1", object: "chat.completion.chunk", created: 1, model: "gpt-4.1-mini", choices: [], usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } },
  /** Calls with these ids (undefined: none sent) at indexes 0, 1, … */
  calls: (...calls: ReadonlyArray<{ readonly id?: string; readonly args: unknown }>) =>
    sse([
      o.chunk({ role: "assistant", content: "" }),
      ...calls.map((call, index) =>
        o.chunk({ tool_calls: [{ index, ...(call.id === undefined ? {} : { id: call.id }), type: "function", function: { name: "read_file", arguments: JSON.stringify(call.args) } }] })
      ),
      o.chunk({}, "tool_calls"),
      o.usage
    ], true),
  answer: () => sse([o.chunk({ role: "assistant", content: "done" }), o.chunk({}, "stop"), o.usage], true)
}

/** A turn on a new session (in `cwd`), or on `sessionId`; its events. */
export const turn = (userMessage: string, sessionId?: string, cwd = "/work") =>
  Effect.gen(function*() {
    const agent = yield* SessionEngine
    const id = sessionId ?? (yield* agent.createSession({ cwd, client: "test" })).sessionId
    return { sessionId: id, events: yield* collect(agent.runTurn({ sessionId: id, userMessage })) }
  })

/** The text deltas a turn stored. */
export const deltasOf = (events: ReadonlyArray<AgentEvent>) => events.flatMap((e) => (e.type === "model.delta" ? [(e.payload as { text: string }).text] : []))

export const replay = (sessionId: string) => Effect.flatMap(SessionEngine, (agent) => collect(agent.replaySession({ sessionId })))
