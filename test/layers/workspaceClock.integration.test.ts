/**
 * The workspace tools' durations across a stepping wall clock: grep's walk budget, the permission
 * check's walk of a recursive command, and a command's progress line (at most once a second) are
 * measured on monotonic time (`MonotonicTime`), so NTP stepping the clock, a VM restored or a date
 * set by hand neither cuts them short nor silences them.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as FileSystem from "@effect/platform/FileSystem"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type { Json } from "../../src/domain/Json.js"
import * as WorkspaceTools from "../../src/layers/WorkspaceTools.js"
import type { ToolContext } from "../../src/services/ToolRouter.js"
import { steppingAtEveryRead } from "../clockJumps.js"
import { tempDir } from "../helpers.js"

const hour = 60 * 60 * 1000

/** A workspace with a few files, tools over it, and the progress lines a call reported. */
const workspace = Effect.gen(function*() {
  const fs = yield* FileSystem.FileSystem
  const cwd = `${yield* tempDir}/ws`
  yield* fs.makeDirectory(`${cwd}/sub`, { recursive: true })
  for (let i = 0; i < 5; i++) yield* fs.writeFileString(`${cwd}/sub/f${i}.txt`, `needle ${i}\n`)
  const tools = yield* WorkspaceTools.make({ sandbox: "off" })
  const progress: Array<string> = []
  const context: ToolContext = { sessionId: "s", turnId: "t", cwd, progress: (m) => Effect.sync(() => progress.push(m)) }
  let n = 0
  const prepare = (tool: string, args: Json) => tools.prepare({ toolCallId: `c${++n}`, tool, args }, cwd)
  const call = (tool: string, args: Json) => Effect.flatMap(prepare(tool, args), (prepared) => tools.execute(prepared, context))
  return { prepare, call, progress }
}).pipe(Effect.provide(NodeContext.layer))

describe("workspace tools across a stepping wall clock", () => {
  it.scoped("grep's walk is not cut short by the wall clock stepping forward an hour at every read", () =>
    Effect.gen(function*() {
      const { call } = yield* workspace
      const result = yield* Effect.withClock(call("grep", { pattern: "needle" }), yield* steppingAtEveryRead({ wallMillis: hour, monotonicMillis: 0 }))
      expect(result.result).not.toContain("search stopped")
      expect(result.result.split("\n").filter((line) => line.includes("needle"))).toHaveLength(5)
    }))

  it.scoped("a recursive command's tree is walked for the permission check whatever the wall clock does", () =>
    Effect.gen(function*() {
      const { prepare } = yield* workspace
      const prepared = yield* Effect.withClock(prepare("shell", { command: "grep -r needle sub" }), yield* steppingAtEveryRead({ wallMillis: hour, monotonicMillis: 0 }))
      expect(JSON.stringify(prepared.paths)).not.toContain("took too long to walk")
    }))

  it.scoped("a command's progress line is reported when the wall clock steps back while time passes", () =>
    Effect.gen(function*() {
      const { call, progress } = yield* workspace
      // Every read: the wall clock an hour earlier, two seconds more on the monotonic one.
      const clock = yield* steppingAtEveryRead({ wallMillis: -hour, monotonicMillis: 2000 })
      const result = yield* Effect.either(Effect.withClock(call("shell", { command: "printf 'working\\n'" }), clock))
      expect(Either.isRight(result)).toBe(true)
      expect(progress).toContain("working")
    }))
})
