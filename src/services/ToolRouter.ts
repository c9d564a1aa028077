/**
 * The tool router port: describes the tools the model may call, validates a call against its tool's
 * argument schema (resolving what it would touch, so the permission engine can judge it), and runs
 * it. Implementations: the workspace tools.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { Risk } from "../domain/AgentEvent.js"
import * as FormatCharacters from "../domain/FormatCharacters.js"
import type { Json } from "../domain/Json.js"
import type * as Image from "../domain/Image.js"
import type { ToolSpec } from "./ModelProvider.js"

/** A tool as the router offers it. */
export interface ToolDefinition extends ToolSpec {
  /** A sequential tool never runs beside another tool call. */
  readonly sequential: boolean
}

/** A call as the model made it. */
export interface ToolCallInput {
  readonly toolCallId: string
  readonly tool: string
  readonly args: Json
}

/** A path a call would touch, resolved against the session's cwd with symlinks followed. */
export interface PathAccess {
  /** The path as the call gave it. */
  readonly requested: string
  /** The real absolute path. */
  readonly resolved: string
  readonly insideCwd: boolean
  /**
   * The real path relative to the session's real cwd (`.` for the cwd itself) when it is inside it:
   * what a rule's relative path glob matches. Computed from `resolved` when absent.
   */
  readonly relative?: string | undefined
  readonly access: "read" | "write"
  /**
   * Why a path counts as outside though it may not be, when it does: a file with other names (a
   * hard link), a word only the shell knows the value of, a tree too large to check for links.
   */
  readonly note?: string
  /**
   * Why a write here would run later outside the sandbox (a start-up file of the home folder a cwd
   * holds, a git hooks folder): what the command sandbox keeps read-only. The policy protects it
   * as it does `.git/`.
   */
  readonly runsLater?: string | undefined
  /**
   * Only a git's own folder words name this path (`-C dir`, `--git-dir=dir`, `GIT_DIR=dir`): git
   * reads the repository there and writes nothing onto the folder itself, as `cp config gd` does.
   */
  readonly readByGit?: boolean | undefined
  /**
   * The call reads the whole tree under this folder (`grep -r`, `find`, `ls -R`, the `grep` tool),
   * not just the folder: a deny or ask rule for a path below it concerns the call too.
   */
  readonly walked?: boolean | undefined
  /**
   * The walk of this folder is the tool's own and leaves out every path a {@link PathFence} fences
   * (the built-in `grep`): the policy then hands it the fence instead of asking. A shell's walk
   * cannot be steered so, and never says this.
   */
  readonly leavesOut?: boolean | undefined
}

/**
 * Whether a path a tool's walk meets is fenced by a deny or ask rule (so left out): given its real
 * absolute path, its real path relative to the real cwd (when inside), and the path the walk reached
 * it by, as a call would have written it.
 */
export type PathFence = (path: { readonly real: string; readonly relative: string | undefined; readonly written: string }) => boolean

/** What makes a command line dangerous to run without a rule that allows it. */
export type ShellHazard = "chaining" | "pipe" | "redirection" | "substitution" | "background" | "sudo" | "recursive_delete"

/** What a repository's file a line would load stands in for: a Python's module, Perl's, a program, a shared library, a Python's own library or start-up code, javac's annotation processor, the options Maven's launcher gives its JVM; `unknown`: a folder not read. */
export type ShadowKind = "python" | "perl" | "program" | "library" | "pythonLib" | "processor" | "jvm" | "unknown"

/** A command a call would run. */
export interface CommandAccess {
  readonly text: string
  readonly argv: ReadonlyArray<string>
  readonly hazards: ReadonlyArray<ShellHazard>
  /**
   * What git, run by this line, would run because the repository's own files name it (its config's
   * `core.fsmonitor`, a diff driver's `textconv`, a `post-index-change` hook: `GitPrograms`), as
   * `section.key` or `hooks/<name>`. The policy asks before such a line runs, whatever a rule says.
   */
  readonly repositoryRuns?: ReadonlyArray<string> | undefined
  /**
   * Files in the folder a Python of this line starts in that it would import in place of a standard
   * module (`json.py` for `python3 -m json.tool`: `PythonShadows`). The policy asks, whatever a rule says.
   */
  readonly shadowedModules?: ReadonlyArray<string> | undefined
  /** What those files stand in for (`PythonShadows.ShadowKind`): the question gives each its own reason. */
  readonly shadowKinds?: ReadonlyArray<ShadowKind> | undefined
}

