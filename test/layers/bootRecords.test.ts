/**
 * stores45: what counts as this machine's own record of a boot (src/layers/writer/Boots.ts): a
 * record it made, in a folder of this user's that no one else writes, on a local file system.
 */
import { randomUUID } from "node:crypto"
import { chmodSync, linkSync, mkdirSync, readdirSync, symlinkSync, utimesSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Boots from "../../src/layers/writer/Boots.js"
import * as Holder from "../../src/layers/writer/Holder.js"
import { tempDir } from "../helpers.js"

describe("this machine's records of its boots", () => {
  it.scoped("a record made here counts, for its boot and host name only; made once", () =>
    Effect.gen(function*() {
      const folder = join(yield* tempDir, "boots")
      const boot = randomUUID()
      expect(Boots.recordedIn(folder, boot, "h")).toBe(false)
      Boots.recordIn(folder, boot, "h")
      Boots.recordIn(folder, boot, "h")
      expect(readdirSync(folder)).toHaveLength(1)
      expect(Boots.recordedIn(folder, boot, "h")).toBe(true)
      expect(Boots.recordedIn(folder, boot, "other")).toBe(false)
      expect(Boots.recordedIn(folder, randomUUID(), "h")).toBe(false)
      // Not a boot id: names no record (nor a path).
      expect(Boots.recordedIn(folder, "../boots", "h")).toBe(false)
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("a folder others may write, or a link to a folder, holds no record that counts", () =>
    Effect.gen(function*() {
      const folder = join(yield* tempDir, "boots")
      const boot = randomUUID()
      Boots.recordIn(folder, boot, "h")
      chmodSync(folder, 0o770)
      expect(Boots.recordedIn(folder, boot, "h")).toBe(false)
      chmodSync(folder, 0o700)
      const link = join(yield* tempDir, "linked")
      symlinkSync(folder, link)
      expect(Boots.recordedIn(link, boot, "h")).toBe(false)
      // Nor is anything recorded through it.
      const other = randomUUID()
      Boots.recordIn(link, other, "h")
      expect(Boots.recordedIn(folder, other, "h")).toBe(false)
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("the folder is the user's state folder, never the data dir: XDG_STATE_HOME (absolute), else ~/.local/state", () =>
    Effect.gen(function*() {
      expect(Boots.folder({ XDG_STATE_HOME: "/s" })).toBe("/s/effect-agent/boots")
      expect(Boots.folder({ XDG_STATE_HOME: "relative" })).toMatch(/\/\.local\/state\/effect-agent\/boots$/)
      expect(Boots.onLocalFileSystem(yield* tempDir)).toBe(true)
    }).pipe(Effect.provide(NodeContext.layer)))

  // review59s: a container's boot id is its host's. A copy of a container's state folder that keeps
  // its inodes (a ZFS/Btrfs snapshot clone, zfs send | recv, an LVM snapshot, cp -al, rsync
  // --link-dest; a hard link stands in for them here), made even while the container is stopped,
  // carries a record of its host's boot, which is not over: the original, restarted on that host,
  // runs under it. The clone (same host name, another host, the data dir shared) judged the live
  // original's lock dead. In a container the records count for nothing. Failed on main ("dead").
  it.scoped("in a container, an inode-keeping clone's record of the original's host boot does not make the original's live lock dead", () =>
    Effect.gen(function*() {
      const node1Boot = randomUUID() // the host's boot: the original's, before and after the clone
      const original = join(yield* tempDir, "c1", "boots")
      Boots.recordIn(original, node1Boot, "app")
      const clone = join(yield* tempDir, "c2", "boots")
      mkdirSync(clone, { recursive: true, mode: 0o700 })
      for (const name of readdirSync(original)) linkSync(join(original, name), join(clone, name))
      expect(Boots.recordedIn(clone, node1Boot, "app")).toBe(true)
      const liveC1: Holder.Holder = { pid: 4242, hostname: "app", bootId: node1Boot, pidNamespace: "pid:[4026532500]", startedAt: new Date().toISOString(), nonce: randomUUID() }
      const c2: Holder.Own = {
        hostname: "app",
        bootId: randomUUID(),
        pidNamespace: "pid:[4026532600]",
        utsNamespace: "uts:[4026532601]",
        recordedBoot: (boot, host) => Boots.recordedIn(clone, boot, host)
      }
      expect(Holder.sameMachine(c2, liveC1)).toBe("unknown")
      // A container of the host's pid namespace but its own host name (UTS namespace): the same.
      expect(Holder.sameMachine({ ...c2, pidNamespace: "pid:[4026531836]" }, liveC1)).toBe("unknown")
      // On the machine itself (its initial pid and UTS namespaces) the record counts, as before.
      expect(Holder.sameMachine({ ...c2, pidNamespace: "pid:[4026531836]", utsNamespace: "uts:[4026531838]" }, liveC1)).toBe("dead")
    }).pipe(Effect.provide(NodeContext.layer)))

  // stores59: records were never removed, one file per boot for good. Now recording a boot keeps its
  // host name's newest `keptPerHost` records. A record removed makes its boot's locks unknown, never
  // dead; the boot recorded last (the one running) is kept whatever the records' times say.
  it.scoped("recording a boot keeps the host name's newest records, the running boot's always; a lock of a boot dropped is unknown, never dead", () =>
    Effect.gen(function*() {
      const folder = join(yield* tempDir, "boots")
      const hostBoots = Array.from({ length: Boots.keptPerHost + 5 }, () => randomUUID())
      const otherHost = Array.from({ length: 3 }, () => randomUUID())
      const recordOf = (boot: string) => join(folder, readdirSync(folder).find((name) => name.startsWith(boot))!)
      // Made a second apart, each time set as it is made (no two alike), and ahead of the clock: the
      // clock was set back since. The other host name's are older than all.
      const now = Date.now() / 1000
      for (const boot of otherHost) {
        Boots.recordIn(folder, boot, "other")
        utimesSync(recordOf(boot), now - 20_000, now - 20_000)
      }
      hostBoots.forEach((boot, i) => {
        Boots.recordIn(folder, boot, "h")
        utimesSync(recordOf(boot), now + 10_000 + i, now + 10_000 + i)
      })
      // Not a record: left alone.
      writeFileSync(join(folder, "notes.txt"), "mine")
      // The running boot, recorded now: older than every other record of "h" by its time.
      const running = randomUUID()
      Boots.recordIn(folder, running, "h")
      const booted = (boot: string) => Boots.recordedIn(folder, boot, "h")
      // The running boot and the newest others of "h"; the oldest gone.
      expect(booted(running)).toBe(true)
      const kept = hostBoots.slice(-(Boots.keptPerHost - 1))
      expect(kept.every(booted)).toBe(true)
      expect(hostBoots.slice(0, hostBoots.length - kept.length).some(booted)).toBe(false)
      expect(otherHost.every((boot) => Boots.recordedIn(folder, boot, "other"))).toBe(true)
      expect(readdirSync(folder)).toHaveLength(Boots.keptPerHost + otherHost.length + 1)
      // Recorded again (the same boot, another process): nothing more removed.
      Boots.recordIn(folder, running, "h")
      expect(kept.every(booted)).toBe(true)
      expect(booted(running)).toBe(true)
      // A lock of a boot whose record went is unknown, not dead; one of a boot still recorded is dead.
      const own: Holder.Own = { hostname: "h", bootId: randomUUID(), pidNamespace: "pid:[4026531836]", utsNamespace: "uts:[4026531838]", recordedBoot: booted }
      const holderOf = (bootId: string): Holder.Holder => ({ pid: 4242, hostname: "h", bootId, pidNamespace: "pid:[4026531836]", startedAt: new Date().toISOString(), nonce: randomUUID() })
      expect(Holder.sameMachine(own, holderOf(hostBoots[0]!))).toBe("unknown")
      expect(Holder.sameMachine(own, holderOf(kept[0]!))).toBe("dead")
    }).pipe(Effect.provide(NodeContext.layer)))
})
