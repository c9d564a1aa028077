/**
 * The writers of a whole file that write a temporary file then rename it over the real one
 * (`StartedSessions.record`, `TrustStore.trust`, `SessionMcpFile.save`) named it `<file>.<pid>.tmp`
 * (TrustStore: `<file>.<pid>.<n>.tmp`) and opened it `"w"`, which follows a link: a link planted
 * under that name had the record written through it, truncating the file it named and leaving it
 * `0600`. The config folder is the user's own, but a caller may give any folder (an embedding's
 * `dir`, `EFFECT_AGENT_CONFIG_DIR` inside a repository). Now the temporary file is created with a
 * random name, `O_CREAT|O_EXCL|O_NOFOLLOW` (`PlainFiles.replace`; `cli/ReplaceFile` for the CLI's own), as the listing index's is.
 */
import { chmodSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as SessionMcpFile from "../../src/cli/SessionMcpFile.js"
import * as StartedSessions from "../../src/layers/StartedSessions.js"
import * as TrustStore from "../../src/layers/TrustStore.js"
import { tempDir } from "../helpers.js"

const original = "the user's own file\n"

/** A victim file outside the folder, and links to it under each name `names` gives for `file`. */
const plant = (root: string, file: string, names: (file: string) => ReadonlyArray<string>) => {
  const victim = join(root, "victim.txt")
  writeFileSync(victim, original)
  chmodSync(victim, 0o644)
  for (const name of names(file)) symlinkSync(victim, name)
  return victim
}

const untouched = (victim: string) => {
  expect(readFileSync(victim, "utf8")).toBe(original)
  expect(statSync(victim).mode & 0o777).toBe(0o644)
}

/** The names the old code wrote through: `<file>.<pid>.tmp` and `<file>.<pid>.<n>.tmp` for small n. */
const byPid = (file: string) => [`${file}.${process.pid}.tmp`, ...Array.from({ length: 16 }, (_, n) => `${file}.${process.pid}.${n}.tmp`)]

describe("whole-file writers never write through a planted temporary name", () => {
  it.scoped("StartedSessions.record", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      const dir = join(root, "config")
      const sessionId = "ses_planted"
      mkdirSync(join(dir, StartedSessions.folderName), { recursive: true })
      const file = join(dir, StartedSessions.folderName, `${sessionId}.json`)
      const victim = plant(root, file, byPid)
      yield* StartedSessions.record(dir, { sessionId, cwd: "/w", client: "test", createdAt: "2026-01-01T00:00:00.000Z" })
      untouched(victim)
      expect(JSON.parse(readFileSync(file, "utf8"))).toMatchObject({ sessionId, cwd: "/w" })
      expect(statSync(file).mode & 0o777).toBe(0o600)
      expect(readdirSync(join(dir, StartedSessions.folderName)).filter((name) => !byPid(file).some((planted) => planted.endsWith(name))))
        .toEqual([`${sessionId}.json`])
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("TrustStore.trust and revoke", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      const dir = join(root, "config")
      mkdirSync(dir)
      const file = join(dir, TrustStore.fileName)
      const victim = plant(root, file, byPid)
      yield* TrustStore.trust(dir, "/w/.effect-agent/settings.json", "a".repeat(64))
      yield* TrustStore.trust(dir, "/w/.mcp.json", "b".repeat(64))
      expect(yield* TrustStore.revoke(dir, "/w/.mcp.json")).toBe(1)
      untouched(victim)
      expect((yield* TrustStore.entries(dir)).map((entry) => entry.path)).toEqual(["/w/.effect-agent/settings.json"])
      expect(statSync(file).mode & 0o777).toBe(0o600)
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("SessionMcpFile.save", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      const dir = join(root, "config")
      const sessionId = "ses_planted"
      mkdirSync(join(dir, SessionMcpFile.folderName), { recursive: true })
      const file = join(dir, SessionMcpFile.folderName, `${sessionId}.json`)
      const victim = plant(root, file, byPid)
      yield* SessionMcpFile.save(dir, sessionId, { docs: { type: "http", url: "https://example.com/mcp" } })
      untouched(victim)
      expect(JSON.parse(readFileSync(file, "utf8"))).toMatchObject({ docs: { url: "https://example.com/mcp" } })
      expect(statSync(file).mode & 0o777).toBe(0o600)
    }).pipe(Effect.provide(NodeContext.layer)))
})
