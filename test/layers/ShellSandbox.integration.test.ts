/**
 * What a shell tool's command can reach: an environment built from an allow-list, and (where the
 * OS has namespaces) a /proc without the agent's processes; and what is left of it after a cancel.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Fiber from "effect/Fiber"
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import type { Json } from "../../src/domain/Json.js"
import * as Environment from "../../src/layers/workspace/Environment.js"
import * as Sandbox from "../../src/layers/workspace/Sandbox.js"
import * as WorkspaceTools from "../../src/layers/WorkspaceTools.js"
import type { ToolContext } from "../../src/services/ToolRouter.js"
import { holders } from "../fifo.js"
import { tempDir } from "../helpers.js"

const shellIn = (options: WorkspaceTools.Options = {}) =>
  Effect.gen(function*() {
    const cwd = yield* tempDir
    const tools = yield* WorkspaceTools.make(options)
    const context: ToolContext = { sessionId: "s", turnId: "t", cwd, progress: () => Effect.void }
    const run = (command: string, extra: Record<string, Json> = {}) =>
      Effect.either(Effect.flatMap(tools.prepare({ toolCallId: "c", tool: "shell", args: { command, ...extra } }, cwd), (p) => tools.execute(p, context)))
    return { cwd, run }
  })

const output = <E>(result: Either.Either<{ readonly result: string }, E>) => {
  if (Either.isLeft(result)) throw new Error(`expected success, got ${JSON.stringify(result.left)}`)
  return result.right.result
}

/** Pids of live `sleep` processes whose argument starts with `marker`. */
const pidsRunning = (marker: string) =>
  readdirSync("/proc").filter((n) => /^\d+$/.test(n)).map(Number).filter((pid) => {
    try {
      const [program, argument] = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0")
      return program!.split("/").at(-1) === "sleep" && argument!.startsWith(marker) &&
        !readFileSync(`/proc/${pid}/stat`, "utf8").split(") ").at(-1)!.startsWith("Z")
    } catch {
      return false
    }
  })

describe("the tools' environment", () => {
  it.scoped("is built from an allow-list: cloud and forge tokens never reach a command; configured names do", () =>
    Effect.gen(function*() {
      const secrets = { AWS_SECRET_ACCESS_KEY: "aws-secret-value", GITHUB_TOKEN: "ghp-secret-value", ANTHROPIC_API_KEY: "sk-secret-value", SSH_AUTH_SOCK: "/tmp/agent.sock" }
      Object.assign(process.env, secrets, { MY_CONFIG: "passed-on", NPM_CONFIG_REGISTRY: "https://registry.example" })
      try {
        const { cwd, run } = yield* shellIn({ env: { allow: ["MY_CONFIG", "NPM_CONFIG_*"], set: { FIXED: "set-value" } } })
        const env = output(yield* run("env"))
        for (const value of Object.values(secrets)) expect(env).not.toContain(value)
        expect(env).toContain("MY_CONFIG=passed-on")
        expect(env).toContain("NPM_CONFIG_REGISTRY=https://registry.example")
        expect(env).toContain("FIXED=set-value")
        expect(env).toContain(`PATH=${process.env.PATH}`)
        expect(env).toContain(`PWD=${cwd}`)
      } finally {
        for (const key of [...Object.keys(secrets), "MY_CONFIG", "NPM_CONFIG_REGISTRY"]) delete process.env[key]
      }
    }).pipe(Effect.provide(NodeContext.layer)))

  it("Environment.build passes only allowed names, never hidden ones", () => {
    const built = Environment.build({ PATH: "/bin", LC_ALL: "C", GITHUB_TOKEN: "t", OPENAI_API_KEY: "k" }, { allow: ["OPENAI_API_KEY"], hidden: ["OPENAI_API_KEY"], cwd: "/w" })
    expect(built).toEqual({ PATH: "/bin", LC_ALL: "C", PWD: "/w" })
  })
})

