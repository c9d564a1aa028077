/**
 * review46's findings on the JSONL writer lock and the files beside a log: a data dir can come with
 * a repository (the CLI's default is `.effect-agent/` in the current directory), and `repair`, which
 * the CLI recommends for a damaged log, runs on a session no one started here.
 *
 * - f4: a lock folder that is a link to a folder elsewhere had its `<n>.json`/`<n>.released` deleted
 *   and this process's records written there;
 * - f10: upgrading a log of an older format wrote through links planted as `<log>.upgrade`/`<log>.v0`;
 * - f8: a holder killed in a container (another host name, the same boot) held the lock for good;
 * - f6: a named pipe in a log's place froze the whole process on append;
 * - f11: a lock file named past 2^53 made every run fail "the lock kept changing".
 */
import { execFileSync, spawnSync } from "node:child_process"
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as AgentEvent from "../../src/domain/AgentEvent.js"
import * as JsonlEventStore from "../../src/layers/JsonlEventStore.js"
import * as AppendIo from "../../src/layers/jsonl/AppendIo.js"
import * as Holder from "../../src/layers/writer/Holder.js"
import * as IdGenerator from "../../src/services/IdGenerator.js"
import { collect, tempDir } from "../helpers.js"

const header = JSON.stringify({ format: JsonlEventStore.formatName, version: JsonlEventStore.formatVersion })
const at = "2026-01-01T00:00:00.000Z"
const created = (sessionId: string): AgentEvent.AgentEvent => ({
  id: "e1",
  sessionId,
  sequence: 1,
  timestamp: at,
  type: "session.created",
  payload: { cwd: "/w", client: "cli" }
})
const started = (sessionId: string, sequence: number): AgentEvent.AgentEvent => ({
  id: `e${sequence}`,
  sessionId,
  turnId: "turn_again",
  sequence,
  timestamp: at,
  type: "turn.started",
  payload: { promptPreview: "again" }
})

const sessionsDir = (dataDir: string) => join(dataDir, "sessions")
const logOf = (dataDir: string, sessionId: string) => join(sessionsDir(dataDir), `${sessionId}.jsonl`)
const writeLog = (dataDir: string, sessionId: string, text: string) => {
  mkdirSync(sessionsDir(dataDir), { recursive: true })
  writeFileSync(logOf(dataDir, sessionId), text)
}
const lockDir = (dataDir: string, sessionId: string) => `${logOf(dataDir, sessionId)}.lock`
const writeLockRecord = (dataDir: string, sessionId: string, record: object) => {
  mkdirSync(lockDir(dataDir, sessionId), { recursive: true })
  writeFileSync(join(lockDir(dataDir, sessionId), "1.json"), JSON.stringify(record))
}

/** The pid of a process that has exited (and been reaped). */
const deadPid = () => Number(spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], { encoding: "utf8" }).stdout)

/** A folder's names and contents, to tell it was not touched. */
const contents = (dir: string) => Object.fromEntries(readdirSync(dir).sort().map((name) => [name, readFileSync(join(dir, name), "utf8")]))

describe("f4: a lock folder that is a link", () => {
  it.scoped("repair and every writer refuse it, typed; the folder it names is not touched", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDir
      writeLog(dataDir, "s", [header, AgentEvent.encodeJson(created("s")), "{\"damaged", ""].join("\n"))
      const victim = join(dataDir, "victim")
      mkdirSync(victim)
      writeFileSync(join(victim, "1.json"), "{\"precious\":1}")
      writeFileSync(join(victim, "41.json"), "{\"precious\":41}")
      writeFileSync(join(victim, "notes.txt"), "keep")
      const before = contents(victim)
      symlinkSync("../victim", lockDir(dataDir, "s"))

      const repaired = yield* Effect.either(JsonlEventStore.repair({ dataDir, sessionId: "s" }))
      expect(Either.isLeft(repaired) && repaired.left).toMatchObject({ _tag: "EventStoreFailure", reason: "corrupt", operation: "lock" })
      expect(Either.isLeft(repaired) && repaired.left.message).toContain("lock folder is a link or not a folder")
      const store = yield* JsonlEventStore.make({ dataDir })
      const held = yield* Effect.either(Effect.scoped(store.acquireWriter("s")))
      expect(Either.isLeft(held) && held.left).toMatchObject({ _tag: "EventStoreFailure", operation: "lock" })
      expect(contents(victim)).toEqual(before)
      expect(lstatSync(lockDir(dataDir, "s")).isSymbolicLink()).toBe(true)
    }).pipe(Effect.provide(IdGenerator.layerSequential), Effect.provide(NodeContext.layer)))
})

