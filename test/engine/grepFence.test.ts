/**
 * The built-in `grep` tool answers where it used to ask: with a deny (or ask) path rule for `.env`, its
 * walk of cwd leaves out every path the rule matches — the file, a link to it, a hard link to it — and
 * says how many it left out, in `default` and `bypass`. Before, every `grep` over cwd asked. A shell
 * `grep -r` cannot be steered so: it still asks.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import type { Json } from "../../src/domain/Json.js"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import * as MemoryEventStore from "../../src/layers/MemoryEventStore.js"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import * as WorkspaceTools from "../../src/layers/WorkspaceTools.js"
import * as CliPolicy from "../../src/cli/Policy.js"
import * as Subagents from "../../src/engine/Subagents.js"
import { PermissionEngine } from "../../src/services/PermissionEngine.js"
import { collect, engineLayer, tempDir } from "../helpers.js"

/** A workspace with a match in `src/a.ts` and in `.env`, reached also through a link and a hard link. */
const workspace = Effect.map(tempDir, (dir) => {
  const cwd = NodeFs.realpathSync(dir)
  NodeFs.mkdirSync(NodePath.join(cwd, "src"))
  NodeFs.mkdirSync(NodePath.join(cwd, "secrets"))
  NodeFs.writeFileSync(NodePath.join(cwd, "src", "a.ts"), "const API_KEY = process.env.API_KEY\n")
  NodeFs.writeFileSync(NodePath.join(cwd, ".env"), "API_KEY=hunter2\n")
  NodeFs.writeFileSync(NodePath.join(cwd, "secrets", "prod.txt"), "API_KEY=prod-secret\n")
  NodeFs.symlinkSync("../.env", NodePath.join(cwd, "src", "env-link"))
  NodeFs.symlinkSync("../secrets", NodePath.join(cwd, "src", "secrets-link"))
  NodeFs.linkSync(NodePath.join(cwd, ".env"), NodePath.join(cwd, "src", "env-hard"))
  return cwd
})

/** One turn that makes one tool call, its policy decision and its result. */
const oneCall = (
  cwd: string,
  mode: PermissionPolicy.Mode,
  rules: ReadonlyArray<PermissionPolicy.Rule>,
  call: { tool: string; args: Json },
  permissions: Layer.Layer<PermissionEngine> = PermissionPolicy.layer({ mode, rules })
) =>
  Effect.gen(function*() {
    const engine = yield* SessionEngine
    const { sessionId } = yield* engine.createSession({ cwd, client: "test" })
    // An ask is answered no: the call never runs.
    const events = yield* collect(engine.runTurn({ sessionId, userMessage: "search" }).pipe(
      Stream.tap((e) =>
        e.type === "permission.resolved" && e.payload.decision === "ask"
          ? engine.resolvePermission({ sessionId, toolCallId: e.payload.toolCallId, decision: "deny" })
          : Effect.void
      )
    ))
    const resolved = events.find((e): e is Extract<AgentEvent, { type: "permission.resolved" }> => e.type === "permission.resolved")
    const completed = events.find((e): e is Extract<AgentEvent, { type: "tool.completed" }> => e.type === "tool.completed")
    return { decision: resolved?.payload.decision, result: completed === undefined ? undefined : String(completed.payload.result) }
  }).pipe(Effect.provide(engineLayer(MemoryEventStore.layer, { responses: [{ toolCalls: [call] }, { chunks: ["ok"] }] }).pipe(
    Layer.provideMerge(WorkspaceTools.layer().pipe(Layer.provide(NodeContext.layer))),
    Layer.provideMerge(permissions)
  )))

const deny = (path: string): PermissionPolicy.Rule => ({ name: "no-secrets", path, decision: "deny" })

