/**
 * The setup the tests of images read by `read_file` through each official SDK share
 * (readFileImages, refusedImages): a workspace whose `src/index.ts` is a PNG — the recorded
 * tool-calls stream reads that file — the local server replaying the vendors' recordings, each
 * vendor's model against it, and the engine with the workspace tools.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { afterAll, beforeAll } from "@effect/vitest"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as SessionEngineModule from "../../src/engine/SessionEngine.js"
import * as AnthropicModelProvider from "../../src/layers/AnthropicModelProvider.js"
import * as MemoryEventStore from "../../src/layers/MemoryEventStore.js"
import * as OpenAiModelProvider from "../../src/layers/OpenAiModelProvider.js"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import * as WorkspaceTools from "../../src/layers/WorkspaceTools.js"
import * as IdGenerator from "../../src/services/IdGenerator.js"
import type { ModelProvider } from "../../src/services/ModelProvider.js"
import * as WireServer from "./WireServer.js"

export const png = readFileSync(resolve(import.meta.dirname, "../../fixtures/images/photo.png"))

/**
 * For the calling test file: a workspace (`cwd`, in the scratch folder `root`) whose `src/index.ts` is {@link png}, removed after
 * the file; and the wire server (`server()`), started before its tests and closed after them.
 */
export const setup = (name: string) => {
  const root = mkdtempSync(join(tmpdir(), `effect-agent-${name}-`))
  const cwd = join(root, "work")
  mkdirSync(join(cwd, "src"), { recursive: true })
  writeFileSync(join(cwd, "src/index.ts"), png)
  afterAll(() => rmSync(root, { recursive: true, force: true }))
  let started: WireServer.WireServer | undefined
  beforeAll(async () => {
    started = await WireServer.start()
  })
  afterAll(() => started?.close())
  const server = (): WireServer.WireServer => {
    if (started === undefined) throw new Error("the wire server starts before the file's tests")
    return started
  }
  return { root, cwd, server }
}

/** Each vendor's model layer, through its official SDK, against the wire server. */
export const vendorLayers = (server: () => WireServer.WireServer) => ({
  anthropic: () => AnthropicModelProvider.layer({ apiKey: Redacted.make("sk-ant-test"), baseURL: server().url }),
  openai: () => OpenAiModelProvider.layer({ apiKey: Redacted.make("sk-openai-test"), baseURL: `${server().url}/v1` })
})

/** The engine on a memory store, with the workspace tools (in `bypass`: nothing asks) and `model`. */
export const engine = (model: Layer.Layer<ModelProvider>) =>
  SessionEngineModule.layer().pipe(
    Layer.provideMerge(MemoryEventStore.layer),
    Layer.provide(IdGenerator.layerSequential),
    Layer.provide(model),
    Layer.provide(Layer.mergeAll(WorkspaceTools.layer().pipe(Layer.provide(NodeContext.layer)), PermissionPolicy.layer({ mode: "bypass" })))
  )
