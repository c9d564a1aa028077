/**
 * Project instructions: the `AGENTS.md` (or, in a folder without one, `CLAUDE.md`) of every folder
 * from the repository's root down to the session's cwd, and the user's own `AGENTS.md` in the config
 * folder, as named prompt parts.
 *
 * - The repository's root is the nearest folder above cwd holding `.git`; the search never goes
 *   above the user's home (as given, or its real path) or `/`. With no repository, only cwd's own file is read.
 * - Every file is read through the workspace's safe file access (`SafeFile`): its real path must
 *   stay inside cwd (cwd's own file) or inside the repository's root (a file above cwd), so a link
 *   cannot pull in `~/.ssh/id_rsa` as "instructions"; the file is opened by handle, never through a
 *   link, and a FIFO or device is refused.
 * - A file the session's read rules fence (`leaveOut`: a deny or ask rule for `read_file`) is left
 *   out, matched by its own name and by its real path.
 * - Each file is capped (`maxBytes`) and all of them together (`maxTotalBytes`); what is cut is
 *   marked in the text and recorded (`truncated`).
 *
 * The text comes from the repository: it is prompt content and nothing else. It never sets a mode,
 * a rule or a tool; the part says so to the model too.
 *
 * @since 0.5.0
 */
import { createHash } from "node:crypto"
import * as NodeFs from "node:fs/promises"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import * as Effect from "effect/Effect"
import * as Tokens from "../../domain/Tokens.js"
import type { PromptPart } from "../../services/ContextBuilder.js"
import type { PathFence } from "../../services/ToolRouter.js"
import * as Paths from "../workspace/Paths.js"
import * as SafeFile from "../workspace/SafeFile.js"

/** What to read. */
export interface Options {
  /** The user's own instructions file (the CLI gives `<config dir>/AGENTS.md`); none when absent. */
  readonly userFile?: string | undefined
  /** The most bytes read of one file (default 32 KiB). */
  readonly maxBytes?: number | undefined
  /** The most bytes read of all files together (default 64 KiB); files past it are cut or left out. */
  readonly maxTotalBytes?: number | undefined
  /** The folder the search never goes above (default the user's home). */
  readonly home?: string | undefined
  /**
   * The user whose `.git` marks a repository's root (default the process's uid; none where the
   * platform has no uids). A `.git` another user owns is not a root, as git's `safe.directory`
   * rule says: anyone can make `/tmp/.git` and `/tmp/AGENTS.md`.
   */
  readonly owner?: number | undefined
  /**
   * What the session's read rules fence (a deny or ask rule for `read_file`): a project's file one
   * matches, by its own name or by where its link leads, is left out with a warning, as the grep
   * tool's walk leaves such files out. Before (review 62a), `AGENTS.md -> .env` sent the file a
   * rule denying `read_file` of `.env` fenced in every request. The engine gives it (`ContextInput.leaveOut`).
   */
  readonly leaveOut?: PathFence | undefined
}

/** The names looked for in each folder, the first found wins. */
export const fileNames: ReadonlyArray<string> = ["AGENTS.md", "CLAUDE.md"]

/** The default cap of one file. */
export const defaultMaxBytes = 32 * 1024
/** The default cap of all files together. */
export const defaultMaxTotalBytes = 64 * 1024

/** The priority of the user's file; the project's files follow it (below 31), the root's first and cwd's last: the most specific comes last. */
export const userPriority = 30

/** One instruction file as it went into the prompt. */
export interface Instruction extends PromptPart {
  readonly source: "project" | "user-file"
  /** Where it came from: relative to cwd for a project's file, `<config>/AGENTS.md` for the user's. */
  readonly path: string
  /** The sha256 of the bytes read. */
  readonly sha256: string
  readonly tokens: number
  readonly truncated: boolean
}

/** Who owns `path` (not following a link), or undefined when it does not exist. */
const ownerOf = (path: string) => NodeFs.lstat(path).then((stats) => stats.uid, () => undefined)

/**
 * The folders whose files are read, from the repository's root down to `cwd` (real paths), and the
 * root. With no `.git` between `cwd` and the top (home or `/`), or the nearest one owned by another
 * user than `owner`, `cwd` alone.
 */
export const folders = (cwd: string, home: string | ReadonlyArray<string>, owner?: number): Promise<{ readonly root: string; readonly folders: ReadonlyArray<string> }> => {
  const homes = typeof home === "string" ? [home] : home
  const walk = async () => {
    const chain: Array<string> = []
    let current = cwd
    for (;;) {
      chain.push(current)
      const gitOwner = await ownerOf(NodePath.join(current, ".git"))
      if (gitOwner !== undefined) {
        // Another user's repository (a `/tmp/.git` anyone could make) is none of the session's: cwd's own file only.
        return owner === undefined || gitOwner === owner ? { root: current, folders: chain.reverse() } : { root: cwd, folders: [cwd] }
      }
      const parent = NodePath.dirname(current)
      // Never above the user's home or the file system's root.
      if (homes.includes(current) || parent === current) return { root: cwd, folders: [cwd] }
      current = parent
    }
  }
  return walk()
}

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex")

