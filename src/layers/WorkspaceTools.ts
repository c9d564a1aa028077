/**
 * The workspace tools: `read_file`, `write_file`, `edit_file`, `list_dir`, `grep` and `shell`, as a
 * `ToolRouter`. Paths resolve against the session's cwd with every symlink followed (`Paths`), and
 * a file tool touches only the resolved path, through a handle opened without following links and
 * checked against it (`SafeFile`): regular files only, reads capped while reading, a time limit
 * per call. `grep` walks a bounded tree that never follows a link out of what was approved (`Walk`).
 * Results are bounded with a visible marker; writes to one file are serialized;
 * `shell` runs one program without a shell interpreter (unless a rule allowed shell syntax), with a
 * timeout, in its own process group that is killed on cancel.
 *
 * @since 0.1.0
 */
import { isUtf8 } from "node:buffer"
import * as NodeFs from "node:fs/promises"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import * as FileSystem from "@effect/platform/FileSystem"
import * as Path from "@effect/platform/Path"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as JSONSchema from "effect/JSONSchema"
import * as Layer from "effect/Layer"
import * as ParseResult from "effect/ParseResult"
import * as Runtime from "effect/Runtime"
import * as Schema from "effect/Schema"
import type { Risk } from "../domain/AgentEvent.js"
import * as FileNames from "../domain/FileNames.js"
import * as Image from "../domain/Image.js"
import type { JsonObject } from "../domain/Json.js"
import * as MonotonicTime from "../domain/MonotonicTime.js"
import {
  type PathAccess,
  type PathFence,
  type PreparedCall,
  unknownTool,
  type ToolCallInput,
  type ToolContext,
  type ToolDefinition,
  ToolFailure,
  type ToolOutput,
  ToolRouter
} from "../services/ToolRouter.js"
import * as KeyedLock from "./KeyedLock.js"
import * as TrustStore from "./TrustStore.js"
import * as ApprovedWrites from "./workspace/ApprovedWrites.js"
import * as CommandLine from "./workspace/CommandLine.js"
import * as CommandPaths from "./workspace/CommandPaths.js"
import * as GitPrograms from "./workspace/GitPrograms.js"
import * as PythonShadows from "./workspace/PythonShadows.js"
import * as Matcher from "./workspace/Matcher.js"
import * as Mounts from "./workspace/Mounts.js"
import * as PackageHooks from "./workspace/PackageHooks.js"
import * as Paths from "./workspace/Paths.js"
import * as RunsLater from "./workspace/RunsLater.js"
import * as SafeFile from "./workspace/SafeFile.js"
import * as TimeLimit from "./workspace/TimeLimit.js"
import * as Walk from "./workspace/Walk.js"
import * as Shell from "./workspace/Shell.js"
import * as CommandRisk from "./workspace/CommandRisk.js"
import * as Environment from "./workspace/Environment.js"
import * as Sandbox from "./workspace/Sandbox.js"
import * as Plural from "../domain/Plural.js"

/** Options of the workspace tools. */
export interface Options {
  /** Longest result the model sees, in bytes (default 32 KiB); longer results end with a marker. */
  readonly maxResultBytes?: number
  /** Largest file `read_file` and `edit_file` open (default 2 MiB). */
  readonly maxFileBytes?: number
  /** `shell`'s default timeout (default 60 s); a call may ask for less, or more up to `maxCommandTimeout`. */
  readonly commandTimeout?: Duration.DurationInput
  /** The longest timeout a call may ask for (default 10 minutes). */
  readonly maxCommandTimeout?: Duration.DurationInput
  /** Environment variables never passed to commands (besides the provider API keys, always removed). */
  readonly hiddenEnv?: ReadonlyArray<string>
  /**
   * The environment commands run with: only `Environment.defaultAllow` (PATH, HOME, LANG, LC_*, TERM, …)
   * from the agent's, plus the names in `allow` (a trailing `*` is a prefix) and the values in `set`.
   */
  readonly env?: Environment.Options
  /**
   * The environment read again each time a `shell` call is inspected and each time its command
   * starts, in place of `env`: for settings that change while the tools live (`serve` follows
   * `trust --revoke` and edits), so a call approved after a change runs with what holds then.
   */
  readonly envNow?: Effect.Effect<Environment.Options>
  /**
   * How `shell` isolates commands (see `Sandbox`): `auto` (default) in the workspace sandbox where
   * the OS allows it (Linux with user namespaces: only cwd and a private /tmp writable, credentials
   * hidden, no network), else as well as it can with a warning; `required` fails calls without the
   * workspace sandbox; `off` never isolates.
   */
  readonly sandbox?: Sandbox.Mode
  /** Whether commands in the sandbox may use the network (default false: loopback only). Only the user should turn it on. */
  readonly network?: boolean
  /**
   * More paths commands never see (the agent's data folder, say), besides the credentials under the
   * user's home and effect-agent's config folder (`Sandbox.hiddenInHome`).
   */
  readonly hiddenPaths?: ReadonlyArray<string>
  /** Most entries `grep` visits and `list_dir` lists (default 20 000); the result says when the bound cut it. */
  readonly maxWalkEntries?: number
  /** Deepest folder level `grep` enters below its start (default 32). */
  readonly maxWalkDepth?: number
  /** How long `grep` walks before it stops and reports what it found (default 10 s). */
  readonly walkTimeBudget?: Duration.DurationInput
  /**
   * The time limit of every file tool (default 30 s): past it the call fails with `timeout`. A small
   * local file read with synchronous calls (`SafeFile.readSmallNow`) is not waited for, so not timed.
   */
  readonly fileTimeout?: Duration.DurationInput
}

