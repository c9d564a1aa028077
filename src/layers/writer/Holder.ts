/**
 * Who holds a session's writer lock, and whether that holder is still alive: the identity the
 * JSONL lock files and the SQL lease rows record (pid, host, the process's start time) and the
 * liveness rule both stores apply.
 *
 * A pid alone is not an identity: pids are reused. The kernel's start time of the process
 * (`/proc/<pid>/stat`, field 22, in clock ticks since boot) tells a live holder from a new process
 * that happens to have its pid.
 *
 * @since 0.1.0
 * @internal
 */
import { randomUUID } from "node:crypto"
import { readFileSync, readlinkSync } from "node:fs"
import { hostname } from "node:os"

/** A lock holder as recorded in a lock file or lease row. */
export interface Holder {
  readonly pid: number
  readonly hostname: string
  /** The process's start time from `/proc/<pid>/stat` (field 22); absent where `/proc` is not available. */
  readonly startTime?: string
  /**
   * The kernel's boot id. Of a holder of this host name, another one means another boot: this
   * machine's before a reboot, or another machine's that has this host name too — nothing here
   * tells which, so it judges nothing alone (see {@link liveness}).
   */
  readonly bootId?: string
  /** The holder's pid namespace (`/proc/self/ns/pid`): its pid means nothing in another one (another container). */
  readonly pidNamespace?: string
  /**
   * The holder's time namespace (`/proc/self/ns/time`; `none` on a kernel without them): its
   * monotonic clock is this one's only in the same.
   */
  readonly timeNamespace?: string
  /** When the lock was taken (ISO time), for people reading the holder's description. */
  readonly startedAt: string
  /** Unique per acquisition: tells two acquisitions by one process apart. */
  readonly nonce: string
}

/** A process's start time, or `undefined` when it has no readable `/proc` entry (gone, or no `/proc`). */
export const startTimeOf = (pid: number): string | undefined => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    // The command name (field 2) is in parentheses and may hold spaces: count fields after its end.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    // fields[0] is field 3 (the state); field 22 is fields[19]. A zombie has exited: it holds nothing.
    if (fields[0] === "Z" || fields[0] === "X") return "exited"
    return fields[19]
  } catch {
    return undefined
  }
}

const ownStartTime = startTimeOf(process.pid)

const readOr = (read: () => string): string | undefined => {
  try {
    return read().trim()
  } catch {
    return undefined
  }
}
const ownBootId = readOr(() => readFileSync("/proc/sys/kernel/random/boot_id", "utf8"))
const ownPidNamespace = readOr(() => readlinkSync("/proc/self/ns/pid"))
const ownUtsNamespace = readOr(() => readlinkSync("/proc/self/ns/uts"))

/**
 * The kernel's initial pid and UTS namespaces, as `readlink` tells them: their inode numbers are
 * constants of the kernel (`PROC_PID_INIT_INO`, `PROC_UTS_INIT_INO`), the same on every machine.
 */
const initialPidNamespace = "pid:[4026531836]"
const initialUtsNamespace = "uts:[4026531838]"

/**
 * Whether this process may judge a holder on this machine's boot records (see `Boots`): only when
 * it runs in the kernel's initial pid and UTS namespaces — on the machine itself, not in a
 * container. A container's boot id is its host's (`/proc/sys/kernel/random/boot_id` is the
 * kernel's), so a record in its state folder names its host's boot, which is over only for that
 * host: a copy of the folder that keeps its inodes (a ZFS or Btrfs snapshot clone, `zfs send |
 * recv`, an LVM snapshot, `cp -al`, `rsync --link-dest`, an LXD copy or `pct clone`), run on another
 * host under the same host name, would judge the original's live lock dead. Inside a container a
 * lock of another boot stays unknown.
 */
export const trustsBootRecords = (own: Pick<Own, "pidNamespace" | "utsNamespace">): boolean =>
  own.pidNamespace === initialPidNamespace && own.utsNamespace === initialUtsNamespace

