// Types of the viewer's pure fold (viewer.js), for the tests that check it against the package's projections.
export interface ViewCall {
  readonly kind: "call"
  readonly toolCallId: string
  readonly tool: string
  readonly args: unknown
  readonly status: string
  readonly decisions: ReadonlyArray<{ readonly decision: string; readonly actor: string; readonly policy?: string }>
  readonly result?: unknown
  readonly errorCode?: string
}
export type ViewItem =
  | { readonly kind: "text"; readonly text: string }
  | { readonly kind: "steer"; readonly text: string }
  /** `event`: the type of the session-level event the line tells of (follow-ups, forks, compaction); `detail`: a compaction's summary. */
  | { readonly kind: "note"; readonly text: string; readonly event?: string; readonly detail?: string }
  | ViewCall
export interface ViewTurn {
  readonly turnId: string
  readonly user: string
  readonly items: ReadonlyArray<ViewItem>
  readonly end?: { readonly stopReason: string; readonly errorCode?: string }
  /** The follow-up this turn runs (`turn.started {queueId}`). */
  readonly queueId?: string
}
export interface View {
  readonly session?: { readonly sessionId: string; readonly cwd: string }
  readonly turns: ReadonlyArray<ViewTurn>
  readonly lastSequence: number
  readonly openTurn?: ViewTurn
  /** Session-level lines outside any turn, with the sequence they sit at. */
  readonly notes: ReadonlyArray<{ readonly kind: "note"; readonly text: string; readonly event?: string; readonly detail?: string; readonly sequence: number }>
  /** Follow-ups queued and not yet started nor dropped, oldest first. */
  readonly followUps: ReadonlyArray<{ readonly queueId: string; readonly content: string }>
  /** The compaction in progress (between `compaction.started` and its end). */
  readonly compacting?: string
  readonly contextTokens?: number
}
export declare const empty: () => View
export declare const step: (view: View, event: unknown) => View
export declare const fold: (events: ReadonlyArray<unknown>) => View
export declare const openCalls: (view: View) => ReadonlyArray<ViewCall>
export declare const pendingApprovals: (view: View) => ReadonlyArray<ViewCall>
export declare const phase: (view: View) => "idle" | "running" | "waiting for approval" | "compacting"