describe("the sandbox", () => {
  const isolation = Effect.runPromise(Sandbox.detect)

  it.scoped("hides the agent's processes: a command sees a /proc of its own, where it is PID 1", () =>
    Effect.gen(function*() {
      const detected = yield* Effect.promise(() => isolation)
      const { run } = yield* shellIn({ sandbox: "required" })
      if (detected._tag !== "Workspace") {
        // Without namespaces (macOS, containers that forbid them), "required" refuses to run commands.
        const refused = yield* run("true")
        expect(Either.isLeft(refused) && refused.left).toMatchObject({ errorCode: "sandbox_unavailable" })
        return
      }
      expect(output(yield* run("sh -c 'echo $$ $PPID'"))).toBe("1 0\n")
      const probe = output(yield* run(`cat /proc/${process.pid}/environ /proc/${process.ppid}/environ`))
      expect(probe).toContain(`/proc/${process.pid}/environ: No such file or directory`)
      expect(probe).toContain(`/proc/${process.ppid}/environ: No such file or directory`)
      // Even unmounting the namespace's /proc does not open the agent's environment.
      const unmounted = output(yield* run(`sh -c 'umount /proc 2>/dev/null; cat /proc/${process.pid}/environ'`))
      expect(unmounted).not.toContain("PATH=")
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("\"required\" fails without the workspace sandbox and says why; \"off\" keeps only the parent-death signal", () =>
    Effect.gen(function*() {
      const prefix = ["/usr/bin/setpriv", "--pdeathsig", "KILL", "--"]
      const launched = (choice: ReturnType<typeof Sandbox.choose>) =>
        "launch" in choice ? choice.launch({ cwd: "/", network: false, hidden: [], env: {} }) : Effect.die(choice.unavailable)
      for (const weaker of [
        { _tag: "ParentDeath", prefix, reason: "no user namespaces here" },
        { _tag: "Namespace", prefix: [...prefix, "/usr/bin/unshare", "--pid", "--"], reason: "no user namespaces here" },
        { _tag: "None", prefix: [], reason: "no user namespaces here" }
      ] as const) {
        expect(Sandbox.choose("required", weaker)).toEqual({ unavailable: expect.stringMatching(/sandbox: "required".*no user namespaces here/) })
        expect(Sandbox.weaker(weaker)).toContain("no user namespaces here")
      }
      expect((yield* launched(Sandbox.choose("auto", { _tag: "None", prefix: [], reason: "macOS" }))).prefix).toEqual([])
      expect((yield* launched(Sandbox.choose("off", { _tag: "Namespace", prefix: [...prefix, "/usr/bin/unshare", "--pid", "--"], reason: "" }))).prefix).toEqual(prefix)
      const programs = { setpriv: "/usr/bin/setpriv", unshare: "/usr/bin/unshare", mount: "/usr/bin/mount", sh: "/bin/sh", ip: undefined }
      expect((yield* launched(Sandbox.choose("off", { _tag: "Workspace", programs }))).prefix).toEqual(prefix)
      expect(Sandbox.weaker({ _tag: "Workspace", programs })).toBeUndefined()
    }))

  it.scoped("a cancelled command leaves nothing running, not even a process that left its group", () =>
    Effect.gen(function*() {
      const detected = yield* Effect.promise(() => isolation)
      const { cwd, run } = yield* shellIn()
      const marker = `300.${process.pid}${Date.now() % 100000}`
      // Each sleep holds a pipe of its own (test/fifo.ts): the kernel says when it started and when it is gone.
      const [escaped, grouped] = [holders(join(cwd, "escaped")), holders(join(cwd, "grouped"))]
      const fiber = yield* Effect.fork(run(`sh -c 'setsid sleep ${marker}1 >escaped & sleep ${marker}2 >grouped; wait'`))
      yield* Effect.promise(() => Promise.all([escaped.opened, grouped.opened]))
      yield* Fiber.interrupt(fiber)
      yield* Effect.promise(() => grouped.closed)
      if (detected._tag === "Workspace" || detected._tag === "Namespace") {
        // The kernel kills the whole namespace, the process that left the group too.
        yield* Effect.promise(() => escaped.closed)
        expect(pidsRunning(marker)).toEqual([])
      } else {
        // Without the namespace a process that left the group survives.
        expect(escaped.held()).toBe(true)
        for (const pid of pidsRunning(marker)) process.kill(pid, "SIGKILL")
      }
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("a missing program is still command_not_found behind the sandbox's prefix", () =>
    Effect.gen(function*() {
      const { run } = yield* shellIn()
      const result = yield* run("no-such-program-here --x")
      expect(Either.isLeft(result) && result.left).toMatchObject({ errorCode: "command_not_found" })
      const notExecutable = yield* run("./")
      expect(Either.isLeft(notExecutable)).toBe(true)
    }).pipe(Effect.provide(NodeContext.layer)))
})