/**
 * This process's time namespace as `readlink` tells it (`/proc/self/ns/time`), `none` on a kernel
 * without time namespaces — before Linux 5.6 (RHEL 8, Ubuntu 20.04, Amazon Linux 2) or built
 * without them — where ns/time is missing (ENOENT) while ns/pid is there, and every process of the
 * boot reads one CLOCK_MONOTONIC: recorded, so two holders of such a boot are judged on it. Unknown
 * where it cannot be told (no `/proc`, ns/time unreadable for another reason).
 */
export const timeNamespaceOf = (readlink: (path: string) => string): string | undefined => {
  try {
    return readlink("/proc/self/ns/time").trim()
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") return undefined
    return readOr(() => readlink("/proc/self/ns/pid")) === undefined ? undefined : "none"
  }
}
const ownTimeNamespace = timeNamespaceOf((path) => readlinkSync(path))

/** Whether this process runs on the machine itself (see {@link trustsBootRecords}): only then are its boots worth recording. */
export const ownBootRecordsCount = (): boolean => trustsBootRecords({ pidNamespace: ownPidNamespace, utsNamespace: ownUtsNamespace })

/** A fresh holder record for this process. */
export const current = (now: Date = new Date()): Holder => ({
  pid: process.pid,
  hostname: hostname(),
  ...(ownStartTime === undefined ? {} : { startTime: ownStartTime }),
  ...(ownBootId === undefined ? {} : { bootId: ownBootId }),
  ...(ownPidNamespace === undefined ? {} : { pidNamespace: ownPidNamespace }),
  ...(ownTimeNamespace === undefined ? {} : { timeNamespace: ownTimeNamespace }),
  startedAt: now.toISOString(),
  nonce: randomUUID()
})

/** What can be known here of a holder: alive, dead, or nothing (another host, another pid namespace). */
export type Liveness = "alive" | "dead" | "unknown"

const differ = (a: string | undefined, b: string | undefined) => a !== undefined && b !== undefined && a !== b

/** Who this process is, as far as judging a holder goes (a seam: tests stand in for another machine's process). */
export interface Own {
  readonly hostname: string
  readonly bootId: string | undefined
  readonly pidNamespace: string | undefined
  /** The UTS namespace (`/proc/self/ns/uts`): with the pid namespace, tells the machine itself from a container (see {@link trustsBootRecords}). */
  readonly utsNamespace?: string | undefined
  /**
   * Whether this machine recorded boot `bootId` under host name `hostname` as its own (see
   * `Boots`): a boot of it that is over. Absent: nothing is known of boots before this one.
   */
  readonly recordedBoot?: ((bootId: string, hostname: string) => boolean) | undefined
}

/**
 * What can be known of `holder`'s process before its pid is asked about. A holder of this host
 * name but another boot is unknown, not dead: host names repeat across machines (a Kubernetes pod
 * spec's `hostname:`, compose, cloned VMs), and such a holder, judged dead, had its live lock taken
 * at once — two writers interleaving one log. Nothing this process can read tells a reboot of this
 * machine from another machine of the same name: `/etc/machine-id` is one for every container of
 * an image and every clone of an unprepared VM image. So a lease waits out its expiry (a real
 * reboot costs one ttl), and a JSONL lock, which has none, is judged on this machine's own record of
 * its boots (`own.recordedBoot`, see `Boots`): of a boot this machine recorded under this host name,
 * its holder is dead (that boot is over); of any other, unknown — released by hand. Only on the
 * machine itself: in a container the records name the host's boots (see {@link trustsBootRecords}).
 */
export const sameMachine = (own: Own, holder: Holder): Liveness | "judge by pid" => {
  if (holder.hostname !== own.hostname) {
    const sameBoot = own.bootId !== undefined && holder.bootId === own.bootId
    return sameBoot && own.pidNamespace !== undefined && holder.pidNamespace === own.pidNamespace ? "judge by pid" : "unknown"
  }
  if (holder.bootId !== undefined && differ(holder.bootId, own.bootId)) {
    return trustsBootRecords(own) && own.recordedBoot?.(holder.bootId, own.hostname) === true ? "dead" : "unknown"
  }
  return differ(holder.pidNamespace, own.pidNamespace) ? "unknown" : "judge by pid"
}

