/**
 * A command's `PATH` never searches the folder the command runs in. An empty entry of `PATH`
 * (`PATH=:/usr/bin`, what `export PATH=$EXTRA:$PATH` makes when `EXTRA` is empty), `.` or any
 * relative entry (`node_modules/.bin`) is looked up from the command's cwd: the workspace, which a
 * cloned repository fills and the model writes. So `git status`, approved as git, ran the
 * repository's own `./git` — outside any sandbox where there is none (macOS, a container,
 * `sandbox: "off"`), where the rule or the question about `git` is the only guard. Likewise the
 * sandbox's own programs (`setpriv`, `unshare`), looked up on the agent's `PATH`, could be a
 * repository's file run outside the sandbox for every command.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as FileSystem from "@effect/platform/FileSystem"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as NodePath from "node:path"
import * as Environment from "../../src/layers/workspace/Environment.js"
import * as Sandbox from "../../src/layers/workspace/Sandbox.js"
import * as WorkspaceTools from "../../src/layers/WorkspaceTools.js"
import type { ToolContext } from "../../src/services/ToolRouter.js"
import { tempDir } from "../helpers.js"

/** Runs `effect` with the agent's `PATH` set to `path`, restored after. */
const withPath = <A, E, R>(path: string, effect: Effect.Effect<A, E, R>) =>
  Effect.acquireUseRelease(
    Effect.sync(() => {
      const before = process.env.PATH
      process.env.PATH = path
      return before
    }),
    () => effect,
    (before) => Effect.sync(() => (before === undefined ? delete process.env.PATH : (process.env.PATH = before)))
  )

/** A workspace holding an executable `true` that leaves a mark when it runs. */
const plantedWorkspace = Effect.gen(function*() {
  const fs = yield* FileSystem.FileSystem
  const cwd = yield* tempDir
  yield* fs.writeFileString(`${cwd}/true`, "#!/bin/sh\necho planted > planted.txt\n")
  yield* fs.chmod(`${cwd}/true`, 0o755)
  return { fs, cwd }
})

const run = (cwd: string, command: string, options: WorkspaceTools.Options) =>
  Effect.gen(function*() {
    const tools = yield* WorkspaceTools.make(options)
    const context: ToolContext = { sessionId: "s", turnId: "t", cwd, progress: () => Effect.void }
    const prepared = yield* tools.prepare({ toolCallId: "c1", tool: "shell", args: { command } }, cwd)
    return yield* Effect.either(tools.execute(prepared, context))
  })

const systemPath = process.env.PATH ?? "/usr/bin:/bin"

describe("a command's PATH never searches its working directory", () => {
  it("the environment keeps only absolute folders of PATH", () => {
    const env = Environment.build({ PATH: ":/usr/local/bin:.:node_modules/.bin::/usr/bin:bin/:" }, { cwd: "/w" })
    expect(env.PATH).toBe("/usr/local/bin:/usr/bin")
    // A PATH of nothing else is left empty rather than one that names the workspace.
    expect(Environment.build({ PATH: ":." }, { cwd: "/w" }).PATH).toBe("")
    // What the user sets is held to the same rule.
    expect(Environment.build({}, { cwd: "/w", set: { PATH: "./bin:/opt/bin" } }).PATH).toBe("/opt/bin")
  })

  for (const [label, prefix] of [["an empty entry", ":"], ["`.`", ".:"]] as const) {
    it.scoped(`with ${label} in PATH and no sandbox, \`true\` runs the system's, not the workspace's`, () =>
      Effect.gen(function*() {
        const { cwd, fs } = yield* plantedWorkspace
        const result = yield* withPath(`${prefix}${systemPath}`, run(cwd, "true", { sandbox: "off" }))
        expect(result._tag).toBe("Right")
        expect(yield* fs.exists(`${cwd}/planted.txt`)).toBe(false)
      }).pipe(Effect.provide(NodeContext.layer)))
  }

  it.scoped("the sandbox's programs are looked up in absolute folders only", () =>
    Effect.gen(function*() {
      const { cwd } = yield* plantedWorkspace
      // A relative entry names a folder from wherever the process stands: here, the planted workspace.
      const relative = NodePath.relative(process.cwd(), cwd)
      expect(Sandbox.which("true", relative)).toBeUndefined()
      expect(Sandbox.which("true", `${relative}:${cwd}`)).toBe(`${cwd}/true`)
    }).pipe(Effect.provide(NodeContext.layer)))
})
