/**
 * The boots this machine has run a writer under, as this machine recorded them: what tells a JSONL
 * lock left by this machine before a crash and reboot (dead) from one held by another machine of
 * the same host name (unknown).
 *
 * The kernel's boot id is random per boot; nothing in `/proc` remembers the boots before this one,
 * and `/etc/machine-id` is one for every container of an image and every clone of an unprepared VM
 * image. So each process that takes a JSONL lock first records the boot it runs under, once per boot,
 * host name and user: a file `<boot id>.<host hash>` in the user's state folder
 * (`$XDG_STATE_HOME/effect-agent/boots`, else `~/.local/state/effect-agent/boots`). A lock whose
 * holder recorded this host name and another boot that this folder lists is of a boot of this
 * machine that is over (a machine runs one boot at a time): its holder is dead. A boot it does not
 * list stays unknown (another machine of the name, or a boot before the record was kept).
 *
 * Sound only while the records are this machine's own, so a record counts only when:
 * - the folder is outside the data dir: a data dir copied or shared (a repository's, a network
 *   share) carries no records;
 * - the folder is on a local file system (ext2/3/4, XFS, Btrfs, ZFS, F2FS, bcachefs, overlayfs,
 *   tmpfs — `statfs`), so no other machine writes it: a home folder on NFS, SMB, a FUSE or 9p share,
 *   virtiofs is none, and its records count for nothing;
 * - the folder is this user's, a real folder (not a link) writable by no one else, and the record a
 *   regular file of this user's naming its own inode: a copy of the folder file by file (`cp`,
 *   `rsync` without `--link-dest`, a tar or file-level backup restored, an image layer) makes new
 *   inodes and counts for nothing;
 * - this process runs on the machine itself, not in a container (`Holder.trustsBootRecords`): a
 *   container's boot id is its host's, and a copy of its state folder that keeps the inodes (a
 *   ZFS/Btrfs snapshot clone, `zfs send | recv`, an LVM snapshot, `cp -al`, `rsync --link-dest`)
 *   would, on another host, take the original's live boot as over. A container records nothing.
 *
 * Each host name keeps its newest {@link keptPerHost} records: recording a boot removes that host
 * name's older ones (the oldest made first). Removing a record never makes a lock dead: a lock of a
 * boot no longer listed is unknown, as one of a boot before the records were kept — busy until
 * released by hand. The boot recorded last is never removed, whatever the clock says.
 *
 * What stays: a machine copied with its inodes kept (a VM disk cloned block for block, a snapshot
 * of its root or home file system, a hard-link backup of its home) keeps the records;
 * a clone of the same host name sharing a data dir with the machine it was cloned from would judge
 * that machine's running boot as its own past one. Give a cloned machine its own host name.
 *
 * @since 0.14.0
 * @internal
 */
import { createHash } from "node:crypto"
import { closeSync, constants, fstatSync, fsyncSync, linkSync, lstatSync, openSync, readdirSync, readSync, rmSync, statfsSync, writeSync } from "node:fs"
import { homedir } from "node:os"
import { join } from "node:path"
import * as Directories from "../Directories.js"
import * as PlainFiles from "../jsonl/PlainFiles.js"

/** The folder of this user's boot records (see the module's comment), or undefined when there is no home to put it in. */
export const folder = (env: NodeJS.ProcessEnv = process.env): string | undefined => {
  const state = env.XDG_STATE_HOME
  // The XDG spec: a relative XDG_STATE_HOME is invalid and ignored.
  if (state !== undefined && state.startsWith("/")) return join(state, "effect-agent", "boots")
  let home: string
  try {
    home = homedir()
  } catch {
    return undefined
  }
  return home.startsWith("/") ? join(home, ".local", "state", "effect-agent", "boots") : undefined
}

/**
 * `statfs` types of the local file systems a record may be kept on: no other machine writes them.
 * ext2/3/4, XFS, Btrfs, ZFS, F2FS, bcachefs, overlayfs (a container's own), tmpfs (emptied at boot:
 * harmless).
 */
const localTypes = new Set([0xef53, 0x58465342, 0x9123683e, 0x2fc12fc1, 0xf2f52010, 0xca451a4e, 0x794c7630, 0x01021994])

/** Whether `dir` is on a local file system (see {@link localTypes}). */
export const onLocalFileSystem = (dir: string): boolean => {
  try {
    return localTypes.has(Number(statfsSync(dir).type))
  } catch {
    return false
  }
}

/** Boot ids as the kernel writes them (a UUID): anything else names no record. */
const bootIdPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

/** A record's name's end: a hash of the host name (any bytes), so a boot under two names has two records. */
const hostSuffix = (hostname: string) => `.${createHash("sha256").update(hostname).digest("hex").slice(0, 16)}`

/** A record's name: the boot id, then {@link hostSuffix}. */
const recordName = (bootId: string, hostname: string) => `${bootId}${hostSuffix(hostname)}`

/**
 * The records kept per host name (see the module's comment): a machine rebooted daily reaches it in
 * four months, and a lock a crash left that long ago is waited on by nobody any more. One small file
 * each, read by name, never listed except here.
 */