/**
 * Whether a holder is alive, as far as this process can tell. On this machine and in this pid
 * namespace: dead when no process has its pid, when the process with its pid started at another
 * time (the pid was reused), or when it has exited and not been reaped yet. Of another boot (this
 * host after a reboot, or another machine of this host name), another machine or another pid
 * namespace (another container): unknown.
 *
 * "This machine" is this boot (the kernel's random boot id) before it is this host name: a
 * container, or `unshare --uts`, runs under another host name on the same kernel, and a holder
 * killed there was taken as alive for good (the JSONL lock has no expiry). A holder of another host
 * name is judged by its pid only when it records this boot and this pid namespace, both known; one
 * of this boot in another pid namespace stays unknown: its pid names another process here. With
 * `recordedBoot` (the JSONL lock's: `Boots.recorded`), a holder of this host name and a boot this
 * machine recorded as its own is dead (outside a container only).
 */
export const liveness = (holder: Holder, recordedBoot?: Own["recordedBoot"]): Liveness => {
  const known = sameMachine({ hostname: hostname(), bootId: ownBootId, pidNamespace: ownPidNamespace, utsNamespace: ownUtsNamespace, recordedBoot }, holder)
  if (known !== "judge by pid") return known
  if (holder.pid === process.pid) return differ(holder.startTime, ownStartTime) ? "dead" : "alive"
  try {
    process.kill(holder.pid, 0)
  } catch (error) {
    // EPERM: the process exists but belongs to another user; it is alive.
    if ((error as NodeJS.ErrnoException).code === "ESRCH") return "dead"
  }
  const now = startTimeOf(holder.pid)
  if (now === "exited") return "dead"
  return differ(holder.startTime, now) ? "dead" : "alive"
}

/**
 * Whether `holder` is this very process (this machine and pid namespace, its pid, its start time):
 * then whether it still holds a lease is known for sure (see `Lease`), not guessed from its pid.
 */
export const isThisProcess = (holder: Holder): boolean =>
  holder.pid === process.pid && !differ(holder.startTime, ownStartTime) &&
  sameMachine({ hostname: hostname(), bootId: ownBootId, pidNamespace: ownPidNamespace, utsNamespace: ownUtsNamespace }, holder) === "judge by pid"

/**
 * Whether a holder reads the same monotonic clock as this process (`CLOCK_MONOTONIC`, which
 * `process.hrtime` reads: time since boot, the same in every process and container of one boot, a
 * time namespace aside): this boot — the kernel's random boot id, which containers share whatever
 * their host names — and this time namespace, both known. A step of the wall clock moves it for no one.
 */
export const sharesMonotonicClock = (holder: Holder): boolean =>
  sameMonotonicClock({ bootId: ownBootId, timeNamespace: ownTimeNamespace }, holder)

/**
 * Whether `holder` reads the monotonic clock of a process of boot `own.bootId` in time namespace
 * `own.timeNamespace`: both known and equal. A holder that records no time namespace (an older
 * version's) is judged on the wall clock, as before.
 */
export const sameMonotonicClock = (
  own: { readonly bootId: string | undefined; readonly timeNamespace: string | undefined },
  holder: Holder
): boolean => own.bootId !== undefined && holder.bootId === own.bootId && own.timeNamespace !== undefined && holder.timeNamespace === own.timeNamespace

/** One line for people: `pid 1234 on host h (since 2026-…)`. */
export const describe = (holder: Holder): string => `pid ${holder.pid} on host ${holder.hostname} (since ${holder.startedAt})`

/** Reads a holder from its JSON text; `undefined` when it is not one. */
export const parse = (text: string): Holder | undefined => {
  try {
    const value = JSON.parse(text) as Partial<Holder>
    const optionalString = (v: unknown) => v === undefined || typeof v === "string"
    return typeof value.pid === "number" && typeof value.hostname === "string" && typeof value.startedAt === "string" &&
        typeof value.nonce === "string" && optionalString(value.startTime) && optionalString(value.bootId) && optionalString(value.pidNamespace) &&
        optionalString(value.timeNamespace)
      ? value as Holder
      : undefined
  } catch {
    return undefined
  }
}