describe("the grep tool leaves out what a deny or ask rule fences, and answers", () => {
  for (const mode of ["default", "bypass"] as const) {
    it.scoped(`a deny of .env: the match in src/a.ts, not the one in .env nor through its links (${mode})`, () =>
      Effect.gen(function*() {
        const cwd = yield* workspace
        const { decision, result } = yield* oneCall(cwd, mode, [deny(".env")], { tool: "grep", args: { pattern: "API_KEY" } })
        expect(decision).toBe("allow")
        expect(result).toContain("src/a.ts:1:")
        expect(result).not.toContain("hunter2")
        // .env, the hard link (a file with other names); the link is left out by what it leads to.
        expect(result).toContain("[left out 3 files or folders that your permission rules fence]")
      }).pipe(Effect.provide(NodeContext.layer)))
  }

  it.scoped("a deny of secrets/** leaves out the folder and a link into it; an ask rule fences as a deny does", () =>
    Effect.gen(function*() {
      const cwd = yield* workspace
      for (const decision of ["deny", "ask"] as const) {
        const rules: ReadonlyArray<PermissionPolicy.Rule> = [{ name: "fenced", path: "secrets/**", decision }]
        const out = yield* oneCall(cwd, "default", rules, { tool: "grep", args: { pattern: "API_KEY" } })
        expect(out.decision).toBe("allow")
        expect(out.result).toContain("src/a.ts:1:")
        expect(out.result).not.toContain("prod-secret")
        // The folder and the link into it; .env has two names (a hard link): it is left out under each
        // of its three ways in (.env, src/env-hard, src/env-link), as any file with other names is while a rule fences.
        expect(out.result).toContain("[left out 5 files or folders that your permission rules fence]")
      }
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("a shell grep -r still asks", () =>
    Effect.gen(function*() {
      const cwd = yield* workspace
      const { decision, result } = yield* oneCall(cwd, "bypass", [deny(".env")], { tool: "shell", args: { command: "grep -r API_KEY ." } })
      expect(decision).toBe("ask")
      expect(result).toBeUndefined()
    }).pipe(Effect.provide(NodeContext.layer)))
})

describe("an engine that decides with the policy but has no fence (as the CLI's, the server's, ACP's and a subagent's wrap it)", () => {
  /** The policy's decisions alone: no `fence`, so nothing would leave the rules' paths out of a walk. */
  const decideOnly = (options: PermissionPolicy.Options) =>
    Layer.succeed(PermissionEngine, { decide: (request) => Effect.sync(() => PermissionPolicy.decide(options, request)) })

  for (const mode of ["default", "bypass"] as const) {
    it.scoped(`a deny of .env: the grep tool asks, as before the fence, and never reads .env (${mode})`, () =>
      Effect.gen(function*() {
        const cwd = yield* workspace
        const rules = [deny(".env")]
        const { decision, result } = yield* oneCall(cwd, mode, rules, { tool: "grep", args: { pattern: "API_KEY" } }, decideOnly({ mode, rules }))
        expect(decision).toBe("ask")
        expect(result).toBeUndefined()
      }).pipe(Effect.provide(NodeContext.layer)))
  }

  it.scoped("the CLI's policy leaves .env out of the grep tool's walk, and answers", () =>
    Effect.gen(function*() {
      const cwd = yield* workspace
      const policy = CliPolicy.configurable()
      const rules = [deny(".env")]
      yield* policy.configure({ mode: "default", rules })
      const { decision, result } = yield* oneCall(cwd, "default", rules, { tool: "grep", args: { pattern: "API_KEY" } }, policy.layer)
      expect(result ?? "").not.toContain("hunter2")
      expect(decision).toBe("allow")
      expect(result).toContain("src/a.ts:1:")
    }).pipe(Effect.provide(NodeContext.layer)))
})

describe("the subagent wrapper's fence (the engine's permissions when the tools offer task)", () => {
  const request = (sessionId: string) => ({ sessionId, cwd: "/w", call: {} as never, remembered: [], fenced: true })
  const path = (real: string) => ({ real, relative: undefined, written: real })
  /** A base whose fence depends on the session deciding: the parent fences `/w/a`, any other `/w/b`. */
  const base: PermissionEngine["Type"] = {
    decide: () => Effect.succeed({ decision: "allow", policy: "test" }),
    fence: (r) => (p) => p.real === (r.sessionId === "parent" ? "/w/a" : "/w/b")
  }

  it("is the base's for a session's own call, the union of its own and its parents' for a subagent's, and absent without the base's", () => {
    const runtime = Subagents.makeRuntime({ offersTask: true })
    const wrapped = Subagents.permissions(base, runtime)
    const own = wrapped.fence?.(request("parent"))
    expect([own?.(path("/w/a")), own?.(path("/w/b"))]).toEqual([true, false])
    runtime.links.set("child", { parent: { sessionId: "parent", cwd: "/w" }, depth: 1 } as never)
    const child = wrapped.fence?.(request("child"))
    expect([child?.(path("/w/a")), child?.(path("/w/b")), child?.(path("/w/c"))]).toEqual([true, true, false])
    // Without the base's fence the wrapper has none: the policy then asks about such a walk (`fenced` false).
    expect(Subagents.permissions({ decide: base.decide }, runtime).fence).toBeUndefined()
  })
})