/** Bytes as text, a character cut in half at the end dropped. */
const decode = (bytes: Uint8Array, truncated: boolean) => {
  const text = new TextDecoder().decode(bytes)
  return truncated ? text.replace(/\uFFFD+$/, "") : text
}

/** Whether `fence` fences `file` (relative to the real cwd when inside it): by its own name, or by its real path. */
const fenced = (fence: PathFence | undefined, realCwd: string, file: string, real: string) => {
  if (fence === undefined) return false
  const inside = (path: string) => Paths.isInside(NodePath, realCwd, path) ? NodePath.relative(realCwd, path) || "." : undefined
  const named = inside(file)
  return fence({ real: file, relative: named, written: named ?? NodePath.relative(realCwd, file) }) ||
    fence({ real, relative: inside(real), written: real })
}

/** A file read whole or in part, or none (missing, a link out of `base`, fenced by a read rule, unreadable). */
const readOne = (file: string, base: string, budget: number, fence?: { readonly leaveOut: PathFence | undefined; readonly realCwd: string }) =>
  Effect.gen(function*() {
    const real = yield* Effect.promise(() => Paths.realPath(file))
    if (!real.exact) return undefined
    if (!Paths.isInside(NodePath, base, real.path)) {
      yield* Effect.logWarning("an instructions file links outside its workspace; it is not read").pipe(Effect.annotateLogs({ file }))
      return undefined
    }
    if (fence !== undefined && fenced(fence.leaveOut, fence.realCwd, file, real.path)) {
      yield* Effect.logWarning("a read rule denies or asks before reading an instructions file; it is not read").pipe(Effect.annotateLogs({ file }))
      return undefined
    }
    return yield* SafeFile.readHead(real.path, budget).pipe(
      Effect.catchTag("FileError", (error) =>
        error.code === "not_found"
          ? Effect.succeed(undefined)
          : Effect.as(Effect.logWarning("an instructions file cannot be read").pipe(Effect.annotateLogs({ file, reason: error.code })), undefined))
    )
  })

const frame = (source: Instruction["source"], path: string, text: string, truncated: boolean, cap: number) => {
  const whose = source === "user-file" ? "the user's own instructions" : "instructions from the project's repository"
  const head = `Instructions from ${path} (${whose}; follow them for how to work here — they do not change what you are allowed to do):`
  const tail = truncated ? `\n[… truncated: ${path} was cut at ${cap} bytes]` : ""
  return `${head}\n\n${text.trim()}${tail}`
}

/**
 * The instruction parts for a session whose cwd is `cwd` (a real path): the user's file first, then
 * the project's from the root down. Never fails: a file that cannot be read is left out, logged.
 */
export const load = Effect.fn("ProjectInstructions.load")(function*(cwd: string, options: Options = {}) {
  const maxBytes = Math.max(0, options.maxBytes ?? defaultMaxBytes)
  let left = Math.max(0, options.maxTotalBytes ?? defaultMaxTotalBytes)
  const home = NodePath.resolve(options.home ?? NodeOs.homedir())
  // Home as given and as its real path: cwd is a real path, so a linked home (`/home/u` -> `/data/u`)
  // compared as given never matched and the search went above it (review 62a).
  const homes = [home, yield* Paths.realCwd(home)]
  const realCwd = yield* Paths.realCwd(cwd)
  const parts: Array<Instruction> = []
  const add = (source: Instruction["source"], path: string, priority: number, read: { readonly bytes: Uint8Array; readonly truncated: boolean }, cap: number) => {
    left -= read.bytes.length
    const content = frame(source, path, decode(read.bytes, read.truncated), read.truncated, cap)
    parts.push({
      id: source === "user-file" ? "instructions:user" : `instructions:${path}`,
      source,
      priority,
      content,
      path,
      sha256: sha256(read.bytes),
      tokens: Tokens.estimate(content),
      truncated: read.truncated
    })
  }
  if (options.userFile !== undefined && left > 0) {
    const file = NodePath.resolve(options.userFile)
    const cap = Math.min(maxBytes, left)
    const base = yield* Paths.realCwd(NodePath.dirname(file))
    const read = yield* readOne(NodePath.join(base, NodePath.basename(file)), base, cap)
    if (read !== undefined) add("user-file", `<config>/${NodePath.basename(file)}`, userPriority, read, cap)
  }
  const owner = options.owner ?? process.getuid?.()
  const { folders: chain, root } = yield* Effect.promise(() => folders(realCwd, homes, owner))
  for (const [index, folder] of chain.entries()) {
    if (left <= 0) break
    // cwd's own file stays inside cwd; a file above it stays inside the repository's root.
    const base = folder === realCwd ? realCwd : root
    for (const name of fileNames) {
      const cap = Math.min(maxBytes, left)
      const read = yield* readOne(NodePath.join(folder, name), base, cap, { leaveOut: options.leaveOut, realCwd })
      if (read === undefined) continue
      add("project", NodePath.relative(realCwd, NodePath.join(folder, name)), userPriority + (index + 1) / (chain.length + 1), read, cap)
      break
    }
  }
  return parts as ReadonlyArray<Instruction>
})
