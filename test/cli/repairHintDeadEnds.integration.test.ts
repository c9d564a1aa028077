/**
 * review46 f5: every corrupt JSONL failure got "effect-agent repair <id> keeps the events it can
 * read" — also a log of a newer format version, a link and a named pipe, all of which repair refuses
 * ("nothing was changed"), and an event of a type this version does not know (a newer effect-agent's),
 * which repair drops, with every later event that no longer follows. The hint now names repair only
 * where it helps, says what it keeps, and the reader names an unknown event type as such.
 */
import { execFileSync } from "node:child_process"
import { mkdirSync, renameSync, symlinkSync, unlinkSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as AgentEvent from "../../src/domain/AgentEvent.js"
import { repairHint } from "../../src/cli/RepairHint.js"
import * as JsonlEventStore from "../../src/layers/JsonlEventStore.js"
import { collect, tempDir } from "../helpers.js"

const at = "2026-01-01T00:00:00.000Z"
const header = (version = JsonlEventStore.formatVersion) => JSON.stringify({ format: JsonlEventStore.formatName, version })
const created = (sessionId: string) =>
  AgentEvent.encodeJson({ id: "e1", sessionId, sequence: 1, timestamp: at, type: "session.created", payload: { cwd: "/w", client: "cli" } })

/** The hint the CLI adds to the failure of reading `text` as session `s`'s log (`prepare` may change the file). */
const hintFor = (text: string, prepare: (file: string, dataDir: string) => void = () => {}) =>
  Effect.gen(function*() {
    const dataDir = yield* tempDir
    mkdirSync(join(dataDir, "sessions"))
    const file = join(dataDir, "sessions", "s.jsonl")
    writeFileSync(file, text)
    prepare(file, dataDir)
    const store = yield* JsonlEventStore.make({ dataDir })
    const read = yield* Effect.either(collect(store.read("s")))
    expect(Either.isLeft(read)).toBe(true)
    return Either.isLeft(read) ? { detail: (read.left as { detail: string }).detail, hint: repairHint(read.left) } : { detail: "", hint: "" }
  })

describe("the repair hint", () => {
  it.scoped("names repair for a damaged line, saying what it drops", () =>
    Effect.gen(function*() {
      const { hint } = yield* hintFor([header(), created("s"), "{\"damaged", ""].join("\n"))
      expect(hint).toBe("; effect-agent repair s drops that line and every later event that no longer follows on (the original is kept as .bak)")
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("does not name repair for a log repair refuses: a newer format version, a link, a named pipe", () =>
    Effect.gen(function*() {
      const newer = yield* hintFor([header(2), created("s"), ""].join("\n"))
      expect(newer.hint).toBe("; it was written by a newer effect-agent: read it with that version")
      const linked = yield* hintFor([header(), created("s"), ""].join("\n"), (file, dataDir) => {
        renameSync(file, join(dataDir, "real.jsonl"))
        symlinkSync("../real.jsonl", file)
      })
      expect(linked.hint).toBe("; this store makes its logs as regular files: remove or replace it")
      const piped = yield* hintFor("", (file) => {
        unlinkSync(file)
        execFileSync("mkfifo", [file])
      })
      expect(piped.hint).toBe("; this store makes its logs as regular files: remove or replace it")
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("an event of a type this version does not know is named as such, and repair's cost said", () =>
    Effect.gen(function*() {
      const newer = JSON.stringify({ id: "e2", sessionId: "s", sequence: 2, timestamp: at, type: "session.renamed2", payload: { title: "x" } })
      const { detail, hint } = yield* hintFor([header(), created("s"), newer, ""].join("\n"))
      expect(detail).toBe("not a valid event: its type session.renamed2 is unknown to this version (written by a newer effect-agent?)")
      expect(hint).toBe(
        "; read it with the effect-agent that wrote it: effect-agent repair s would drop that line and every later event that no longer follows on (the original is kept as .bak)"
      )
      // A type that does not look like one (it is shown on a terminal) is not repeated.
      const odd = JSON.stringify({ id: "e2", sessionId: "s", sequence: 2, timestamp: at, type: "\u001b[2Jx", payload: {} })
      expect((yield* hintFor([header(), created("s"), odd, ""].join("\n"))).detail).toBe("not a valid event")
    }).pipe(Effect.provide(NodeContext.layer)))
})
