/**
 * The workspace checkpoints port: what lets a rewind restore files. Around a tool call that can
 * write, it records the files of the session's cwd the call changed, with their previous content put
 * in the store's blob area (by content hash, so deduplicated): the engine stores them as
 * `workspace.changed`. A rewind gives back, per file, the content to restore and the hash the agent
 * last left there; the port refuses files changed since (unless forced), writes only inside cwd and
 * never through a link, and reports what it overwrote so that the rewind can be rewound.
 * Implementation: `PreImages` (layers/workspace).
 *
 * @since 0.10.0
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type { FileChange, FileImage } from "../domain/AgentEvent.js"
import type { EventStoreFailure, RewindRefused } from "../domain/Errors.js"
import type { PreparedCall } from "./ToolRouter.js"

/** What a call changed: the files, and why the list may miss some (a scan past its caps). */
export interface Capture {
  readonly changes: ReadonlyArray<FileChange>
  readonly incomplete?: string | undefined
}

/** One file a rewind brings back. */
export interface Restore {
  /** Relative to the session's cwd, `/` separators (as `FileChange.path`). */
  readonly path: string
  /** The content to restore; absent: the file did not exist, so it is removed. */
  readonly target?: FileImage | undefined
  /** The hash the agent last left there; absent: the agent left no file. Anything else was changed outside the agent. */
  readonly expected?: string | undefined
}

/** What a restore did. */
export interface Restored {
  /** The files written or removed, each with a pre-image of what was there (`FileChange.before`). */
  readonly changes: ReadonlyArray<FileChange>
  /** The files changed outside the agent that `force` overwrote. */
  readonly forced: ReadonlyArray<string>
}

/** The workspace checkpoints port. */
export class WorkspaceCheckpoints extends Context.Tag("effect-agent/WorkspaceCheckpoints")<WorkspaceCheckpoints, WorkspaceCheckpoints.Service>() {}

/** The workspace checkpoints port. */
export declare namespace WorkspaceCheckpoints {
  /** What a checkpoints implementation does. */
  export interface Service {
    /**
     * Starts watching what `call` may change in `cwd`: the effect it returns, run once the call has
     * ended (whatever its outcome), says what changed. `undefined`: the call cannot write (its
     * risk is `read`), or is not a tool whose effects are known. Never fails: a checkpoint that
     * cannot be taken is logged and reported as incomplete, and the call runs as it would.
     */
    readonly watch: (call: PreparedCall, cwd: string) => Effect.Effect<Effect.Effect<Capture> | undefined>
    /**
     * Brings the files back. Checks every file first and changes nothing when one was changed
     * outside the agent (`RewindRefused {changed_outside}`, unless `force`), leads outside `cwd`
     * or through a link (`RewindRefused {unsafe_path}`, always), or is a file to replace larger
     * than a rewind keeps (`RewindRefused {too_large}`, always: what it replaces is kept first).
     */
    readonly restore: (input: {
      readonly cwd: string
      readonly files: ReadonlyArray<Restore>
      readonly force: boolean
    }) => Effect.Effect<Restored, RewindRefused | EventStoreFailure>
  }
}