/** A validated call: what it would do, for the permission engine, and its decoded input, for the tool. */
export interface PreparedCall extends ToolCallInput {
  readonly risk: Risk
  readonly sequential: boolean
  readonly paths: ReadonlyArray<PathAccess>
  readonly command?: CommandAccess
  /**
   * What a user decision with "always" applies to: the tool; for `shell`, the program at the same
   * risk (`shell:git:read`), or the exact line for an invocation that could run other commands.
   */
  readonly scope: string
  /** The tool's decoded arguments. */
  readonly input: unknown
  /**
   * A tool of an MCP server a trusted project's `.mcp.json` defined: your allow rules naming MCP
   * tools (`mcp__github__*`) are for your own servers and do not cover it; it asks (`PermissionPolicy`).
   */
  readonly projectServer?: true | undefined
}

/** What a running tool can use. */
export interface ToolContext {
  readonly sessionId: string
  readonly turnId: string
  /** The session's working directory: every relative path resolves against it. */
  readonly cwd: string
  /** Reports progress; dropped once the call has ended. */
  readonly progress: (message: string) => Effect.Effect<void>
  /** Whether the model takes images: a tool may then return some (`ToolOutput.images`), e.g. `read_file` of a PNG. */
  readonly acceptsImages?: boolean | undefined
  /**
   * Whether `cwd` must still be the real path it was when the session started (a subagent's: its
   * task checked it inside the parent's). A tool that works in the cwd then fails `cwd_moved` when
   * it resolves elsewhere now — swapped for a link after the check, it would lead anywhere.
   */
  readonly pinnedCwd?: boolean | undefined
  /** The paths a walk of the call leaves out (see `PathAccess.leavesOut`): the permission engine's fence, when it has one. */
  readonly leaveOut?: PathFence | undefined
}

/** A tool's result: the text the model sees, bounded in size, and images, when the model takes them. */
export interface ToolOutput {
  readonly result: string
  readonly exitCode?: number
  /** Images for the model (checked and stored in the blob area by the engine; see `Image`). */
  readonly images?: ReadonlyArray<Image.ImageInput>
}

/**
 * A tool call that ended without a result. `message` goes to the model (and the log): it says what
 * went wrong in the model's terms, never with a stack.
 */
export class ToolFailure extends Schema.TaggedError<ToolFailure>()("ToolFailure", {
  errorCode: Schema.String,
  message: Schema.String
}) {}

/**
 * The tools one outside source (an MCP server) offers now, and their hash: the engine records a
 * list in the log (`mcp.tools_listed`) before the first request that offers it, and again when the
 * hash changes.
 */
export interface ToolSource {
  readonly server: string
  readonly tools: ReadonlyArray<ToolSpec>
  readonly hash: string
}

/** Characters of a tool's name an `unknown_tool` message repeats. */
const shownNameChars = 100

/**
 * A tool name as an `unknown_tool` message quotes it: a model's name is any string, and one of 10 KB
 * was repeated whole into the event and the next request. Cut, saying how long it was; its control
 * and format characters written as `\u…` escapes (a `\r` or a bidi override in a name the model
 * made up rewrote the line a terminal showed the failure on).
 */
export const shownName = (name: string): string =>
  FormatCharacters.escapeUnprintable(name.length <= shownNameChars ? name : `${name.slice(0, shownNameChars)}… (${name.length} characters)`)

/**
 * The `unknown_tool` failure of a call of no tool there is: its name as {@link shownName} quotes it,
 * then what there is — the tools `available`, `"none"` (no tools at all), or nothing more; a
 * subagent's says the subagent has no such tool. Every router builds it here, so the name is cut
 * the same way everywhere.
 */
export const unknownTool = (name: string, available?: ReadonlyArray<string> | "none" | "subagent"): ToolFailure =>
  new ToolFailure({
    errorCode: "unknown_tool",
    message: available === "subagent"
      ? `This subagent has no tool named "${shownName(name)}".`
      : `There is no tool named "${shownName(name)}"${available === undefined ? "." : available === "none" ? ": no tools are available." : `. Available: ${available.join(", ")}`}`
  })

/** The tool router port. */
export class ToolRouter extends Context.Tag("effect-agent/ToolRouter")<ToolRouter, ToolRouter.Service>() {}

/** The tool router port. */
export declare namespace ToolRouter {
  /** What a tool router does. */
  export interface Service {
    readonly definitions: ReadonlyArray<ToolDefinition>
    /** The outside sources among `definitions` (MCP servers), whose lists the log records; none when absent. */
    readonly sources?: () => ReadonlyArray<ToolSource>
    /** The router of one session's turns, when sessions have tools of their own (MCP servers a client gave for it); else this one. */
    readonly forSession?: (sessionId: string) => ToolRouter.Service
    /** Validates a call: `unknown_tool`, `invalid_arguments`, or the resolved call. */
    readonly prepare: (call: ToolCallInput, cwd: string) => Effect.Effect<PreparedCall, ToolFailure>
    /** Runs a prepared, allowed call. Interruption stops it (a process is killed). */
    readonly execute: (call: PreparedCall, context: ToolContext) => Effect.Effect<ToolOutput, ToolFailure>
  }
}
