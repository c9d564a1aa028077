/**
 * Permission modes per session, for the ACP agent: an editor switches a session's mode with
 * `session/set_mode`, so the rule-based policy's mode cannot be fixed when the engine is built. This
 * permission engine reads each session's mode at every decision and defers to
 * `PermissionPolicy.decide` with it.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Ref from "effect/Ref"
import { PermissionEngine, PermissionPolicy } from "../index.js"

/** The modes, as an ACP client lists them. */
export const modes: ReadonlyArray<{ readonly id: PermissionPolicy.Mode; readonly name: string; readonly description: string }> = [
  { id: "default", name: "Default", description: "Reads inside the project are allowed; edits and commands ask" },
  { id: "acceptEdits", name: "Accept edits", description: "Reads and edits inside the project are allowed; commands ask" },
  { id: "readOnly", name: "Read only", description: "Reads are allowed, read-only commands ask, everything else is denied" },
  { id: "bypass", name: "Bypass permissions", description: "Everything is allowed without asking" }
]

/** Whether `id` names a mode. */
export const isMode = (id: string): id is PermissionPolicy.Mode => modes.some((mode) => mode.id === id)

/** The modes of the sessions served, and the mode a session starts in. */
export class SessionModes extends Context.Tag("effect-agent/acp/SessionModes")<SessionModes, SessionModes.Service>() {}

/** The modes of the sessions served. */
export declare namespace SessionModes {
  /** What the mode table does. */
  export interface Service {
    /** The mode a session starts in (when it is created or loaded). */
    readonly initial: PermissionPolicy.Mode
    /** The session's mode now. */
    readonly get: (sessionId: string) => Effect.Effect<PermissionPolicy.Mode>
    /** Sets the session's mode; later decisions, in the running turn too, use it. */
    readonly set: (sessionId: string, mode: PermissionPolicy.Mode) => Effect.Effect<void>
  }
}

/** Options: the starting mode and the policy's rules (the rules apply in every mode). */
export interface Options {
  readonly initial?: PermissionPolicy.Mode | undefined
  readonly rules?: ReadonlyArray<PermissionPolicy.Rule> | undefined
}

/** The mode table and the permission engine reading it, sharing one table. */
export const make = (options: Options = {}) =>
  Effect.gen(function*() {
    const table = yield* Ref.make(new Map<string, PermissionPolicy.Mode>())
    const initial = options.initial ?? "default"
    const get = (sessionId: string) => Effect.map(Ref.get(table), (modes) => modes.get(sessionId) ?? initial)
    const sessionModes: SessionModes.Service = {
      initial,
      get,
      set: (sessionId, mode) => Ref.update(table, (modes) => new Map(modes).set(sessionId, mode))
    }
    const permissions: PermissionEngine.PermissionEngine["Type"] = {
      decide: (request) => Effect.map(get(request.sessionId), (mode) => PermissionPolicy.decide({ mode, rules: options.rules }, request))
    }
    return { sessionModes, permissions }
  })

/** `SessionModes` and the `PermissionEngine` that follows it; give both to the engine and the agent. */
export const layer = (options: Options = {}): Layer.Layer<SessionModes | PermissionEngine.PermissionEngine> =>
  Layer.effectContext(Effect.map(make(options), ({ permissions, sessionModes }) =>
    Context.make(SessionModes, sessionModes).pipe(Context.add(PermissionEngine.PermissionEngine, permissions))))
