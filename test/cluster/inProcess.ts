/**
 * A cluster runner in the test's own process (`Runner.layer`) on a schema of the test PostgreSQL,
 * with its own store, scripted model, ids and a `note` tool that asks (risk `write`): its routed
 * engine and turn registry, built in the test's scope.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import { Engines, Runner } from "../../src/cluster.js"
import { FakeModelProvider, IdGenerator, SessionEngine, TaskTool } from "../../src/index.js"
import { PostgresEventStore } from "../../src/postgres.js"
import { Turns } from "../../src/server.js"
import { testTools } from "../helpers.js"
import { freePort } from "../../bench/support/ports.js"

type EnginesLayer = ReturnType<typeof Engines.layer>

const note = testTools({ note: { risk: "write", run: () => Effect.succeed({ result: "noted" }) } })

type Script = ReadonlyArray<FakeModelProvider.ScriptedResponse> | FakeModelProvider.Options

const optionsOf = (script: Script): FakeModelProvider.Options =>
  Array.isArray(script) ? { responses: script as ReadonlyArray<FakeModelProvider.ScriptedResponse> } : script as FakeModelProvider.Options

const toolsFor = (script: Script) => optionsOf(script).subagents === undefined ? note : TaskTool.layer.pipe(Layer.provideMerge(note))

/**
 * Builds a runner on `url` with these options (its engine, its turns and the runners' port it listens on); `engines` wraps the runner's `Engines` (e.g. to count
 * the engines made). A script with `subagents` also gives the runner the `task` tool.
 */
export const runnerInProcess = (
  url: string,
  options: Omit<Runner.Options, "databaseUrl" | "port">,
  script: Script,
  engines: (base: EnginesLayer) => EnginesLayer = (base) => base
) =>
  Effect.flatMap(Effect.promise(freePort), (port) =>
    Layer.build(
      Runner.layer({ databaseUrl: Redacted.make(url), port, ...options }).pipe(
        Layer.provide(engines(Engines.layer())),
        Layer.provide(PostgresEventStore.layer({ url: Redacted.make(url) })),
        Layer.provide(FakeModelProvider.layer(optionsOf(script))),
        Layer.provide(IdGenerator.layer),
        Layer.provide(toolsFor(script))
      )
    ).pipe(Effect.map((context) => ({ engine: Context.get(context, SessionEngine.SessionEngine), turns: Context.get(context, Turns.Turns), port })))
  )