describe("f11: a lock file named past 2^53", () => {
  it.scoped("is none of the store's: the lock is taken, the stray name left alone", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDir
      const store = yield* JsonlEventStore.make({ dataDir })
      yield* store.append(created("s"))
      mkdirSync(lockDir(dataDir, "s"), { recursive: true })
      writeFileSync(join(lockDir(dataDir, "s"), "9007199254740993.json"), "{}")
      yield* Effect.scoped(store.acquireWriter("s"))
      yield* Effect.scoped(store.acquireWriter("s"))
      expect(readdirSync(lockDir(dataDir, "s"))).toContain("9007199254740993.json")
    }).pipe(Effect.provide(NodeContext.layer)))
})

describe("f8: a holder on this machine under another host name", () => {
  const own = Holder.current()

  it.scoped("of this boot and pid namespace (a container sharing them, `unshare --uts`), dead: taken over at once", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDir
      const store = yield* JsonlEventStore.make({ dataDir })
      yield* store.append(created("s"))
      writeLockRecord(dataDir, "s", { ...own, pid: deadPid(), hostname: "container-a", nonce: "n" })
      yield* Effect.scoped(store.acquireWriter("s"))
      // Alive (this process's own record, under another host name): still busy.
      writeLockRecord(dataDir, "live", { ...own, hostname: "container-a", nonce: "n" })
      expect(yield* Effect.either(Effect.scoped(store.acquireWriter("live")))).toMatchObject({ left: { _tag: "SessionBusy" } })
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("of this boot in another pid namespace, or of another machine: busy, and the message says what to remove once it is gone", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDir
      const store = yield* JsonlEventStore.make({ dataDir })
      const busy = (sessionId: string, record: object) =>
        Effect.gen(function*() {
          yield* store.append(created(sessionId))
          writeLockRecord(dataDir, sessionId, record)
          const result = yield* Effect.either(Effect.scoped(store.acquireWriter(sessionId)))
          expect(Either.isLeft(result) && result.left._tag).toBe("SessionBusy")
          return Either.isLeft(result) ? result.left.message : ""
        })
      const otherNamespace = yield* busy("ns", { ...own, pid: deadPid(), hostname: "container-b", pidNamespace: "pid:[1]", nonce: "n" })
      expect(otherNamespace).toContain("remove the folder sessions/ns.jsonl.lock in the data dir")
      expect(otherNamespace).not.toContain(dataDir)
      const otherMachine = yield* busy("remote", { ...own, pid: deadPid(), hostname: "elsewhere", bootId: "another-boot", nonce: "n" })
      expect(otherMachine).toContain("remove the folder sessions/remote.jsonl.lock")
    }).pipe(Effect.provide(NodeContext.layer)))
})

describe("f6: a named pipe in a log's place", () => {
  it.scoped("an append fails typed at once instead of blocking the process in open(2)", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDir
      mkdirSync(sessionsDir(dataDir), { recursive: true })
      execFileSync("mkfifo", [logOf(dataDir, "s")])
      const store = yield* JsonlEventStore.make({ dataDir })
      const appended = yield* Effect.either(store.append(created("s")))
      expect(Either.isLeft(appended) && appended.left).toMatchObject({ _tag: "EventStoreFailure", reason: "corrupt", detail: "not a regular file" })
      // The append descriptor itself: a pipe with no reader is refused (ENXIO), not waited on.
      expect(() => AppendIo.node.open(logOf(dataDir, "s"))).toThrow(expect.objectContaining({ code: "ENXIO" }))
    }).pipe(Effect.provide(NodeContext.layer)))
})

describe("f10: upgrading a log of an older format", () => {
  const fixture = new URL("../../fixtures/logs/v0/sess_prototype.jsonl", import.meta.url).pathname

  it.scoped("writes through neither link planted beside it: the links' files unchanged, the log a regular file, the original kept", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDir
      const original = readFileSync(fixture, "utf8")
      writeLog(dataDir, "sess_prototype", original)
      const file = logOf(dataDir, "sess_prototype")
      writeFileSync(join(dataDir, "a.txt"), "precious A")
      writeFileSync(join(dataDir, "b.txt"), "precious B")
      symlinkSync("../a.txt", `${file}.upgrade`)
      symlinkSync("../b.txt", `${file}.v0`)
      const store = yield* JsonlEventStore.make({ dataDir })
      yield* store.append(started("sess_prototype", 15))
      expect(readFileSync(join(dataDir, "a.txt"), "utf8")).toBe("precious A")
      expect(readFileSync(join(dataDir, "b.txt"), "utf8")).toBe("precious B")
      expect(lstatSync(file).isFile()).toBe(true)
      expect(readFileSync(file, "utf8").split("\n")[0]).toBe(header)
      expect(readFileSync(`${file}.v0.1`, "utf8")).toBe(original)
      expect(existsSync(`${file}.upgrade`)).toBe(false)
      expect((yield* collect(store.read("sess_prototype"))).map((e) => e.sequence)).toEqual(Array.from({ length: 15 }, (_, i) => i + 1))
    }).pipe(Effect.provide(NodeContext.layer)))
})