/** The agent's own keys: never passed to a command (nor to an MCP server). */
export const alwaysHiddenEnv: ReadonlyArray<string> = ["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "EFFECT_AGENT_TOKEN"]

// Plain JSON Schema for models: an integer, not a reference to a shared definition.
const PositiveInt = Schema.Int.pipe(Schema.positive()).annotations({ jsonSchema: { type: "integer", minimum: 1 } })

const ReadFile = Schema.Struct({
  path: Schema.String.annotations({ description: "File path, relative to the working directory" }),
  offset: Schema.optional(PositiveInt).annotations({ description: "First line to read (1-based)" }),
  limit: Schema.optional(PositiveInt).annotations({ description: "How many lines to read" })
})
const WriteFile = Schema.Struct({
  path: Schema.String.annotations({ description: "File path, relative to the working directory" }),
  content: Schema.String.annotations({ description: "The whole new content of the file" })
})
const EditFile = Schema.Struct({
  path: Schema.String.annotations({ description: "File path, relative to the working directory" }),
  oldString: Schema.String.pipe(Schema.minLength(1)).annotations({ description: "Exact text to replace" }),
  newString: Schema.String.annotations({ description: "The replacement" }),
  replaceAll: Schema.optional(Schema.Boolean).annotations({ description: "Replace every occurrence (default: oldString must occur once)" })
})
const ListDir = Schema.Struct({
  path: Schema.optional(Schema.String).annotations({ description: "Directory, relative to the working directory (default: it)" })
})
const Grep = Schema.Struct({
  pattern: Schema.String.pipe(Schema.minLength(1)).annotations({ description: "A JavaScript regular expression" }),
  path: Schema.optional(Schema.String).annotations({ description: "File or directory to search (default: the working directory)" }),
  ignoreCase: Schema.optional(Schema.Boolean)
})
/**
 * The longest command line (characters). `sh -c` takes its line as one argument, which the kernel
 * caps at 128 KiB (`MAX_ARG_STRLEN`); a longer line could not run, and parsing it and matching every
 * rule against it would hold the event loop for seconds.
 */
export const maxCommandLength = 131_072

const ShellArgs = Schema.Struct({
  command: Schema.String.pipe(Schema.minLength(1)).annotations({
    description: "One program and its arguments, quoted like a shell would. No pipes, redirection, chaining, globs or variables."
  }),
  timeoutMs: Schema.optional(PositiveInt).annotations({ description: "Stop the command after this long" })
})

interface Tool<A, I> {
  readonly description: string
  readonly schema: Schema.Schema<A, I>
  readonly sequential?: boolean
  /** What the call would touch, and its risk. */
  readonly inspect: (input: A, cwd: string) => Effect.Effect<{
    readonly risk: Risk
    readonly paths: ReadonlyArray<PathAccess>
    readonly command?: ReturnType<typeof CommandLine.parse>
    readonly repositoryRuns?: ReadonlyArray<string>
    readonly shadowedModules?: ReadonlyArray<string>
    readonly shadowKinds?: ReadonlyArray<PythonShadows.ShadowKind>
    readonly scope?: string
  }, ToolFailure>
  readonly run: (input: A, call: PreparedCall, context: ToolContext) => Effect.Effect<ToolOutput, ToolFailure>
}

/** A word that may set `HOME` for what runs after it (`HOME=/x`, `env HOME=/x`, `export HOME`, `read HOME`): over-reading only asks. */
const setsHome = /(^|[^A-Za-z0-9_])HOME([^A-Za-z0-9_]|$)/

const fail = (errorCode: string, message: string) => Effect.fail(new ToolFailure({ errorCode, message }))

/**
 * Why a model's `path` cannot name a file, if it cannot (`FileNames`): refused as the call's
 * arguments, before a question about it reaches the user.
 */
const pathProblem = (path: unknown): string | undefined => typeof path !== "string" ? undefined : FileNames.unnamable(path)

/** The arguments whose text a file tool writes into a file. */
const writtenText = ["content", "newString"] as const

/** Cuts a result to `max` bytes at a character boundary, with a marker saying how much was left out. */
export const bound = (text: string, max: number): string => {
  const bytes = Buffer.byteLength(text, "utf8")
  if (bytes <= max) return text
  let cut = Buffer.from(text, "utf8").subarray(0, max).toString("utf8")
  if (cut.endsWith("\uFFFD")) cut = cut.slice(0, -1)
  return `${cut}\n[… truncated: ${bytes - Buffer.byteLength(cut, "utf8")} more bytes]`
}

const isBinary = (bytes: Uint8Array) => bytes.subarray(0, 8000).includes(0)

/** One UTF-8 decoder for every read: `decode` without `stream` keeps nothing between calls (one was made per call). */
const utf8 = new TextDecoder()

/**
 * A file's text exactly as its bytes hold it, for a tool that writes it back: its byte-order mark kept,
 * and `undefined` when a byte is not UTF-8. The lossy decoder dropped the mark and made each such byte
 * U+FFFD, so an edit anywhere in a Latin-1 file wrote EF BF BD over every `é` of it.
 */
const exactUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true })
const exactText = (bytes: Uint8Array): string | undefined => {
  try {
    return exactUtf8.decode(bytes)
  } catch {
    return undefined
  }
}

/** The text an edit leaves: `oldString` replaced once (or everywhere with `replaceAll`); `undefined` when it is not there once (or at all). */
const edited = (text: string, edit: typeof EditFile.Type): string | undefined => {
  const count = text.split(edit.oldString).length - 1
  if (count === 0 || (count > 1 && edit.replaceAll !== true)) return undefined
  return edit.replaceAll === true ? text.split(edit.oldString).join(edit.newString) : text.replace(edit.oldString, () => edit.newString)
}

