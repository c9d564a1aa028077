/**
 * The package as an embedder gets it: packed with `npm pack`, installed into fresh projects from the
 * npm registry. Checks one copy of Effect next to an app that pins another 3.x, the README's install
 * line and embedding example (strict type-check under `nodenext`, then run), every other TypeScript
 * block of the README and the embedding (and its deep notes), testing, sessions, instructions, MCP, server and ACP guides
 * (type-checked the same way), the testing guide's tests run in a user's own vitest (its golden log
 * the same bytes run after run), the types
 * of what an embedder's own library exports (declaration emit), the types an embedder relies on
 * (ports, error channels, the event union; no `any` in the declarations), every documented import path under `nodenext`, `bundler`
 * and `node10`, the guides' blocks run as written, a CommonJS `require`, a light root import, a
 * second copy of Effect, and the installed `effect-agent` bin answering a turn from its bundle.
 */
import { execFile } from "node:child_process"
import { copyFileSync, cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs"
import { rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { basename, dirname, join, resolve } from "node:path"
import { pathToFileURL } from "node:url"
import { promisify } from "node:util"
import { afterAll, beforeAll, describe, expect, it } from "vitest"

const root = resolve(import.meta.dirname, "../..")
const readme = readFileSync(join(root, "README.md"), "utf8")
const scratch = mkdtempSync(join(tmpdir(), "effect-agent-pack-"))
// Removed asynchronously: three installed projects are tens of thousands of files, and a synchronous
// removal that long on a busy machine blocks the worker's messages to vitest, which then times out.
afterAll(() => rm(scratch, { recursive: true, force: true }), 120_000)

// Child processes run asynchronously: a long synchronous install or build would block the test
// worker's own messages to vitest, which then times out on a busy machine.
const execAsync = promisify(execFile)
const exec = async (file: string, args: ReadonlyArray<string>, options: { cwd: string; env?: NodeJS.ProcessEnv }) =>
  (await execAsync(file, args, { ...options, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 })).stdout

const npm = (args: ReadonlyArray<string>, cwd: string) => exec("npm", [...args, "--no-audit", "--no-fund", "--prefer-offline"], { cwd })

/** The arguments of the first line of `text` starting with `start` (an `npm install …` a doc shows), its comment left out. */
const npmArguments = (text: string, start: string, where: string) => {
  const line = text.split("\n").find((l) => l.startsWith(start))
  if (line === undefined) throw new Error(`${where}: no \`${start}…\` line`)
  return line.replace(/\s+#.*$/, "").trim().split(/\s+/).slice(1)
}

/** The README's install line: the one `npm install` of the packed tarball in the "As a library" section. */
const installLine = () => npmArguments(readme.slice(readme.indexOf("## As a library")), "npm install ./effect-agent-", "README, under ## As a library")

/** The README's embedding example: the first TypeScript block of "As a library". */
const embeddingExample = () => {
  const section = readme.slice(readme.indexOf("## As a library"))
  const match = /```ts\n([\s\S]*?)```/.exec(section)
  if (match === null) throw new Error("README: no TypeScript block under ## As a library")
  return match[1]!
}

/**
 * The TypeScript blocks an embedder copies: every one of the README's "As a library", the embedding
 * guide, the sessions, instructions, MCP, server and ACP guides, and the testing guide's first part (its
 * second is about this repository's own suite; its tests, on `@effect/vitest`, are run below), but
 * the README's embedding example, which is checked and run on its own. A block importing a package
 * the README's install line does not install (`notInstalled`: OpenTelemetry's, and vitest's, whose
 * blocks run in a test of their own) is left out; every other one is checked, so a new block cannot
 * slip past — the `@effect/ai` bridge's too, with the optional peers it names installed.
 */
const notInstalled = ["@effect/opentelemetry", "@opentelemetry/", "@effect/vitest"]
/** The optional peers the embedding guide's `@effect/ai` block names, installed after the README's line (versions as here, from the npm cache). */
const effectAiPeers = ["@effect/ai", "@effect/ai-openai"]
const docsSnippets = () => {
  const blocks = (text: string, name: string) =>
    [...text.matchAll(/```ts\n([\s\S]*?)```/g)].map((m, i) => ({ name: `${name}-${i}`, code: m[1]! }))
  const guide = (file: string) => readFileSync(join(root, "docs", file), "utf8")
  const all = [
    ...blocks(readme.slice(readme.indexOf("## As a library")), "readme").slice(1),
    ...blocks(guide("embedding.md"), "embedding"),
    ...blocks(guide("embedding-notes.md"), "embedding-notes"),
    ...blocks(guide("testing.md").split("# This repository's test suite")[0]!, "testing"),
    ...["sessions", "instructions", "mcp", "server", "acp"].flatMap((name) => blocks(guide(`${name}.md`), name))
  ]
  const imports = (code: string) => [...code.matchAll(/from "([^"]+)"/g)].map((m) => m[1]!)
  return all.filter((block) => !imports(block.code).some((from) => notInstalled.some((p) => from.startsWith(p))))
}

/** The testing guide's tests for a user's own agent: the blocks of its first part, as test files. */
const testingGuideTests = () => {
  const firstPart = readFileSync(join(root, "docs/testing.md"), "utf8").split("# This repository's test suite")[0]!
  return [...firstPart.matchAll(/```ts\n([\s\S]*?)```/g)].map((m, i) => ({ file: `test/guide-${i}.test.ts`, code: m[1]! }))
}

/**
 * The testing guide's install line for the test runner (`npm install -D vitest@… @effect/vitest@…`):
 * without it, a user's bare `npm install -D @effect/vitest` took the Effect 4 release, refused beside
 * `effect@3`.
 */
const testingInstallLine = () => npmArguments(readFileSync(join(root, "docs/testing.md"), "utf8"), "npm install -D vitest@", "docs/testing.md")

/** The version of a dev dependency installed here: the user's app gets the same one, from the npm cache. */
const installedVersion = (name: string) => JSON.parse(readFileSync(join(root, "node_modules", name, "package.json"), "utf8")).version as string

/**
 * What an embedder's own library exports, compiled with `declaration: true`: each type must be
 * nameable from the package's entry points, or tsc fails with TS2742 ("cannot be named without a
 * reference to …/node_modules/effect-agent/dist/…"). None of the ports, domain types or errors is
 * imported by name here, as in a file that only builds layers.
 */
const embedderLibrary = `import { Effect } from "effect"
import { FakeModelProvider, JsonlEventStore, MemoryEventStore, PermissionPolicy, PromptComposer, SessionEngine, Toolkit, WorkspaceTools } from "effect-agent"

export const Store = MemoryEventStore.layer
export const Files = JsonlEventStore.layer({ dataDir: ".effect-agent" })
export const Model = FakeModelProvider.layer({ responses: [{ chunks: ["Hello!"] }] })
export const Tools = WorkspaceTools.layer()
export const Policy = PermissionPolicy.layer({ mode: "default" })
export const Prompt = PromptComposer.layer({ instructions: "Be brief." })
export const Engine = SessionEngine.layer({ maxSteps: 10 })
export const Extra = Toolkit.extend([])
export const newSession = (cwd: string) => Effect.flatMap(SessionEngine.SessionEngine, (engine) => engine.createSession({ cwd, client: "cli" }))
export const state = (sessionId: string) => Effect.flatMap(SessionEngine.SessionEngine, (engine) => engine.sessionState({ sessionId }))
`

/**
 * The import paths the embedding guide's table documents (`effect-agent/<folder>/<Module>` by the
 * two modules its row names): each must resolve, and the `exports` map must offer nothing more.
 */
const documentedImports = () => {
  const table = readFileSync(join(root, "docs/embedding.md"), "utf8").split("\n").filter((line) => line.startsWith("| `effect-agent"))
  return table.map((line) => /^\| `([^`]+)`/.exec(line)![1]!)
}
const typesOnlyExamples = ["effect-agent/services/EventStore", "effect-agent/domain/Session"]

/** Every documented entry point imported, and the types-only modules named, as an embedder's file would. */
const entryPointsFile = () => {
  const entries = documentedImports().filter((path) => !path.includes("<"))
  return [
    ...entries.map((path, i) => `import * as entry${i} from "${path}"`),
    ...typesOnlyExamples.map((path, i) => `import type * as typesOnly${i} from "${path}"`),
    `export const entries = [${entries.map((_, i) => `entry${i}`).join(", ")}]`,
    `export type TypesOnly = [${typesOnlyExamples.map((_, i) => `typeof typesOnly${i}`).join(", ")}]`,
    ""
  ].join("\n")
}

/**
 * The types an embedder relies on, checked on the installed declarations: the ports are
 * `Context.Tag`s, a model stream fails with `ProviderFailure` and a store with `EventStoreFailure`
 * (not `any`), a turn streams the event union, which `type` narrows, and errors narrow by `_tag`.
 */
const embedderTypes = `import { Context, Effect, Layer, Stream } from "effect"
import {
  AgentEvent, EventStore, EventStoreFailure, FakeModelProvider, IdGenerator, MemoryEventStore, ModelProvider,
  ProviderFailure, SessionEngine, SessionNotFound
} from "effect-agent"

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true : false
const holds = <T extends true>(): T | undefined => undefined

const tag = <I, S>(port: Context.Tag<I, S>) => port
export const ports = [tag(EventStore.EventStore), tag(ModelProvider.ModelProvider), tag(IdGenerator.IdGenerator), tag(SessionEngine.SessionEngine)]
holds<Equal<Stream.Stream.Error<ReturnType<ModelProvider.ModelProvider["Type"]["stream"]>>, ProviderFailure>>()
holds<Equal<Effect.Effect.Error<ReturnType<EventStore.EventStore["Type"]["append"]>>, EventStoreFailure>>()
holds<Equal<Stream.Stream.Error<ReturnType<EventStore.EventStore["Type"]["read"]>>, EventStoreFailure>>()
type Turn = ReturnType<SessionEngine.SessionEngine["Type"]["runTurn"]>
holds<Equal<Stream.Stream.Success<Turn>, AgentEvent.AgentEvent>>()
holds<Equal<Extract<Stream.Stream.Error<Turn>, { readonly _tag: "EventStoreFailure" }>, EventStoreFailure>>()

export const shown = (event: AgentEvent.AgentEvent): string | undefined => {
  if (event.type === "model.delta") return event.payload.text
  if (event.type === "turn.completed") return event.payload.stopReason
  return undefined
}
export const why = (error: EventStoreFailure | SessionNotFound): string => error._tag === "EventStoreFailure" ? error.reason : error.sessionId
export const Engine: Layer.Layer<SessionEngine.SessionEngine> = SessionEngine.layer().pipe(
  Layer.provide(MemoryEventStore.layer),
  Layer.provide(FakeModelProvider.layer({ responses: [] })),
  Layer.provide(IdGenerator.layerSequential)
)
`

/** The guides whose blocks are run as written, not only type-checked (the others start servers or editors' agents). */
const runnable = ["readme-", "embedding-", "sessions-"]

const newProject = (name: string, dependencies: Record<string, string> = {}) => {
  const dir = join(scratch, name)
  mkdirSync(dir)
  writeFileSync(join(dir, "package.json"), JSON.stringify({ name, private: true, type: "module", dependencies }, null, 2))
  return dir
}

let tarball = ""
beforeAll(async () => {
  // dist/ is built by the suite's global setup; `npm pack` ships it with the sources its maps point to.
  const packed = JSON.parse(await npm(["pack", "--json", "--pack-destination", scratch], root)) as Array<{ filename: string; files: Array<{ path: string }> }>
  tarball = join(scratch, packed[0]!.filename)
  const files = packed[0]!.files.map((f) => f.path)
  expect(files).toContain("dist/index.d.ts.map")
  expect(files).toContain("src/index.ts")
}, 120_000)

/**
 * One install for the README's, the testing guide's and the bin's tests: the README's line, the
 * testing guide's runner line and the `@effect/ai` peers, in one `npm install` (each install is most
 * of a test's time on a busy machine). The first test to need it installs it.
 */
let sharedApp: Promise<string> | undefined
const installedApp = () =>
  (sharedApp ??= (async () => {
    const app = newProject("app")
    copyFileSync(tarball, join(app, basename(tarball)))
    await npm([...installLine(), ...testingInstallLine().slice(1), ...effectAiPeers.map((name) => `${name}@${installedVersion(name)}`)], app)
    return app
  })())

const tsc = join(root, "node_modules/typescript/bin/tsc")
/** tsc on a project of `app`; tsc writes its errors to stdout: the failure shows them. */
const typeCheck = (app: string, project: string, what: string) =>
  exec(process.execPath, [tsc, "-p", project], { cwd: app }).catch((error: { stdout?: string }) => {
    throw new Error(`tsc failed on ${what}:\n${error.stdout ?? String(error)}`)
  })
const strict = { strict: true, target: "es2022", types: ["node"], typeRoots: [join(root, "node_modules/@types")], skipLibCheck: true }

describe("the packed package", () => {
  it("the embedding guide's table lists every entry point of the exports map, and nothing else", () => {
    const exported = Object.keys(JSON.parse(readFileSync(join(root, "package.json"), "utf8")).exports as Record<string, unknown>)
      .filter((path) => path !== "./package.json")
      .map((path) => path.replace(/^\./, "effect-agent").replace("/*", "/<folder>/<Module>"))
    expect([...documentedImports()].sort()).toEqual(exported.sort())
  })

  it("installs with the README's line; the docs' TypeScript, an embedder's types and exported layers type-check strictly, every documented path resolves under nodenext, bundler and node10, and the guides' blocks run", async () => {
    const app = await installedApp()
    writeFileSync(join(app, "example.ts"), embeddingExample())
    writeFileSync(join(app, "library.ts"), embedderLibrary)
    writeFileSync(join(app, "types.ts"), embedderTypes)
    writeFileSync(join(app, "entries.ts"), entryPointsFile())
    mkdirSync(join(app, "snippets"))
    const snippets = docsSnippets().map(({ code, name }) => {
      writeFileSync(join(app, "snippets", `${name}.ts`), code)
      return `snippets/${name}.ts`
    })
    // One tsc run for all of them: the README's example, every snippet, the embedder's types and entry
    // points, and the library's declarations.
    writeFileSync(join(app, "tsconfig.json"), JSON.stringify({
      compilerOptions: { ...strict, module: "nodenext", moduleResolution: "nodenext", declaration: true, outDir: "out" },
      files: ["example.ts", "library.ts", "types.ts", "entries.ts", ...snippets]
    }))
    await typeCheck(app, "tsconfig.json", "the packed package")
    // A bundler's resolution, and TypeScript's old `node` (node10) one, which reads no `exports`:
    // `typesVersions` maps the subpaths for it. Both at once, in two processes.
    const files = ["example.ts", "types.ts", "entries.ts"]
    writeFileSync(join(app, "tsconfig.bundler.json"), JSON.stringify({ compilerOptions: { ...strict, module: "esnext", moduleResolution: "bundler", noEmit: true }, files }))
    writeFileSync(join(app, "tsconfig.node10.json"), JSON.stringify({ compilerOptions: { ...strict, module: "commonjs", moduleResolution: "node10", noEmit: true }, files }))
    await Promise.all([typeCheck(app, "tsconfig.bundler.json", "moduleResolution bundler"), typeCheck(app, "tsconfig.node10.json", "moduleResolution node10")])

    expect(await exec(process.execPath, ["out/example.js"], { cwd: app })).toContain("Hello!")
    // Every block of the README and the embedding and sessions guides runs as written (the Promise
    // façade's blocks answer with the echo model), each in a folder of its own.
    const runs = snippets.filter((file) => runnable.some((prefix) => basename(file).startsWith(prefix)))
    expect(runs.length).toBeGreaterThanOrEqual(10)
    for (const file of runs) {
      const cwd = join(app, "runs", basename(file, ".ts"))
      mkdirSync(cwd, { recursive: true })
      const env: Record<string, string | undefined> = { ...process.env }
      for (const key of ["ANTHROPIC_API_KEY", "OPENAI_API_KEY"]) delete env[key]
      await exec(process.execPath, [join(app, "out", file.replace(/\.ts$/, ".js"))], { cwd, env }).catch((error: { stderr?: string }) => {
        throw new Error(`${file} failed as written:\n${error.stderr ?? String(error)}`)
      })
    }
  }, 300_000)

  it("no `any` in the installed declarations but the constraints that take any tool or command", async () => {
    const dist = join(await installedApp(), "node_modules/effect-agent/dist")
    const declarations = (readdirSync(dist, { recursive: true }) as Array<string>).filter((file) => file.endsWith(".d.ts"))
    expect(declarations).toContain("index.d.ts")
    const anys = declarations.flatMap((file) =>
      readFileSync(join(dist, file), "utf8")
        .replace(/\/\*[\s\S]*?\*\//g, "")
        .replace(/^\s*\/\/.*$/gm, "")
        // What Effect's `Data.TaggedError` declares for every error class made with it.
        .replaceAll("new <A extends Record<string, any> = {}>", "")
        .split("\n")
        .filter((line) => /\bany\b/.test(line))
        .map((line) => `${file}: ${line.trim()}`)
    )
    // Generic constraints: `Toolkit.make`, `layer` and `extend` infer each tool's own types from it.
    expect(anys.sort()).toEqual([
      "cli/Argv.d.ts: export type AnyCommand = Command.Command<any, any, any, any>;",
      "layers/Toolkit.d.ts: ] extends [never] ? never : Tools[number] extends Tool<any, any, infer R> ? R : never;",
      "layers/Toolkit.d.ts: export type Any = Tool<any, any, any>;"
    ])
  }, 300_000)

  it("the testing guide's tests type-check and pass in a user's own vitest, and its golden log is the same bytes on every run", async () => {
    const app = await installedApp()
    mkdirSync(join(app, "test"))
    const tests = testingGuideTests()
    expect(tests.length).toBeGreaterThanOrEqual(2)
    for (const { code, file } of tests) writeFileSync(join(app, file), code)
    writeFileSync(join(app, "tsconfig.test.json"), JSON.stringify({ compilerOptions: { ...strict, module: "nodenext", moduleResolution: "nodenext", noEmit: true }, include: ["test"] }))
    await typeCheck(app, "tsconfig.test.json", "the testing guide's tests")
    // The user's vitest, not this suite's: none of this worker's VITEST_* variables reach it. CI
    // makes a snapshot that differs fail instead of being written again. Its default 5 s a test is
    // a timing assumption this test does not make: the guide's golden test took 8 s at load 18.
    const env: Record<string, string | undefined> = { ...process.env, CI: "1" }
    for (const key of Object.keys(env)) if (key.startsWith("VITEST") || key === "NODE_OPTIONS") delete env[key]
    const vitest = (ci: boolean) =>
      exec(process.execPath, [join(app, "node_modules/vitest/vitest.mjs"), "run", "--testTimeout=120000", ...(ci ? [] : ["--update"])], { cwd: app, env: ci ? env : { ...env, CI: undefined } })
        .catch((error: { stdout?: string; stderr?: string }) => {
          throw new Error(`the testing guide's tests failed:\n${error.stdout ?? ""}${error.stderr ?? String(error)}`)
        })
    await vitest(false)
    const golden = readFileSync(join(app, "test/__snapshots__/answers.jsonl"), "utf8")
    // The TestClock's time and sequential ids: nothing in the log depends on the machine or the moment.
    expect(golden.split("\n")[0]).toBe(`{"id":"evt_1","sessionId":"sess_1","sequence":1,"timestamp":"1970-01-01T00:00:00.000Z","type":"session.created","payload":{"cwd":"/repo","client":"test"}}`)
    expect(golden.trimEnd().split("\n").at(-1)).toContain(`"type":"turn.completed","payload":{"stopReason":"final"}`)
    // Again, in a fresh process, as CI runs it: the same bytes, or toMatchFileSnapshot fails the run.
    await vitest(true)
    expect(readFileSync(join(app, "test/__snapshots__/answers.jsonl"), "utf8")).toBe(golden)
  }, 300_000)

  it("an app pinning another effect 3.x ends with exactly one copy of effect, and the root import loads nothing heavy", async () => {
    const pinned = "3.22.3"
    const app = newProject("pinned-app", {
      effect: pinned,
      "@effect/platform": "0.97.2",
      "@effect/platform-node": "0.108.2",
      // Installed, so that a root import reaching for it would load it (and fail the check below).
      "@effect/ai": "0.37.0",
      "effect-agent": `file:${tarball}`
    })
    await npm(["install"], app)
    const tree = (await npm(["ls", "effect", "--all", "--parseable"], app)).trim().split("\n")
    const copies = new Set(tree.filter((p) => p.endsWith("/node_modules/effect")))
    expect([...copies]).toEqual([join(app, "node_modules/effect")])
    expect(JSON.parse(readFileSync(join(app, "node_modules/effect/package.json"), "utf8")).version).toBe(pinned)

    // Every module the root import resolves is recorded by a loader hook.
    const log = join(app, "loaded.txt")
    writeFileSync(join(app, "hooks.mjs"), `import { appendFileSync } from "node:fs"
export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context)
  appendFileSync(${JSON.stringify(log)}, resolved.url + "\\n")
  return resolved
}
`)
    writeFileSync(join(app, "register.mjs"), `import { register } from "node:module"\nregister("./hooks.mjs", import.meta.url)\n`)
    writeFileSync(join(app, "main.mjs"), `const agent = await import("effect-agent")\nconsole.log(Object.keys(agent).length)\n`)
    await exec(process.execPath, ["--import", "./register.mjs", "main.mjs"], { cwd: app })
    const loaded = readFileSync(log, "utf8")
    expect(loaded).toContain("/node_modules/effect-agent/dist/index.js")
    for (const heavy of ["@anthropic-ai/sdk", "/openai/", "better-sqlite3", "@effect/sql-sqlite-node", "@effect/cli", "@agentclientprotocol", "/zod/", "/@effect/ai/"]) {
      expect(loaded, heavy).not.toContain(heavy)
    }
    // The subpaths load what they name.
    writeFileSync(join(app, "sub.mjs"), `const { AnthropicModelProvider } = await import("effect-agent/anthropic")\nconsole.log(typeof AnthropicModelProvider.layer)\n`)
    expect((await exec(process.execPath, ["sub.mjs"], { cwd: app })).trim()).toBe("function")
    // The @effect/ai bridge is its own subpath, on the app's @effect/ai.
    writeFileSync(join(app, "bridge.mjs"), `const { EffectAiModelProvider } = await import("effect-agent/effect-ai")\nconsole.log(typeof EffectAiModelProvider.layer)\n`)
    expect((await exec(process.execPath, ["bridge.mjs"], { cwd: app })).trim()).toBe("function")

    // A second copy of Effect (a monorepo's, or one nested under the package): it works, and Effect
    // says so on every run of an Effect of the other copy: "Executing an Effect versioned 3.22.4 with a
    // Runtime of version 3.22.3". This repository's copy is the other version.
    const other = JSON.parse(readFileSync(join(root, "node_modules/effect/package.json"), "utf8")).version as string
    expect(other).not.toBe(pinned)
    cpSync(join(root, "node_modules/effect"), join(app, "node_modules/effect-agent/node_modules/effect"), { recursive: true })
    writeFileSync(join(app, "example.mjs"), `import { Effect, Layer, Stream } from "effect"
import { FakeModelProvider, IdGenerator, MemoryEventStore, SessionEngine } from "effect-agent"
const AgentLive = SessionEngine.layer().pipe(
  Layer.provide(MemoryEventStore.layer),
  Layer.provide(FakeModelProvider.layer({ responses: [{ chunks: ["Hello!"] }] })),
  Layer.provide(IdGenerator.layer)
)
const program = Effect.gen(function*() {
  const engine = yield* SessionEngine.SessionEngine
  const { sessionId } = yield* engine.createSession({ cwd: process.cwd(), client: "cli" })
  yield* engine.runTurn({ sessionId, userMessage: "hi" }).pipe(
    Stream.runForEach((event) => event.type === "model.delta" ? Effect.sync(() => process.stdout.write(event.payload.text)) : Effect.void)
  )
})
await Effect.runPromise(program.pipe(Effect.provide(AgentLive)))
`)
    const twoCopies = await execAsync(process.execPath, ["example.mjs"], { cwd: app, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 })
    expect(twoCopies.stdout).toContain("Hello!")
    // Effect's default logger writes to stdout.
    expect(twoCopies.stdout).toContain(`Executing an Effect versioned ${other} with a Runtime of version ${pinned}`)
  }, 300_000)

  it("a CommonJS `require` gets the same modules as `import` (Node's require of ES modules) and runs a turn", async () => {
    const app = await installedApp()
    writeFileSync(join(app, "main.cjs"), `const agent = require("effect-agent")
const { SessionView } = require("effect-agent/view")
import("effect-agent").then(async (esm) => {
  console.log(agent === esm ? "one module" : "two modules", typeof SessionView.step)
  const engine = agent.makeSessionEngine({ store: agent.MemoryEventStore.layer })
  const session = await engine.createSession({ cwd: process.cwd(), client: "cli" })
  for await (const event of engine.runTurn({ sessionId: session.sessionId, userMessage: "hi" })) {
    if (event.type === "model.delta") process.stdout.write(event.payload.text)
  }
  await engine.dispose()
})
`)
    // Node 20.19 and 22.12 on require ES modules; an older Node refuses with its own ERR_REQUIRE_ESM.
    const requiresModules = (process.features as { require_module?: boolean }).require_module === true
    const run = exec(process.execPath, ["main.cjs"], { cwd: app })
    if (requiresModules) expect(await run).toBe("one module function\nEcho: hi")
    else await expect(run).rejects.toThrow("ERR_REQUIRE_ESM")
  }, 300_000)

  it("installs an `effect-agent` bin that answers, loading the CLI bundle and nothing the turn does not use", async () => {
    const app = await installedApp()
    const log = join(app, "bin-loaded.txt")
    writeFileSync(join(app, "hooks.mjs"), `import { appendFileSync } from "node:fs"
export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context)
  appendFileSync(${JSON.stringify(log)}, resolved.url + "\\n")
  return resolved
}
`)
    writeFileSync(join(app, "register.mjs"), `import { register } from "node:module"\nregister("./hooks.mjs", import.meta.url)\n`)
    const env: Record<string, string | undefined> = {
      ...process.env,
      // The bin's `#!/usr/bin/env node` finds this node; the loader hook records every module the run resolves.
      PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ""}`,
      NODE_OPTIONS: `--import=${pathToFileURL(join(app, "register.mjs")).href}`
    }
    for (const key of ["ANTHROPIC_API_KEY", "OPENAI_API_KEY"]) delete env[key]
    const answer = await exec(join(app, "node_modules/.bin/effect-agent"), ["run", "hi"], { cwd: app, env })
    expect(answer).toContain("Echo: hi")
    const loaded = [...new Set(readFileSync(log, "utf8").trim().split("\n"))].filter((url) => !url.startsWith("node:") && !url.includes("/register.mjs") && !url.includes("/hooks.mjs"))
    expect(loaded).toContain(pathToFileURL(join(app, "node_modules/effect-agent/dist/cli/bin.js")).href)
    // One bundle in chunks (its own copy of Effect, bundled), not the ~350 modules of the unbundled
    // build: `run` loads the command tree, then its handler's chunks (about 40, the engine's code
    // split by which commands share it; see scripts/bundle-cli.mjs).
    expect(loaded.filter((url) => url.includes("/node_modules/effect/") || url.includes("/node_modules/@effect/"))).toEqual([])
    expect(loaded.length).toBeLessThan(60)
    // Nor a vendor SDK, SQLite, PostgreSQL, the ACP, HTTP or cluster code (their chunks are named after their entry points).
    for (const heavy of ["@anthropic-ai/sdk", "/openai", "sqlite", "postgres", "/pg/", "@agentclientprotocol", "/acp", "/server", "/cluster", "/zod/"]) {
      expect(loaded.join("\n"), heavy).not.toContain(heavy)
    }
  }, 300_000)
})
