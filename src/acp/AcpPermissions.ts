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
import { PermissionEngine, PermissionPolicy, type ToolRouter } from "../index.js"

/** The modes, as an ACP client lists them. */
export const modes: ReadonlyArray<{ readonly id: PermissionPolicy.Mode; readonly name: string; readonly description: string }> = [
  { id: "default", name: "Default", description: "Reads inside the project are allowed; edits and commands ask" },
  { id: "acceptEdits", name: "Accept edits", description: "Reads and edits inside the project are allowed; commands ask" },
  { id: "readOnly", name: "Read only", description: "Reads are allowed, read-only commands ask, everything else is denied" },
  { id: "bypass", name: "Bypass permissions", description: "Everything is allowed without asking" }
]

/** Whether `id` names a mode. */
export const isMode = (id: string): id is PermissionPolicy.Mode => modes.some((mode) => mode.id === id)

/** What a session's policy holds besides the mode: its rules (e.g. from its project's settings) and the paths it protects. */
export interface SessionPolicy {
  readonly mode?: PermissionPolicy.Mode | undefined
  readonly rules?: ReadonlyArray<PermissionPolicy.Rule> | undefined
  readonly protectedPaths?: ReadonlyArray<string> | undefined
}

/** The modes (and rules) of the sessions served, and the mode a session starts in. */
export class SessionModes extends Context.Tag("effect-agent/acp/SessionModes")<SessionModes, SessionModes.Service>() {}

/** The modes of the sessions served. */
export declare namespace SessionModes {
  /** What the mode table does. */
  export interface Service {
    /** The mode a session starts in (when it is created or loaded) unless its policy names one. */
    readonly initial: PermissionPolicy.Mode
    /** The session's mode now. */
    readonly get: (sessionId: string) => Effect.Effect<PermissionPolicy.Mode>
    /** Sets the session's mode; later decisions, in the running turn too, use it. */
    readonly set: (sessionId: string, mode: PermissionPolicy.Mode) => Effect.Effect<void>
    /** Sets the session's policy when it is opened: its mode (else `initial`) and its own rules. */
    readonly configure: (sessionId: string, policy: SessionPolicy) => Effect.Effect<void>
    /** Forgets a session's mode and rules (`session/close`); a later load configures it again. */
    readonly forget?: ((sessionId: string) => Effect.Effect<void>) | undefined
    /**
     * Why the policy asked about a call, when a rule of the user's did not cover it, taken once by
     * the permission request that asks it (the events keep only the ask). Absent in a table of an
     * embedder's own: its requests then carry no reason.
     */
    readonly takeAskReason?: ((sessionId: string, toolCallId: string) => PermissionPolicy.AskReason | undefined) | undefined
    /** The ask about a call, with its reason if any, taken once: a subagent's request's (`PermissionPolicy.subagentAskReason`). */
    readonly takeAsk?: PermissionPolicy.AskReasons["takeAsk"] | undefined
  }
}

/** Options: the starting mode, rules for every session, and the decision function. */
export interface Options {
  readonly initial?: PermissionPolicy.Mode | undefined
  /** Rules of every session, after each session's own. */
  readonly rules?: ReadonlyArray<PermissionPolicy.Rule> | undefined
  /** Decides with a session's options; default `PermissionPolicy.decide` (the CLI adds its guards). */
  readonly decide?: ((options: PermissionPolicy.Options, request: PermissionEngine.PermissionRequest) => PermissionEngine.PermissionDecision) | undefined
  /**
   * What a tool's own walk leaves out under a session's options; default `PermissionPolicy.fence`
   * when `decide` is the default. It must read the rules `decide` applies: with a `decide` of your
   * own and no `fence`, the engine has none (such a walk is decided as any other: it asks).
   */
  readonly fence?: ((options: PermissionPolicy.Options, request: PermissionEngine.PermissionRequest) => ToolRouter.PathFence | undefined) | undefined
}

interface Entry {
  readonly mode: PermissionPolicy.Mode
  readonly rules: ReadonlyArray<PermissionPolicy.Rule>
  readonly protectedPaths?: ReadonlyArray<string> | undefined
}

/** The mode table and the permission engine reading it, sharing one table. */
export const make = (options: Options = {}) =>
  Effect.gen(function*() {
    const table = yield* Ref.make(new Map<string, Entry>())
    const initial = options.initial ?? "default"
    const decide = options.decide ?? PermissionPolicy.decide
    const fence = options.fence ?? (options.decide === undefined ? PermissionPolicy.fence : undefined)
    const reasons = PermissionPolicy.askReasons()
    const entry = (sessionId: string) => Effect.map(Ref.get(table), (entries): Entry => entries.get(sessionId) ?? { mode: initial, rules: [] })
    const put = (sessionId: string, next: (current: Entry) => Entry) =>
      Ref.update(table, (entries) => new Map(entries).set(sessionId, next(entries.get(sessionId) ?? { mode: initial, rules: [] })))
    const sessionModes: SessionModes.Service = {
      initial,
      get: (sessionId) => Effect.map(entry(sessionId), (e) => e.mode),
      set: (sessionId, mode) => put(sessionId, (current) => ({ ...current, mode })),
      configure: (sessionId, policy) => put(sessionId, () => ({ mode: policy.mode ?? initial, rules: policy.rules ?? [], protectedPaths: policy.protectedPaths })),
      forget: (sessionId) =>
        Ref.update(table, (entries) => {
          if (!entries.has(sessionId)) return entries
          const next = new Map(entries)
          next.delete(sessionId)
          return next
        }),
      takeAskReason: reasons.take,
      takeAsk: reasons.takeAsk
    }
    // A subagent's session is never configured (only session/new and session/load are): it shares
    // the policy of the top session of its tree, as it is at each decision — the mode the editor
    // chose for that session, a switch during the subagent's turn included.
    const policyOf = (request: PermissionEngine.PermissionRequest) =>
      Effect.map(Ref.get(table), (entries): Entry =>
        entries.get(request.sessionId) ??
          (request.topSession === undefined ? undefined : entries.get(request.topSession.sessionId)) ??
          { mode: initial, rules: [] })
    const optionsOf = ({ mode, protectedPaths, rules }: Entry): PermissionPolicy.Options => ({ mode, rules: [...rules, ...(options.rules ?? [])], protectedPaths })
    const permissions: PermissionEngine.PermissionEngine["Type"] = {
      decide: (request) => Effect.map(policyOf(request), (entry) => reasons.note(request, decide(optionsOf(entry), request))),
      // The grep tool's walk leaves out what the session's rules fence, rather than asking (the same
      // options as its decision: the table is read alike, synchronously).
      ...(fence === undefined ? {} : { fence: (request: PermissionEngine.PermissionRequest) => fence(optionsOf(Effect.runSync(policyOf(request))), request) })
    }
    return { sessionModes, permissions }
  })

/** `SessionModes` and the `PermissionEngine` that follows it; give both to the engine and the agent. */
export const layer = (options: Options = {}): Layer.Layer<SessionModes | PermissionEngine.PermissionEngine> =>
  Layer.effectContext(Effect.map(make(options), ({ permissions, sessionModes }) =>
    Context.make(SessionModes, sessionModes).pipe(Context.add(PermissionEngine.PermissionEngine, permissions))))
