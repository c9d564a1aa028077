/**
 * What the built CLI loads before a command runs (issue 20 row 8, issue 24 item 5): the command
 * tree alone — `--help` reads no code of the engine, the stores or the tools — and `sessions` /
 * `pending` load the store they list, not the engine — on SQLite and PostgreSQL not the JSONL store
 * either, nor the guard of a data dir written to (perf63sql). Checked on the bundle the suite's global
 * setup built (`dist/cli`): the modules a chunk imports statically are loaded with it, so a
 * chunk's static closure is what that command pays to read and compile before it starts.
 */
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"

const dir = join(import.meta.dirname, "..", "..", "dist", "cli")
const chunks = join(dir, "chunks")

/** The chunks a file imports statically (`import … from "./x.js"`, `import "./x.js"`), not `import("./x.js")`. */
const staticImports = (text: string): Array<string> => [...text.matchAll(/(?:from\s*|import\s*)"\.\/([\w.-]+\.js)"/g)].map((m) => m[1]!)

/** The text of a chunk and of every chunk it reaches statically. */
const closure = (start: string): string => {
  const seen = new Set<string>()
  const texts: Array<string> = []
  const visit = (name: string) => {
    if (seen.has(name)) return
    seen.add(name)
    const text = readFileSync(join(chunks, name), "utf8")
    texts.push(text)
    for (const next of staticImports(text)) visit(next)
  }
  visit(start)
  return texts.join("\n")
}

/** The chunk `import()`ed by `from` whose name starts with `prefix` (esbuild names a chunk after its module). */
const loaded = (from: string, prefix: string): string => {
  const found = [...from.matchAll(/import\(\s*"\.\/(?:chunks\/)?([\w.-]+\.js)"\s*\)/g)].map((m) => m[1]!).find((name) => name.startsWith(`${prefix}-`))
  if (found === undefined) throw new Error(`no import() of ${prefix}-*.js`)
  return found
}

// Literals only the engine, the workspace tools, web_fetch and the JSONL store's index hold.
const engine = "\"SessionEngine.runTurn\""
const workspaceTools = "\"Replace every occurrence (default: oldString must occur once)\""
const webFetch = "\"WebFetch.fetch\""
const jsonlIndex = "\"effect-agent/index\""
// Literals only the writers' guard holds: the trust store (with the settings file's reader) and StartedSessions.
const trustStore = "\"trusted.json\""
const startedSessions = "\"started-sessions\""

describe("the built CLI's start", () => {
  const main = loaded(readFileSync(join(dir, "bin.js"), "utf8"), "Main")
  const tree = closure(main)

  it("the command tree (--help, parsing) loads no engine, store or tool", () => {
    expect(tree.includes("\"export-script\""), "the command tree").toBe(true)
    for (const marker of [engine, workspaceTools, webFetch, jsonlIndex]) expect(tree.includes(marker), marker).toBe(false)
  })

  it("sessions and pending load the store, not the engine or the tools", () => {
    const sessions = closure(loaded(tree, "Sessions"))
    for (const marker of [engine, workspaceTools, webFetch]) expect(sessions.includes(marker), marker).toBe(false)
  })

  it("sessions and pending on a SQL store load neither the JSONL store nor a writer's guard: those are import()ed when chosen", () => {
    const sessionsChunk = loaded(tree, "Sessions")
    const sessions = closure(sessionsChunk)
    for (const marker of [jsonlIndex, trustStore, startedSessions]) expect(sessions.includes(marker), marker).toBe(false)
    // The JSONL store and the guard, in the chunk the handlers' code import()s when a data dir's store is chosen.
    const dataDirStores = closure(loaded(sessions, "DataDirStores"))
    for (const marker of [jsonlIndex, trustStore, startedSessions]) expect(dataDirStores.includes(marker), marker).toBe(true)
  })

  it("run loads them all (the markers are the modules' own)", () => {
    const run = closure(loaded(tree, "Run"))
    for (const marker of [engine, workspaceTools, webFetch]) expect(run.includes(marker), marker).toBe(true)
    const dataDirStores = closure(loaded(run, "DataDirStores"))
    for (const marker of [jsonlIndex, trustStore, startedSessions]) expect(dataDirStores.includes(marker), marker).toBe(true)
  })
})