/** Builds the workspace tools. */
export const make = (options: Options = {}) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    const maxResult = options.maxResultBytes ?? 32 * 1024
    const maxFile = options.maxFileBytes ?? 2 * 1024 * 1024
    const defaultTimeout = Duration.decode(options.commandTimeout ?? "60 seconds")
    const maxTimeout = Duration.decode(options.maxCommandTimeout ?? "10 minutes")
    const hiddenEnv = [...alwaysHiddenEnv, ...(options.hiddenEnv ?? [])]
    const commandEnv: Effect.Effect<Environment.Options | undefined> = options.envNow ?? Effect.sync(() => options.env)
    // Detected on the first command, once for these tools.
    const isolation = yield* Effect.cached(Sandbox.detect)
    let warnedUnsandboxed = false
    /** What commands never see: credentials under the user's home, effect-agent's own config folder (wherever it is set; read when a command starts), and what the options add. */
    const hiddenPaths = Effect.gen(function*() {
      const home = process.env.HOME ?? NodeOs.homedir()
      return [
        ...Sandbox.hiddenInHome.map((p) => path.join(home, p)),
        yield* TrustStore.configDir,
        ...(options.hiddenPaths ?? []).map((p) => path.resolve(p))
      ]
    })
    const maxWalkEntries = options.maxWalkEntries ?? 20_000
    const maxWalkDepth = options.maxWalkDepth ?? 32
    const walkTimeBudget = Duration.decode(options.walkTimeBudget ?? "10 seconds")
    const fileTimeout = Duration.decode(options.fileTimeout ?? "30 seconds")

    // The mount table, read now (in the background) so that a session's first read can be synchronous.
    void Mounts.refresh()

    // Writes to one file are serialized: an edit reads, changes and writes under its file's lock.
    const { withLock: withFileLock } = yield* KeyedLock.make<string>()
    // What the file tools write while a command runs, which its put-back leaves alone; it reads and
    // writes under the same lock (`ApprovedWrites`).
    const lockRuntime = yield* Effect.runtime<never>()
    const approvedWrites = ApprovedWrites.make((file, use) => Runtime.runPromise(lockRuntime)(withFileLock(file)(Effect.promise(use))))

    const resolve = (cwd: string, requested: string, access: "read" | "write") => Paths.resolve(fs, path, cwd, requested, access)
    // Relative to the real cwd: resolved paths are real, so a cwd reached through a link still shows them short.
    const shown = (context: { readonly cwd: string }, p: PathAccess) => Effect.map(Paths.realCwd(context.cwd), (cwd) => FileNames.shown(Paths.display(path, cwd, p.resolved)))

    /** The path as resolved again now, when it still is what was approved; `path_changed` otherwise. */
    const unchanged = (prepared: PathAccess, now: PathAccess): Effect.Effect<string, ToolFailure> =>
      now.resolved !== prepared.resolved || now.insideCwd !== prepared.insideCwd
        ? fail("path_changed", `${prepared.requested} changed while the call was being approved; try again`)
        : Effect.succeed(now.resolved)

    /** The path a tool may touch now: resolved again, so a link swapped since the permission check is caught. */
    const target = (call: PreparedCall, context: ToolContext, index = 0) => {
      const prepared = call.paths[index]!
      return Effect.flatMap(resolve(context.cwd, prepared.requested, prepared.access), (now) => unchanged(prepared, now))
    }

    /**
     * The approved file's bytes, with the path resolved again as `target` does. A read has no effect,
     * and `SafeFile` opens only the approved real path: so the file is read while the path is checked
     * (at once when both are synchronous, else side by side), and the bytes are given only when the check holds.
     */
    const readChecked = (call: PreparedCall, context: ToolContext): Effect.Effect<Uint8Array, ToolFailure | SafeFile.FileError> =>
      Effect.suspend(() => {
        const prepared = call.paths[0]!
        // A small file on a local file system: checked and read with synchronous calls, nothing to
        // wait for nor to time (`SafeFile.readSmallNow`); anything unusual is answered the asynchronous way.
        // The check's walk holds the file's folder open for the read: one walk from `/` a read, not two.
        const { access: now, held } = Paths.resolveSyncHolding(path, context.cwd, prepared.requested, prepared.access)
        let small: Uint8Array | undefined
        try {
          small = now === undefined
            ? undefined
            : held !== undefined && now.resolved === prepared.resolved
            ? SafeFile.readSmallIn(held, prepared.resolved, maxFile)
            : SafeFile.readSmallNow(prepared.resolved, maxFile)
        } finally {
          if (held !== undefined) Paths.closeQuietlyNow(held.fd)
        }
        return now !== undefined && small !== undefined ? Effect.as(unchanged(prepared, now), small) : readAsync(prepared, context)
      })

    const readAsync = (prepared: PathAccess, context: ToolContext): Effect.Effect<Uint8Array, ToolFailure | SafeFile.FileError> =>
      Effect.flatMap(
        // Its only wait, bounded as `timed` bounds a tool, with one fiber instead of two (`TimeLimit`).
        TimeLimit.promiseWithin(fileTimeout, () => timedOut("read_file"), SafeFile.toFileError, (signal) =>
          Promise.allSettled([Paths.resolveNow(path, context.cwd, prepared.requested, prepared.access), SafeFile.readFileNow(prepared.resolved, maxFile, signal)])),
        ([now, read]): Effect.Effect<Uint8Array, ToolFailure | SafeFile.FileError> => {
          if (now.status === "rejected") return Effect.die(now.reason)
          return Effect.zipRight(unchanged(prepared, now.value), read.status === "fulfilled" ? Effect.succeed(read.value) : Effect.fail(SafeFile.toFileError(read.reason)))
        }
      )

    /** A file error in the model's terms, naming the path as the call gave it. */
    const fileFailure = (requested: string) => (error: SafeFile.FileError): Effect.Effect<never, ToolFailure> => {
      switch (error.code) {
        case "not_found":
          return fail("not_found", `${requested} does not exist`)
        case "is_directory":
          return fail("is_directory", `${requested} is a directory; use list_dir`)
        case "not_a_directory":
          return fail("not_a_directory", `${requested} is not a directory`)
        case "not_a_regular_file":
          return fail("not_a_regular_file", `${requested} is not a regular file (a FIFO, device or socket); only regular files are read or written`)
        case "file_too_large":
          return fail("file_too_large", `${requested} is over the ${maxFile}-byte limit`)
        case "path_changed":
          return fail("path_changed", `${requested} changed while the call was being approved (a folder or file became a link, or the file got another name); try again`)
        case "permission_denied":
          return fail("io_error", `${requested}: permission denied`)
        case "secret_file":
          return fail("forbidden_path", `${requested} is a process's environment, which holds secrets: no tool reads it`)
        case "io_error":
          return fail("io_error", `${requested}: could not be accessed${error.detail === undefined ? "" : ` (${error.detail})`}`)
      }
    }

    const timedOut = (tool: string) => new ToolFailure({ errorCode: "timeout", message: `${tool} did not finish within ${Duration.format(fileTimeout)} and was stopped` })

    /** Every file tool ends within `fileTimeout`, so a stuck file system never holds a turn. */
    const timed = (tool: string) => <A>(effect: Effect.Effect<A, ToolFailure>): Effect.Effect<A, ToolFailure> =>
      Effect.timeoutFail(effect, { duration: fileTimeout, onTimeout: () => timedOut(tool) })

    /**
     * A PNG, JPEG, GIF or WebP (by its magic bytes, whatever its name): an image part for a model
     * that takes images, else a line of text saying what the file is.
     */
    const imageOf = (bytes: Uint8Array, requested: string, context: ToolContext): ToolOutput | undefined => {
      const mediaType = Image.sniff(bytes)
      if (mediaType === undefined) return undefined
      const what = `${requested}: ${mediaType} image, ${bytes.byteLength} bytes`
      return context.acceptsImages === true
        ? { result: `[${what}]`, images: [{ data: bytes, mediaType }] }
        : { result: `[${what}; this model does not take images, so its content cannot be shown]` }
    }

    const readFile: Tool<typeof ReadFile.Type, typeof ReadFile.Encoded> = {
      // The description stays as it was (it is in every request, and in the goldens' token counts): an image read says what it is in its result.
      description: "Read a text file. Long files: read parts with offset and limit (lines).",
      schema: ReadFile,
      inspect: (input, cwd) => Effect.map(resolve(cwd, input.path, "read"), (p) => ({ risk: "read", paths: [p] })),
      run: (input, call, context) =>
        Effect.gen(function*() {
          const bytes = yield* readChecked(call, context).pipe(Effect.catchTag("FileError", fileFailure(input.path)))
          const image = imageOf(bytes, input.path, context)
          if (image !== undefined) return image
          if (isBinary(bytes)) return yield* fail("binary_file", `${input.path} is a binary file`)
          const text = utf8.decode(bytes)
          // Shown all the same, saying so: the U+FFFD it shows are not the file's, and an edit would refuse it.
          const notUtf8 = !isUtf8(bytes)
            ? `\n[${input.path} is not UTF-8 text: its bytes that are not are shown as U+FFFD (\uFFFD), and edit_file cannot change it]`
            : ""
          if (input.offset === undefined && input.limit === undefined) return { result: bound(text, maxResult) + notUtf8 }
          const lines = text.split("\n")
          const start = (input.offset ?? 1) - 1
          const slice = lines.slice(start, input.limit === undefined ? undefined : start + input.limit)
          return { result: bound(slice.join("\n"), maxResult) + notUtf8 }
        })
      // Not `timed`: its only wait, the file system's, is bounded in `readChecked`.
    }

    const writeFile: Tool<typeof WriteFile.Type, typeof WriteFile.Encoded> = {
      description: "Create or overwrite a text file with the given content. Creates missing folders.",
      schema: WriteFile,
      inspect: (input, cwd) =>
        Effect.flatMap(resolve(cwd, input.path, "write"), (p) => Effect.map(markPackageHooks(p, () => input.content), (marked) => ({ risk: "write", paths: [marked] }))),
      run: (input, call, context) =>
        Effect.gen(function*() {
          const file = yield* target(call, context)
          const bytes = new TextEncoder().encode(input.content)
          // Approved as a file inside cwd: it must still have no other name when opened.
          const singleName = call.paths[0]!.insideCwd
          const write = SafeFile.writeFile(file, bytes, { singleName }).pipe(Effect.catchAll(fileFailure(input.path)))
          yield* withFileLock(file)(
            Effect.gen(function*() {
              // A package.json's text before: what its hook keys were, for the check below and a command's put-back.
              const before = PackageHooks.isPackageJson(file) ? yield* packageText(file) : undefined
              const refused = PackageHooks.isPackageJson(file) ? hooksChangedSince(call, before, input.content) : undefined
              if (refused !== undefined) return yield* Effect.fail(refused)
              yield* write
              approvedWrites.wrote({ file, before, after: input.content })
            })
          )
          return { result: `Wrote ${Plural.count(bytes.length, "byte")} to ${yield* shown(context, call.paths[0]!)}` }
        }).pipe(timed("write_file"))
    }

    const editFile: Tool<typeof EditFile.Type, typeof EditFile.Encoded> = {
      description: "Replace exact text in a file. oldString must occur exactly once unless replaceAll is true.",
      schema: EditFile,
      inspect: (input, cwd) =>
        Effect.flatMap(resolve(cwd, input.path, "write"), (p) =>
          Effect.map(markPackageHooks(p, (before) => before === undefined ? undefined : edited(before, input)), (marked) => ({ risk: "write", paths: [marked] }))),
      run: (input, call, context) =>
        Effect.gen(function*() {
          const file = yield* target(call, context)
          let count = 0
          let wrote: ApprovedWrites.Write | undefined
          // Read, change and write through one handle, under the file's lock.
          yield* withFileLock(file)(
            SafeFile.updateFile(file, maxFile, (bytes) => {
              if (isBinary(bytes)) return Either.left(new ToolFailure({ errorCode: "binary_file", message: `${input.path} is a binary file` }))
              const text = exactText(bytes)
              if (text === undefined) {
                return Either.left(
                  new ToolFailure({
                    errorCode: "not_utf8",
                    message: `${input.path} is not UTF-8 text (it holds bytes of another encoding, Latin-1 say): edit_file writes UTF-8, which would change them, so nothing was written`
                  })
                )
              }
              count = text.split(input.oldString).length - 1
              if (count === 0) return Either.left(new ToolFailure({ errorCode: "no_match", message: `oldString was not found in ${input.path}` }))
              if (count > 1 && input.replaceAll !== true) {
                return Either.left(new ToolFailure({ errorCode: "ambiguous_match", message: `oldString occurs ${count} times in ${input.path}; give more context or set replaceAll` }))
              }
              // The result is held to the size the file may be read at, checked before it is built:
              // `replaceAll` of a one-letter oldString in a 2 MiB file with a 200-letter newString made
              // a 400 MB file (900 MB of memory, seconds of the event loop), and a larger one threw.
              const replaced = input.replaceAll === true ? count : 1
              const size = Buffer.byteLength(text) + replaced * (Buffer.byteLength(input.newString) - Buffer.byteLength(input.oldString))
              if (size > maxFile) {
                return Either.left(new ToolFailure({ errorCode: "file_too_large", message: `the edit would make ${input.path} ${size} bytes, over the ${maxFile}-byte limit` }))
              }
              const updated = edited(text, input)!
              const refused = PackageHooks.isPackageJson(file) ? hooksChangedSince(call, text, updated) : undefined
              if (refused !== undefined) return Either.left(refused)
              wrote = { file, before: text, after: updated }
              return Either.right(new TextEncoder().encode(updated))
            }, { singleName: call.paths[0]!.insideCwd }).pipe(
              Effect.catchTag("FileError", fileFailure(input.path)),
              Effect.tap(() => Effect.sync(() => wrote !== undefined && approvedWrites.wrote(wrote)))
            )
          )
          return { result: `Replaced ${input.replaceAll === true ? count : 1} occurrence${count === 1 || input.replaceAll !== true ? "" : "s"} in ${yield* shown(context, call.paths[0]!)}` }
        }).pipe(timed("edit_file"))
    }

    /** A package.json's text as it is now (`undefined`: none, or none readable within the file limit). */
    const packageText = (file: string): Effect.Effect<string | undefined> =>
      SafeFile.readFile(file, maxFile).pipe(Effect.map((bytes) => new TextDecoder().decode(bytes)), Effect.orElseSucceed(() => undefined))

    /**
     * A write of a package.json inside cwd that changes the keys git hook runners read
     * (`PackageHooks`), marked as running later: the policy protects it as it does `.husky/`. `after`
     * is the content the call would leave, given the file's now (`undefined`: the call changes nothing).
     */
    const markPackageHooks = (p: PathAccess, after: (before: string | undefined) => string | undefined): Effect.Effect<PathAccess> =>
      p.access !== "write" || !p.insideCwd || !PackageHooks.isPackageJson(p.resolved)
        ? Effect.succeed(p)
        : Effect.map(packageText(p.resolved), (before) => {
          const next = after(before)
          const keys = next === undefined ? [] : PackageHooks.changedKeys(before, next)
          return keys.length === 0 ? p : { ...p, runsLater: PackageHooks.reason(keys) }
        })

    /**
     * Why a package.json write allowed as leaving its hook runners' keys alone is refused as it runs:
     * the file changed since, and the same call would now change them (`undefined`: it would not).
     */
    const hooksChangedSince = (call: PreparedCall, before: string | undefined, after: string): ToolFailure | undefined => {
      const keys = call.paths[0]!.runsLater === undefined ? PackageHooks.changedKeys(before, after) : []
      return keys.length === 0
        ? undefined
        : new ToolFailure({ errorCode: "path_changed", message: `${call.paths[0]!.requested} changed while the call was being approved: it would now change ${keys.join(", ")}, which git hook runners read; try again` })
    }

    /** Where a walk or listing may look: the workspace, and the folder the call itself was approved for. */
    const mayLookAt = (workspace: string, root: string) => (real: string) => Walk.isInside(workspace, real) || Walk.isInside(root, real)

    const listDir: Tool<typeof ListDir.Type, typeof ListDir.Encoded> = {
      description: "List a directory: one entry per line, folders ending in /.",
      schema: ListDir,
      inspect: (input, cwd) => Effect.map(resolve(cwd, input.path ?? ".", "read"), (p) => ({ risk: "read", paths: [p] })),
      run: (input, call, context) =>
        Effect.gen(function*() {
          const dir = yield* target(call, context)
          const requested = input.path ?? "."
          const allowed = mayLookAt(yield* Paths.realCwd(context.cwd), dir)
          const listing = yield* SafeFile.withFolder(dir, async (folder, signal) => {
            const { entries, more } = await SafeFile.entriesOf(folder, maxWalkEntries, signal)
            let outside = 0
            const lines: Array<string> = []
            for (const entry of entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
              // Quoted when it could print as more than one entry (`FileNames.shown`).
              const name = FileNames.shown(entry.name)
              if (entry.isDirectory()) lines.push(`${name}/`)
              else if (!entry.isSymbolicLink()) lines.push(name)
              else {
                // A link is shown as what it leads to only when that is somewhere the call may look.
                const shown = await Walk.linkShown(path.join(dir, entry.name), allowed)
                if (shown === "outside") {
                  outside++
                  lines.push(`${name} -> (outside the working directory)`)
                } else {
                  lines.push(shown === "folder" ? `${name}/` : name)
                }
              }
            }
            return { lines, more, outside }
          }).pipe(Effect.catchAll(fileFailure(requested)))
          const notes = [
            ...(listing.outside > 0 ? [`[${Plural.count(listing.outside, "link leads", "links lead")} outside the working directory: not followed]`] : []),
            ...(listing.more ? [`[… listing stopped after ${maxWalkEntries} entries]`] : [])
          ]
          if (listing.lines.length === 0) return { result: "(empty directory)" }
          return { result: bound([...listing.lines, ...notes].join("\n"), maxResult) }
        }).pipe(timed("list_dir"))
    }

    /** The walk's `leaveOut`: a path as the fence reads it (real, relative to the real cwd, and as a call would write it). */
    const fencedBy = (fence: PathFence, workspace: string, root: string) => (real: string, shown: string) =>
      fence({
        real,
        relative: Walk.isInside(workspace, real) ? Paths.display(path, workspace, real) : undefined,
        written: Paths.display(path, workspace, path.join(root, shown))
      })

    const skippedDirs = new Set([".git", "node_modules", ".effect-agent", "dist", "coverage"])
    const grep: Tool<typeof Grep.Type, typeof Grep.Encoded> = {
      description: "Search files for a regular expression; prints path:line:text for each match. Skips .git, node_modules and binary files.",
      schema: Grep,
      inspect: (input, cwd) =>
        Effect.gen(function*() {
          const regex = Either.try(() => new RegExp(input.pattern, input.ignoreCase === true ? "i" : ""))
          if (Either.isLeft(regex)) return yield* fail("invalid_arguments", `pattern is not a valid regular expression`)
          // It reads the whole tree: a rule for a path below it concerns it (see `PathAccess.walked`), and
          // its walk leaves out what the rules fence (`leavesOut`), so the policy need not ask.
          return { risk: "read" as const, paths: [{ ...(yield* resolve(cwd, input.path ?? ".", "read")), walked: true, leavesOut: true }] }
        }),
      run: (input, call, context) =>
        Effect.gen(function*() {
          const root = yield* target(call, context)
          const workspace = yield* Paths.realCwd(context.cwd)
          // The pattern runs in a worker that the time limit can stop (a pattern can backtrack for ever).
          const matcher = yield* Effect.acquireRelease(
            Effect.sync(() => Matcher.make(input.pattern, input.ignoreCase === true ? "i" : "")),
            (matcher) => Effect.sync(() => matcher.close())
          )
          const matches: Array<string> = []
          let more = 0
          const clock = yield* Effect.clock
          // The budget is a duration inside this process: monotonic time, which a step of the wall clock does not move.
          const summary = yield* Walk.walk({
            root,
            allowed: mayLookAt(workspace, root),
            skipFolder: (name) => skippedDirs.has(name),
            maxEntries: maxWalkEntries,
            maxDepth: maxWalkDepth,
            deadline: MonotonicTime.unsafeMillis(clock) + Duration.toMillis(walkTimeBudget),
            now: () => MonotonicTime.unsafeMillis(clock),
            maxFileBytes: maxFile,
            ...(context.leaveOut === undefined ? {} : { leaveOut: fencedBy(context.leaveOut, workspace, root) }),
            onFile: async (file, bytes) => {
              if (isBinary(bytes)) return true
              const shownPath = FileNames.shownBeforeLine(Paths.display(path, workspace, path.join(root, file)))
              const found = await matcher.match(utf8.decode(bytes), 200 - matches.length)
              for (const [line, text] of found.matches) matches.push(`${shownPath}:${line}:${text}`)
              more += found.more
              return true
            }
          }).pipe(Effect.catchAll(fileFailure(input.path ?? ".")))
          const notes = [
            ...(more > 0 ? [`[… ${more} more matches]`] : []),
            ...(summary.leftOut > 0 ? [`[left out ${Plural.count(summary.leftOut, "file or folder", "files or folders")} that your permission rules fence]`] : []),
            ...(summary.skippedLinks > 0
              ? [`[skipped ${Plural.count(summary.skippedLinks, "link that leads", "links that lead")} outside the working directory]`]
              : []),
            ...(summary.unreadableNames > 0
              ? [`[skipped ${Plural.count(summary.unreadableNames, "folder or link whose name is", "folders or links whose names are")} not UTF-8]`]
              : []),
            ...summary.stopped.map((stop) =>
              stop === "entries"
                ? `[search stopped after ${maxWalkEntries} entries; narrow the path]`
                : stop === "depth"
                ? `[folders deeper than ${maxWalkDepth} levels were not searched]`
                : `[search stopped after ${Duration.toMillis(walkTimeBudget) === 0 ? "0ms" : Duration.format(walkTimeBudget)}; narrow the path]`
            )
          ]
          const found = matches.length === 0 ? "No matches." : matches.join("\n")
          return { result: bound([found, ...notes].join("\n"), maxResult) }
        }).pipe(Effect.scoped, timed("grep"))
    }

    const shell: Tool<typeof ShellArgs.Type, typeof ShellArgs.Encoded> = {
      description:
        "Run one program with arguments in the working directory, without a shell: no pipes, redirection, chaining, globs or variables. Returns its output and exit code.",
      schema: ShellArgs,
      inspect: (input, cwd) =>
        Effect.gen(function*() {
          // Checked here, not in the schema: the schema the model is shown stays as it was.
          if (input.command.length > maxCommandLength) {
            return yield* fail("invalid_arguments", `command is longer than ${maxCommandLength} characters, more than a shell line can take`)
          }
          const command = CommandLine.parse(input.command)
          if (command.unterminated) return yield* fail("invalid_arguments", "command has an unterminated quote")
          if (command.invalid !== undefined) return yield* fail("invalid_arguments", `command cannot be read: ${command.invalid}`)
          if (command.argv.length === 0) return yield* fail("invalid_arguments", "command is empty")
          const shellSyntax = command.hazards.some((h) => CommandLine.syntaxHazards.has(h))
          const classification = CommandRisk.classifyLine(
            CommandLine.segments(command.tokens).map((words) => words.map((w) => w.value)),
            shellSyntax
          )
          const risk = classification.risk
          // Every word that may name a file is resolved (links included), and trees a recursive
          // command walks are searched for links out: a command reaching outside cwd is seen.
          const access = risk === "read" ? "read" as const : "write" as const
          const clock = yield* Effect.clock
          const environment = Environment.build(process.env, { ...yield* commandEnv, hidden: hiddenEnv, cwd })
          // CDPATH passed on (env.allow, env.set): `cd sub` may move to `$CDPATH/sub`, not `./sub`.
          // Its PATH too: `$PATH` in `PATH=$PATH:/opt/x`, and the programs a relative PATH entry may stand in for.
          const named = CommandPaths.named(command.tokens, shellSyntax, 0, { cdSearched: (environment.CDPATH ?? "") !== "", path: environment.PATH ?? "" })
          const paths = yield* CommandPaths.check(named, {
            cwd,
            access,
            resolve: (requested) => resolve(cwd, requested, access),
            // The call waits on this before anyone is asked: a few seconds at most, then it asks.
            caps: { maxEntries: maxWalkEntries, maxDepth: maxWalkDepth, timeBudgetMillis: Math.min(Duration.toMillis(walkTimeBudget), 3000) },
            now: () => MonotonicTime.unsafeMillis(clock),
            // The HOME commands run with is the agent's unless the settings' `env` set or hid it, or the line sets it.
            otherHome: environment.HOME !== process.env.HOME ||
              command.tokens.some((t) => t._tag === "Word" && setsHome.test(t.value)),
            literalTilde: !shellSyntax
          })
          // What the repository's own git config and hooks would make the line's git run (the policy asks then).
          const repositoryRuns = named.gits.length === 0 ? [] : yield* Effect.promise(() => GitPrograms.chosenByRepository(cwd, named.gits, named))
          // What a Python of the line would import from the repository in place of its standard library.
          const { files: shadowedModules, kinds: shadowKinds } = named.pythons.length === 0
            ? { files: [], kinds: [] }
            : yield* Effect.promise(() => PythonShadows.shadowing(cwd, named.pythons, environment.PATH))
          // "Always" covers this program at this risk, or only this exact line (see CommandRisk); with files a Python
          // would import, this exact line while the same files are there.
          const scope = shadowedModules.length > 0 ? PythonShadows.rememberedScope(command.text, shadowedModules) : CommandRisk.scopeOf(command, classification, shellSyntax)
          return { risk, paths, command, repositoryRuns, shadowedModules, shadowKinds, scope }
        }),
      run: (input, call, context) =>
        Effect.gen(function*() {
          const command = call.command!
          const requested = input.timeoutMs === undefined ? defaultTimeout : Duration.millis(input.timeoutMs)
          const timeout = Duration.min(requested, maxTimeout)
          const detected = yield* isolation
          const sandbox = Sandbox.choose(options.sandbox ?? "auto", detected)
          if ("unavailable" in sandbox) return yield* fail("sandbox_unavailable", sandbox.unavailable)
          const weaker = Sandbox.weaker(detected)
          if (!warnedUnsandboxed && (options.sandbox ?? "auto") === "auto" && weaker !== undefined) {
            warnedUnsandboxed = true
            yield* Effect.logWarning(weaker)
          }
          // Read as the command starts: what the settings say now, not when the call was asked about.
          const env = Environment.withSafeGit(Environment.build(process.env, { ...yield* commandEnv, hidden: hiddenEnv, cwd: context.cwd }))
          // A pinned cwd is its real path as checked (`stillWhereItWas`): resolved again here, a link
          // swapped in since would make where it leads the sandbox's workspace.
          const launch = yield* sandbox.launch({
            cwd: context.pinnedCwd === true ? NodePath.resolve(context.cwd) : yield* Paths.realCwd(context.cwd),
            network: options.network === true,
            hidden: yield* hiddenPaths,
            env,
            approved: approvedWrites
          })
          const clock = yield* Effect.clock
          const runtime = yield* Effect.runtime<never>()
          // The once-a-second throttle on monotonic time: on the wall clock, a step back silenced the
          // command's progress until the clock came back to where it was (an hour, for an hour's step).
          let lastProgress = MonotonicTime.unsafeMillis(clock)
          // What the command made that would change what the user's next git command runs is undone
          // once it is gone, interrupted too (`Sandbox.Launch.after`).
          const after = launch.after ?? Effect.succeed([] as ReadonlyArray<string>)
          const kept = launch.kept ?? Effect.succeed([] as ReadonlyArray<string>)
          const result = yield* Effect.onInterrupt(Shell.run({
            argv: command.argv,
            // Shell syntax only reaches a shell when a rule allowed it (the permission engine denies hazards otherwise).
            ...(command.hazards.some((h) => CommandLine.syntaxHazards.has(h)) ? { shellText: command.text } : {}),
            cwd: context.cwd,
            env,
            prefix: launch.prefix,
            prefixEnv: launch.env,
            timeout,
            maxOutputBytes: maxResult,
            onOutput: (text) => {
              // A long command reports its latest output line at most once a second.
              const now = MonotonicTime.unsafeMillis(clock)
              if (now - lastProgress < 1000) return
              lastProgress = now
              const line = text.trim().split("\n").at(-1)
              if (line !== undefined && line !== "") Runtime.runFork(runtime)(context.progress(line.slice(0, 200)))
            }
          }), () => Effect.zip(after, kept))
          const undone = yield* after
          const keptBack = yield* kept
          const made = yield* (launch.made ?? Effect.succeed([] as ReadonlyArray<string>))
          const undoneNote = (undone.length === 0
            ? ""
            : `\n[undid ${undone.join(", ")}, which the command made or changed: it would have sent git to another folder for its config or hooks]`) +
            (keptBack.length === 0
              ? ""
              : `\n[undid ${keptBack.join("; ")}: git hook managers read them at the user's next commit or install, outside the sandbox; write them with the file tools, which ask]`) +
            (made.length === 0
              ? ""
              : `\n[the command made git repositories whose settings or hooks run programs: ${made.join("; ")}. Git run there — and \`git status\` in a repository that has one staged as a submodule — runs them outside the sandbox; check them before you do]`)
          const truncated = (r: { readonly truncatedBytes: number }) => r.truncatedBytes > 0 ? `\n[… truncated: ${r.truncatedBytes} more bytes]` : ""
          switch (result._tag) {
            case "SpawnFailed":
              return yield* fail(
                result.code === "ENOENT" ? "command_not_found" : "spawn_failed",
                result.code === "ENOENT" ? `${command.argv[0]}: command not found` : `${command.argv[0]} could not be started (${result.code})`
              )
            case "TimedOut":
              return yield* fail("timeout", `The command did not finish within ${Duration.format(timeout)} and was stopped.${result.output === "" ? "" : `\nOutput so far:\n${result.output}${truncated(result)}`}${undoneNote}`)
            case "Exited":
              return {
                result: (`${result.output}${truncated(result)}${result.exitCode === 0 ? "" : `\n[exit code ${result.exitCode}]`}` || "(no output)") + undoneNote,
                exitCode: result.exitCode
              }
          }
        }).pipe(Effect.scoped)
    }

    const tools: Record<string, Tool<any, any>> = {
      read_file: readFile,
      write_file: writeFile,
      edit_file: editFile,
      list_dir: listDir,
      grep,
      shell
    }

    const definitions: ReadonlyArray<ToolDefinition> = Object.entries(tools).map(([name, tool]) => {
      const { $schema: _, ...inputSchema } = JSONSchema.make(tool.schema) as unknown as JsonObject & { $schema?: string }
      return { name, description: tool.description, inputSchema, sequential: tool.sequential === true }
    })

    // Each tool's arguments decoder, made once (not per call), answering at once: the schemas are synchronous.
    const decoders: Record<string, (args: unknown) => Either.Either<unknown, ParseResult.ParseError>> = Object.fromEntries(
      Object.entries(tools).map(([name, tool]) => {
        const decode = Schema.decodeUnknownEither(tool.schema as Schema.Schema<unknown, unknown>)
        return [name, (args: unknown) => decode(args, { onExcessProperty: "error" })]
      })
    )

    const prepare = (call: ToolCallInput, cwd: string): Effect.Effect<PreparedCall, ToolFailure> =>
      Effect.gen(function*() {
        // Its own names only: a name every object inherits (`constructor`, `toString`, `__proto__`) is no tool.
        const tool = Object.hasOwn(tools, call.tool) ? tools[call.tool] : undefined
        if (tool === undefined) {
          return yield* Effect.fail(unknownTool(call.tool, Object.keys(tools)))
        }
        const decoded = decoders[call.tool]!(call.args)
        if (Either.isLeft(decoded)) {
          return yield* Effect.fail(new ToolFailure({ errorCode: "invalid_arguments", message: ParseResult.TreeFormatter.formatErrorSync(decoded.left) }))
        }
        const input = decoded.right as never
        const unnamable = pathProblem((input as { readonly path?: unknown }).path)
        if (unnamable !== undefined) {
          return yield* Effect.fail(new ToolFailure({ errorCode: "invalid_arguments", message: `path cannot name a file: ${unnamable}` }))
        }
        // Text a file would hold that UTF-8 cannot: written, it became U+FFFD, another text than the call's.
        const unwritable = writtenText.find((field) => {
          const text = (input as Record<string, unknown>)[field]
          return typeof text === "string" && FileNames.hasLoneSurrogate(text)
        })
        if (unwritable !== undefined) {
          return yield* Effect.fail(
            new ToolFailure({ errorCode: "invalid_arguments", message: `${unwritable} cannot be written as UTF-8: it contains a lone surrogate (half of a UTF-16 pair)` })
          )
        }
        const inspected = yield* tool.inspect(input, cwd)
        return {
          ...call,
          risk: inspected.risk,
          sequential: tool.sequential === true,
          paths: yield* markRunsLater(cwd, inspected.paths),
          ...(inspected.command === undefined ? {} : {
            command: {
              text: inspected.command.text,
              argv: inspected.command.argv,
              hazards: inspected.command.hazards,
              ...(inspected.repositoryRuns === undefined || inspected.repositoryRuns.length === 0 ? {} : { repositoryRuns: inspected.repositoryRuns }),
              ...(inspected.shadowedModules === undefined || inspected.shadowedModules.length === 0
                ? {}
                : { shadowedModules: inspected.shadowedModules, ...(inspected.shadowKinds === undefined ? {} : { shadowKinds: inspected.shadowKinds }) })
            }
          }),
          scope: inspected.scope ?? call.tool,
          input
        }
      })

    /**
     * Marks the writes inside cwd that would run later outside the sandbox (`RunsLater`: what the
     * sandbox keeps read-only for commands), so that the policy protects them: the path where it
     * leads and as written (a link `.zshrc` into `dotfiles/` is the start-up file the shell reads).
     */
    const markRunsLater = (cwd: string, paths: ReadonlyArray<PathAccess>): Effect.Effect<ReadonlyArray<PathAccess>> =>
      !paths.some((p) => p.access === "write" && p.insideCwd)
        ? Effect.succeed(paths)
        : Effect.flatMap(commandEnv, (env) => Effect.promise(async () => {
          const real = await NodeFs.realpath(path.resolve(cwd)).catch(() => path.resolve(cwd))
          const [home, hooks] = await Promise.all([
            RunsLater.homeHeldBy(real, env?.set?.PATH ?? process.env.PATH),
            RunsLater.hooksFoldersOf(real)
          ])
          const facts = { home, hooks }
          const seen = new Map<string, Promise<boolean>>()
          return Promise.all(paths.map(async (p) => {
            if (p.access !== "write" || !p.insideCwd) return p
            const asWritten = path.resolve(real, p.requested.startsWith("~/") ? path.join(process.env.HOME ?? NodeOs.homedir(), p.requested.slice(2)) : p.requested)
            // A write onto the git folder itself writes into it, unless only a git's `-C`/`--git-dir`/`GIT_DIR` names it (it reads there).
            const itself = p.readByGit !== true
            const inGitFolder = async () => (await RunsLater.inGitFolder(real, p.resolved, seen, itself)) || (await RunsLater.inGitFolder(real, asWritten, seen, itself))
            const runsLater = RunsLater.reasonFor(facts, p.resolved) ?? RunsLater.reasonFor(facts, asWritten) ??
              ((await inGitFolder()) ? RunsLater.gitFolderReason : undefined)
            return runsLater === undefined ? p : { ...p, runsLater }
          }))
        }))

    const execute = (call: PreparedCall, context: ToolContext) =>
      context.pinnedCwd === true
        ? Effect.zipRight(stillWhereItWas(context.cwd), tools[call.tool]!.run(call.input, call, context))
        : tools[call.tool]!.run(call.input, call, context)

    return ToolRouter.of({ definitions, prepare, execute })
  })

/**
 * A pinned cwd (a subagent's, see `ToolContext.pinnedCwd`) that no longer is its own real path: a
 * folder on the way was swapped for a link since its task checked it, and the call would read,
 * write or run where that link leads, outside the parent's workspace. Checked as each call starts.
 */
const stillWhereItWas = (cwd: string): Effect.Effect<void, ToolFailure> =>
  Effect.flatMap(Paths.realCwd(cwd), (real) =>
    real === NodePath.resolve(cwd)
      ? Effect.void
      : Effect.fail(new ToolFailure({ errorCode: "cwd_moved", message: "This subagent's working directory was swapped for a link or moved since its task started (it leads to another folder now): its calls are refused. The parent may start the task again." })))

/** The workspace tools as a layer; they need a `FileSystem` and a `Path` (`NodeContext.layer`). */
export const layer = (options: Options = {}): Layer.Layer<ToolRouter, never, FileSystem.FileSystem | Path.Path> =>
  Layer.effect(ToolRouter, make(options))