export const keptPerHost = 128

/**
 * Removes `hostname`'s records in `dir` but the newest {@link keptPerHost} (by when each was made, its
 * modification time), never `kept` (the record just made, whatever the clock says). Only names of
 * records (a boot id and this host's hash) are removed; anything else in the folder is left alone.
 */
const prune = (dir: string, hostname: string, kept: string): void => {
  const suffix = hostSuffix(hostname)
  const others: Array<{ readonly name: string; readonly made: number }> = []
  for (const name of readdirSync(dir)) {
    if (name === kept || !name.endsWith(suffix) || !bootIdPattern.test(name.slice(0, -suffix.length))) continue
    try {
      others.push({ name, made: lstatSync(join(dir, name)).mtimeMs })
    } catch {
      // gone meanwhile (another process pruning)
    }
  }
  others.sort((a, b) => b.made - a.made)
  for (const { name } of others.slice(keptPerHost - 1)) rmSync(join(dir, name), { force: true })
}

/** Whether `dir` is a folder whose records may count: this user's, real, written by no one else, on a local file system. */
const trustedFolder = (dir: string): boolean => {
  try {
    const stat = lstatSync(dir)
    const uid = process.getuid?.()
    return stat.isDirectory() && (uid === undefined || stat.uid === uid) && (stat.mode & 0o022) === 0 && onLocalFileSystem(dir)
  } catch {
    return false
  }
}

/** What a record holds: its own inode number (a copy of it has another). */
const recordText = (ino: number) => `${ino}\n`

/**
 * Whether `dir` holds this machine's record of boot `bootId` under host name `hostname` (see the
 * module's comment for what counts). Only reads, never through a link or blocking on a pipe.
 */
export const recordedIn = (dir: string, bootId: string, hostname: string): boolean => {
  if (!bootIdPattern.test(bootId) || !trustedFolder(dir)) return false
  try {
    return PlainFiles.withRegular(join(dir, recordName(bootId, hostname)), constants.O_RDONLY, (fd) => {
      const stat = fstatSync(fd)
      const uid = process.getuid?.()
      if (uid !== undefined && stat.uid !== uid) return false
      const buffer = Buffer.alloc(64)
      const read = readSync(fd, buffer, 0, buffer.length, 0)
      return buffer.toString("utf8", 0, read) === recordText(stat.ino)
    })
  } catch {
    return false
  }
}

/**
 * Records in `dir` that this machine runs boot `bootId` under host name `hostname`, unless it is
 * already: made whole under a temporary name, flushed (the record must outlive a power loss that a
 * lock record survives), then linked under its name, and the folder flushed; then the host name's
 * records past the newest {@link keptPerHost} are removed (see `prune`). Best effort: a home
 * that cannot be written records nothing, and a lock of this boot is then never judged after a
 * reboot, as before. Throws nothing.
 */
export const recordIn = (dir: string, bootId: string, hostname: string): void => {
  if (!bootIdPattern.test(bootId)) return
  const name = join(dir, recordName(bootId, hostname))
  try {
    if (recordedIn(dir, bootId, hostname)) return
    Directories.makeSync(dir, 0o700)
    if (!trustedFolder(dir)) return
    const temporary = PlainFiles.temporaryBeside(name)
    try {
      const fd = openSync(temporary, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600)
      try {
        writeSync(fd, recordText(fstatSync(fd).ino))
        fsyncSync(fd)
      } finally {
        closeSync(fd)
      }
      // Whatever has the name already (another process's record, a leftover) is left alone: `recordedIn` judges it.
      linkSync(temporary, name)
    } finally {
      rmSync(temporary, { force: true })
    }
    const folderFd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY)
    try {
      fsyncSync(folderFd)
    } finally {
      closeSync(folderFd)
    }
    // Once a boot (the record made just now): the host name's older records beyond the bound go.
    prune(dir, hostname, recordName(bootId, hostname))
  } catch {
    // nothing recorded
  }
}

const known = new Map<string, boolean>()

/**
 * Whether this user's folder (see {@link folder}) holds this machine's record of boot `bootId` under
 * `hostname`. Remembered for the process: a boot that is not this one can be recorded by no process
 * of this machine any more.
 */
export const recorded = (bootId: string, hostname: string): boolean => {
  const dir = folder()
  if (dir === undefined) return false
  const key = `${dir}\n${bootId}\n${hostname}`
  const cached = known.get(key)
  if (cached !== undefined) return cached
  const answer = recordedIn(dir, bootId, hostname)
  known.set(key, answer)
  return answer
}

let done: string | undefined

/** Records this process's boot under its host name in this user's folder, once per process and folder (see {@link recordIn}). */
export const recordOwn = (bootId: string | undefined, hostname: string): void => {
  const dir = folder()
  if (bootId === undefined || dir === undefined) return
  const key = `${dir}\n${bootId}\n${hostname}`
  if (done === key) return
  recordIn(dir, bootId, hostname)
  done = key
}
