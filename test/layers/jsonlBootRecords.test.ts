/**
 * stores45: a JSONL lock left by this machine before a crash and a reboot. Its holder recorded this
 * host name and another boot, which was "unknown" (another machine of the name may hold it) and the
 * lock stayed busy until the user removed its folder by hand. Now the machine keeps its own record
 * of the boots it ran a writer under (src/layers/writer/Boots.ts, outside the data dir): a lock of a
 * boot it recorded as its own is of a boot that is over, and is taken over; any other stays busy.
 * Planted lock records and a planted record folder stand in for the reboot. The first case failed on
 * main (SessionBusy).
 */
import { createHash, randomUUID } from "node:crypto"
import { copyFileSync, existsSync, fstatSync, mkdirSync, openSync, closeSync, readdirSync, readFileSync, symlinkSync, unlinkSync, writeSync } from "node:fs"
import { hostname } from "node:os"
import { join } from "node:path"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as JsonlEventStore from "../../src/layers/JsonlEventStore.js"
import * as Holder from "../../src/layers/writer/Holder.js"
import { tempDir } from "../helpers.js"

const at = "2026-01-01T00:00:00.000Z"
const ownBoot = readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim()

/** A lock generation file as this machine's process of boot `bootId` would have left it. */
const writeLockRecord = (dataDir: string, sessionId: string, bootId: string) => {
  const dir = join(dataDir, "sessions", `${sessionId}.jsonl.lock`)
  mkdirSync(dir, { recursive: true })
  // This process's own pid, even: in another boot it named another process.
  const fd = openSync(join(dir, "1.json"), "wx", 0o600)
  writeSync(fd, JSON.stringify({ pid: process.pid, hostname: hostname(), bootId, startedAt: at, nonce: "n" }))
  closeSync(fd)
}

/** The record of boot `bootId` under this host name in `folder`, as the machine writes it: named by the boot and the host name's hash, holding its own inode. */
const plantRecord = (folder: string, bootId: string, host = hostname()) => {
  mkdirSync(folder, { recursive: true, mode: 0o700 })
  const file = join(folder, `${bootId}.${createHash("sha256").update(host).digest("hex").slice(0, 16)}`)
  const fd = openSync(file, "wx", 0o600)
  writeSync(fd, `${fstatSync(fd).ino}\n`)
  closeSync(fd)
  return file
}

/** Runs `effect` with `XDG_STATE_HOME` set to a folder of its own; the boot records' folder given. */
const withStateHome = <A, E, R>(effect: (records: string) => Effect.Effect<A, E, R>) =>
  Effect.flatMap(tempDir, (state) =>
    Effect.acquireUseRelease(
      Effect.sync(() => {
        const saved = process.env.XDG_STATE_HOME
        process.env.XDG_STATE_HOME = state
        return saved
      }),
      () => effect(join(state, "effect-agent", "boots")),
      (saved) => Effect.sync(() => saved === undefined ? delete process.env.XDG_STATE_HOME : (process.env.XDG_STATE_HOME = saved))
    ))

const acquire = (dataDir: string, sessionId: string) =>
  Effect.flatMap(JsonlEventStore.make({ dataDir }), (store) => Effect.either(Effect.scoped(store.acquireWriter(sessionId))))

/** On the machine itself the records count; in a container (the host's boot id) never — the same test holds on either. */
const onTheMachineItself = Holder.ownBootRecordsCount()

describe("JSONL writer lock of this host name and a boot before this one", () => {
  it.scoped("of a boot this machine recorded as its own: the boot is over, the lock is taken over (in a container: still busy)", () =>
    withStateHome((records) =>
      Effect.gen(function*() {
        const dataDir = yield* tempDir
        const before = randomUUID()
        plantRecord(records, before)
        writeLockRecord(dataDir, "s", before)
        const taken = yield* acquire(dataDir, "s")
        if (onTheMachineItself) expect(Either.isRight(taken)).toBe(true)
        else expect(taken).toMatchObject({ left: { _tag: "SessionBusy" } })
      })
    ).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("of a boot it did not record (another machine of this name), under another host name, or recorded in a copy: still busy", () =>
    withStateHome((records) =>
      Effect.gen(function*() {
        const dataDir = yield* tempDir
        writeLockRecord(dataDir, "unrecorded", randomUUID())
        expect(yield* acquire(dataDir, "unrecorded")).toMatchObject({ left: { _tag: "SessionBusy" } })
        // Recorded under another host name: not this name's boot.
        const renamed = randomUUID()
        plantRecord(records, renamed, `not-${hostname()}`)
        writeLockRecord(dataDir, "renamed", renamed)
        expect(yield* acquire(dataDir, "renamed")).toMatchObject({ left: { _tag: "SessionBusy" } })
        // A copy of a record (another machine's folder copied here, a backup restored): another inode.
        const copied = randomUUID()
        const elsewhere = plantRecord(join(yield* tempDir, "boots"), copied)
        copyFileSync(elsewhere, join(records, elsewhere.slice(elsewhere.lastIndexOf("/") + 1)))
        writeLockRecord(dataDir, "copied", copied)
        expect(yield* acquire(dataDir, "copied")).toMatchObject({ left: { _tag: "SessionBusy" } })
        // A record that is a link to a real one: not followed.
        const linked = randomUUID()
        const real = plantRecord(join(yield* tempDir, "boots"), linked)
        symlinkSync(real, join(records, real.slice(real.lastIndexOf("/") + 1)))
        writeLockRecord(dataDir, "linked", linked)
        expect(yield* acquire(dataDir, "linked")).toMatchObject({ left: { _tag: "SessionBusy" } })
      })
    ).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("records carried by the data dir count for nothing", () =>
    withStateHome(() =>
      Effect.gen(function*() {
        const dataDir = yield* tempDir
        const before = randomUUID()
        // Wherever in the data dir a clone might carry them: the records are never looked for there.
        plantRecord(join(dataDir, "boots"), before)
        plantRecord(join(dataDir, "sessions", "s.jsonl.lock", "boots"), before)
        writeLockRecord(dataDir, "s", before)
        expect(yield* acquire(dataDir, "s")).toMatchObject({ left: { _tag: "SessionBusy" } })
      })
    ).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("taking a lock records this boot under this host name (once), so a crash and a reboot leave a lock the next boot takes over", () =>
    withStateHome((records) =>
      Effect.gen(function*() {
        const dataDir = yield* tempDir
        expect(Either.isRight(yield* acquire(dataDir, "s"))).toBe(true)
        // In a container the boots are the host's: nothing is recorded.
        if (!onTheMachineItself) return expect(existsSync(records) ? readdirSync(records) : []).toEqual([])
        const names = readdirSync(records)
        expect(names).toEqual([`${ownBoot}.${createHash("sha256").update(hostname()).digest("hex").slice(0, 16)}`])
        const record = join(records, names[0]!)
        const fd = openSync(record, "r")
        const ino = fstatSync(fd).ino
        closeSync(fd)
        expect(readFileSync(record, "utf8")).toBe(`${ino}\n`)
        unlinkSync(record)
      })
    ).pipe(Effect.provide(NodeContext.layer)))
})
