/**
 * The ACP agent (CONTRACT.md §7.2): serves the session engine to an editor over the Agent Client
 * Protocol, on `@agentclientprotocol/sdk`'s app API. It stands on the engine's public operations
 * only; what it sends comes from {@link AcpMapper}.
 *
 * One connection serves many sessions, each with at most one turn at a time. A turn runs for a
 * `session/prompt` (answered with its stop reason after its last update) or, after `session/load`
 * of a session paused on an approval, in the background once the re-asked approval is answered.
 * When the client closes its input (stdin ended), the requests it sent are still answered: the
 * connection ends once they are and no turn runs (a question the turn would ask the client is
 * dismissed, which cancels it). When the connection closes — the client went away, a write failed —
 * every running turn is cancelled and its log closed before `serve` returns.
 *
 * @since 0.1.0
 */
import * as acp from "@agentclientprotocol/sdk"
import { Readable, Writable } from "node:stream"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as FiberSet from "effect/FiberSet"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import {
  type AgentEvent,
  type McpConfig,
  ModelProvider,
  PendingServers as Pending,
  PermissionEngine,
  PermissionPolicy,
  Pricing,
  Session,
  SessionEngine,
  type SessionState,
  Tokens,
  ToolRouter,
  UsageText,
  version,
  WorkingDirectory
} from "../index.js"
import * as AcpMapper from "./AcpMapper.js"
import * as AcpPermissions from "./AcpPermissions.js"
import * as Arrivals from "./Arrivals.js"
import * as EndOfInput from "./EndOfInput.js"

/** Options of the agent. */
export interface Options {
  /** Reported to the client in `initialize` (default `effect-agent`). */
  readonly name?: string | undefined
  /** Reported to the client in `initialize` (default the package version). */
  readonly version?: string | undefined
  /**
   * The policy of a session opened in `cwd` (e.g. its project's settings file), read when the
   * session is created or loaded; a failure refuses the request with its message. Needs
   * `AcpPermissions.SessionModes`.
   */
  readonly sessionPolicy?: ((cwd: string) => Effect.Effect<AcpPermissions.SessionPolicy, { readonly message: string }>) | undefined
  /**
   * Starts the MCP servers a session's client named in `session/new` or `session/load` (with those
   * of the user's and a trusted project's files, as the embedder decides), in the session's cwd; a
   * failure refuses the request with its message. For `session/new` they start before the session
   * is created, so a refused one stores nothing; `bind` then makes them the new (or loaded)
   * session's, `discard` stops them. Without it, servers a client names are ignored with a warning
   * (and the agent advertises no HTTP MCP support).
   */
  readonly sessionServers?: ((cwd: string, servers: McpConfig.Servers) => Effect.Effect<PendingServers, { readonly message: string }>) | undefined
  /**
   * Stops the MCP servers `sessionServers` bound to a session, when the client closes it
   * (`session/close`). Without it, a closed session's servers run until the agent exits.
   */
  readonly releaseServers?: ((sessionId: string) => Effect.Effect<void>) | undefined
}

/** A session's MCP servers started before they are the session's (see `sessionServers`). */
export type PendingServers = Pending.PendingServers

/** A turn this connection drives for a session. */
interface Running {
  /** Aborted by a cancel: settles the permission requests the turn has open with the client. */
  readonly controller: AbortController
  /** A cancel was asked for: the prompt answers `cancelled`. */
  cancelled: boolean
  /** When the request it runs for (a prompt, or a load resuming a paused turn) arrived: a `session/cancel` that arrived later cancels it. */
  readonly arrivedAt: number
  /** The turn, once its `turn.started` has been seen. */
  turnId: string | undefined
}

/** A session opened on this connection (`session/new` or `session/load`). */
interface Served {
  readonly sessionId: string
  readonly cwd: string
  running: Running | undefined
  /** The session's title as the client was last told (`session_info_update`). */
  title: string | undefined
}

type Call = AcpMapper.Call

/** An engine or stream error as the JSON-RPC error the client receives; `data.errorCode` names it. */
export const requestErrorOf = (error: unknown): acp.RequestError => {
  if (error instanceof acp.RequestError) return error
  const tagged = typeof error === "object" && error !== null && "_tag" in error ? (error as { readonly _tag: string } & Record<string, unknown>) : undefined
  switch (tagged?._tag) {
    case "SessionNotFound":
      // The SDK's sessionNotFound says only "Resource not found": the same code and data, and where the sessions are.
      return new acp.RequestError(
        -32002,
        `Resource not found: no session ${String(tagged.sessionId)} here; session/list lists the stored ones (effect-agent sessions in a terminal)`,
        { sessionId: tagged.sessionId }
      )
    case "TurnInProgress":
      return acp.RequestError.invalidRequest(
        { errorCode: "turn_in_progress", sessionId: tagged.sessionId },
        "the session already has a running turn; cancel it or wait for it to end"
      )
    case "InvalidInput":
      return acp.RequestError.invalidParams({ errorCode: "invalid_input", field: tagged.field }, `${String(tagged.field)} ${String(tagged.detail)}`)
    case "SessionBusy":
      return new acp.RequestError(-32603, "the session is driven by another process", { errorCode: "session_busy", sessionId: tagged.sessionId })
    case "EventStoreFailure":
      if (tagged.reason === "untrusted") {
        return new acp.RequestError(
          -32603,
          "the session was not started by this user here (its log may have come with a repository): review it, then adopt it with effect-agent adopt",
          { errorCode: "session_untrusted", sessionId: tagged.sessionId }
        )
      }
      // A log of a newer format version is not damaged: "corrupt" alone had users remove good logs.
      if (tagged.reason === "corrupt" && String(tagged.detail).startsWith("unsupported log format version")) {
        return new acp.RequestError(-32603, "the session's log was written by a newer effect-agent: read it with that version", {
          errorCode: "event_store_failure",
          reason: tagged.reason,
          newerVersion: true
        })
      }
      // The store's detail can name files; the client gets the kind of failure only.
      return new acp.RequestError(-32603, `the event store failed to ${String(tagged.operation)} (${String(tagged.reason)})`, {
        errorCode: "event_store_failure",
        reason: tagged.reason
      })
    default:
      return new acp.RequestError(-32603, "internal error", { errorCode: tagged === undefined ? "internal_error" : tagged._tag })
  }
}

/** The error answering a prompt whose turn ended `error` (other than `max_steps`). */
export const turnFailed = (errorCode: string, sessionId: string): acp.RequestError =>
  new acp.RequestError(-32603, `the turn ended with an error: ${errorCode}`, { errorCode, sessionId })

/** A directory a client names, as sessions store it (its real path); as given when it cannot be resolved (it then matches nothing). */
const asStored = (cwd: string) => WorkingDirectory.canonical(cwd).pipe(Effect.orElseSucceed(() => cwd))

/**
 * Serves one ACP connection on `stream` until it closes, then cancels what still runs and returns.
 * Requires the engine; with `AcpPermissions.SessionModes` in the context (give the engine the
 * permission engine of the same `AcpPermissions.layer`), the sessions advertise the permission modes
 * and accept `session/set_mode`.
 */
export const serve = (stream: acp.Stream, options: Options = {}): Effect.Effect<void, never, SessionEngine.SessionEngine> =>
  Effect.scoped(Effect.gen(function*() {
    const engine = yield* SessionEngine.SessionEngine
    // The model's window, for `usage_update` (absent when the engine was given no provider here).
    const model = Option.getOrUndefined(yield* Effect.serviceOption(ModelProvider.ModelProvider))?.capabilities
    const sessionModes = Option.getOrUndefined(yield* Effect.serviceOption(AcpPermissions.SessionModes))
    // The engine's tools and policy, when given beside it (`effect-agent acp`): a paused call asked
    // again after a load is decided again with them, for the reason of its ask (see `reasonAgain`).
    const router = Option.getOrUndefined(yield* Effect.serviceOption(ToolRouter.ToolRouter))
    const permissions = Option.getOrUndefined(yield* Effect.serviceOption(PermissionEngine.PermissionEngine))
    const fibers = yield* FiberSet.make<unknown, unknown>()
    const runFork = yield* FiberSet.runtime(fibers)<never>()
    const sessions = new Map<string, Served>()
    /**
     * The loads in progress, by session: a load holds its session from its first step to its answer
     * (then, when it re-asks a paused turn's approvals, as that turn's `running`). A prompt or another
     * load meanwhile is refused `turn_in_progress`: a prompt claiming the session during the replay
     * made the load fail at its end, after the client had been shown the whole conversation, and the
     * paused turn's approval was never asked.
     */
    const loading = new Map<string, Running>()
    const arrivals = Arrivals.make()
    // The client closing its input (a script's pipe) ends the connection once what it asked for is
    // answered and no turn of this connection runs (see EndOfInput).
    const endOfInput = EndOfInput.make(() => loading.size > 0 || [...sessions.values()].some((s) => s.running !== undefined))
    let support = AcpMapper.baseline

    /**
     * Runs a handler's effect in the connection's fiber set (closing the connection interrupts it)
     * and settles the SDK's promise; a failure reaches the client as a JSON-RPC error, a defect as an
     * internal error (logged here, never sent).
     */
    const handle = <A>(effect: Effect.Effect<A, acp.RequestError>): Promise<A> =>
      new Promise<A>((resolve, reject) => {
        const fiber = runFork(effect.pipe(
          Effect.catchAllDefect((defect) =>
            Effect.logError("effect-agent acp: a request failed unexpectedly", Cause.die(defect)).pipe(
              Effect.zipRight(Effect.fail(new acp.RequestError(-32603, "internal error", { errorCode: "internal_error" })))
            )
          )
        ))
        fiber.addObserver((exit) => {
          if (Exit.isSuccess(exit)) return resolve(exit.value)
          const failure = Cause.failureOption(exit.cause)
          reject(Option.isSome(failure) ? failure.value : acp.RequestError.requestCancelled())
        })
      })

    /** Sends one update and waits until it is written: updates reach the client in order. */
    const send = (client: acp.AgentContext, sessionId: string, update: acp.SessionUpdate) =>
      Effect.tryPromise({
        try: () => client.notify(acp.methods.client.session.update, { sessionId, update }),
        catch: () => new acp.RequestError(-32603, "the connection closed", { errorCode: "connection_closed" })
      })

    /**
     * An event's updates for the client, its images read from the blob area (see
     * `AcpMapper.imagesShown`). An image that cannot be read is named in its place: the rest of the
     * conversation is still shown.
     */
    const updatesWithImages = (sessionId: string, event: AgentEvent.AgentEvent, phase: AcpMapper.Phase, updates: Array<acp.SessionUpdate>) => {
      const shown = AcpMapper.imagesShown(event, phase)
      if (shown.length === 0) return Effect.succeed(updates)
      return Effect.forEach(shown, (ref) =>
        engine.sessionImage({ sessionId, blob: ref.blob }).pipe(
          Effect.map((image): AcpMapper.ShownImage => ({ _tag: "read", mediaType: image.mediaType, base64: Buffer.from(image.bytes).toString("base64") })),
          Effect.catchAll((error) =>
            Effect.succeed<AcpMapper.ShownImage>({ _tag: "unavailable", ref, why: error._tag === "BlobNotFound" ? "not in the store" : "could not be read" })
          )
        )).pipe(Effect.map((images) => AcpMapper.withImages(event, updates, images)))
    }

    const served = (sessionId: string) =>
      Effect.suspend(() => {
        const session = sessions.get(sessionId)
        // The SDK's sessionNotFound says only "Resource not found": the same code and data, and the way in.
        return session === undefined
          ? Effect.fail(new acp.RequestError(-32002, `Resource not found: session ${sessionId} is not open on this connection; session/load opens it`, { sessionId }))
          : Effect.succeed(session)
      })

    /** Claims the session for a turn, for the request that arrived at `arrivedAt`: one at a time per session, none while it loads. */
    const claim = (session: Served, arrivedAt: number) =>
      Effect.suspend(() => {
        if (session.running !== undefined || loading.has(session.sessionId)) return Effect.fail(requestErrorOf({ _tag: "TurnInProgress", sessionId: session.sessionId }))
        const running: Running = { controller: new AbortController(), cancelled: false, arrivedAt, turnId: undefined }
        session.running = running
        return Effect.succeed(running)
      })

    const release = (session: Served, running: Running) =>
      Effect.sync(() => {
        if (session.running === running) session.running = undefined
        endOfInput.check()
      })

    /**
     * Cancels a turn this connection drives: open permission requests are settled, then the engine
     * cancels it — by id once its `turn.started` was seen (before that, whatever the session runs for
     * it: its own turn when its start is seen). Only turns of this connection: a client cannot close
     * another's.
     */
    const cancel = (session: { readonly sessionId: string }, running: Running) =>
      Effect.suspend(() => {
        running.cancelled = true
        running.controller.abort()
        return engine.cancelTurn({ sessionId: session.sessionId, ...(running.turnId === undefined ? {} : { turnId: running.turnId }) })
      })

    /**
     * `session/cancel`: cancels the session's turn when its request arrived before the cancel. A
     * cancel that arrived before it — a Stop click landing after the previous answer — is a no-op, as
     * is a cancel with no turn running.
     */
    const cancelNotified = (sessionId: string) =>
      Effect.suspend(() => {
        // A load in progress counts as the session's turn: a cancel during it closes the turn it
        // would resume (the load then asks nothing again).
        const running = sessions.get(sessionId)?.running ?? loading.get(sessionId)
        if (running === undefined || !arrivals.cancelledAfter(sessionId, running.arrivedAt)) {
          return Effect.logDebug("effect-agent acp: session/cancel with no turn of this connection to cancel").pipe(Effect.annotateLogs({ sessionId }))
        }
        return cancel({ sessionId }, running)
      })

    /**
     * Asks the client for permission, the question withdrawn when the turn is cancelled. A client
     * whose input ended can answer nothing: its questions are settled as dismissed (which cancels the
     * turn, as the user dismissing it does), and none is sent after.
     */
    const askPermission = (client: acp.AgentContext, running: Running, params: acp.RequestPermissionRequest) =>
      endOfInput.signal.aborted
        ? Promise.reject(new Error("the client's input ended"))
        : client.request(acp.methods.client.session.requestPermission, params, {
          cancellationSignal: AbortSignal.any([running.controller.signal, endOfInput.signal]),
          stopWaitingOnCancel: true
        })

    /** Asks the client about a paused call; the answer goes to the engine. */
    const permissionRequest = (client: acp.AgentContext, session: Served, running: Running, call: Call, uncovered?: AcpMapper.Uncovered) =>
      askPermission(client, running, AcpMapper.permissionRequestOf(session.sessionId, session.cwd, call, uncovered))

    const answer = (session: Served, running: Running, call: Call, request: Promise<acp.RequestPermissionResponse>, answeredOn = session.sessionId) =>
      Effect.gen(function*() {
        // A request settled by our own cancel, or by the connection closing, counts as cancelled.
        const response = yield* Effect.promise(() => request.then((r) => Option.some(r), () => Option.none()))
        const answer = Option.match(response, {
          onNone: (): AcpMapper.Answer => ({ _tag: "Cancelled" }),
          onSome: (r) => AcpMapper.answerOf(r.outcome)
        })
        if (answer._tag === "Cancelled") return yield* cancel(session, running)
        yield* engine.resolvePermission({ sessionId: answeredOn, toolCallId: call.toolCallId, decision: answer.decision, remember: answer.remember }).pipe(
          // The turn ended meanwhile (cancelled): the answer has nothing left to decide.
          Effect.catchTag("ApprovalNotPending", () => Effect.void),
          Effect.catchAll((error) => Effect.logWarning("effect-agent acp: could not store the user's answer", error).pipe(Effect.zipRight(cancel(session, running))))
        )
      })

    /**
     * Sends a turn's events as updates, asking the client whenever the policy asks; returns how the
     * turn ended (`undefined` when its stream ended without `turn.completed`).
     */
    const drive = <E>(client: acp.AgentContext, session: Served, running: Running, events: Stream.Stream<AgentEvent.AgentEvent, E>) =>
      Effect.gen(function*() {
        const calls = new Map<string, Call>()
        let completed: AgentEvent.PayloadOf<"turn.completed"> | undefined
        // The tokens of the turn's last request that reported usage: what is in the context now.
        let used: number | undefined
        yield* events.pipe(
          Stream.mapError(requestErrorOf),
          Stream.runForEach((event) =>
            Effect.gen(function*() {
              AcpMapper.noteCall(calls, event)
              const updates = AcpMapper.updatesOf(event, { cwd: session.cwd, phase: "live", support, callOf: (id) => calls.get(id), title: session.title })
              session.title = Session.applyTitle(session.title, Session.titleChange(event))
              for (const update of yield* updatesWithImages(session.sessionId, event, "live", updates)) {
                yield* send(client, session.sessionId, update)
              }
              if (event.type === "permission.resolved" && event.payload.decision === "ask") {
                const call = calls.get(event.payload.toolCallId)
                // Why the policy asked, when the user's own rule did not cover the call: said in the request, as the CLI's question says it.
                const uncovered = sessionModes?.takeAskReason?.(session.sessionId, event.payload.toolCallId)
                if (call !== undefined) yield* answer(session, running, call, permissionRequest(client, session, running, call, uncovered))
              }
              if (event.type === "subagent.asked") {
                // A subagent's call: asked of this client, labelled with the subagent; answered on the subagent's session.
                const { args, childSessionId, childToolCallId, tool } = event.payload
                // Why the policy asked, as for the session's own calls (decided on the subagent's session and on this one).
                const uncovered = sessionModes?.takeAsk === undefined
                  ? undefined
                  : PermissionPolicy.subagentAskReason(sessionModes.takeAsk, session.sessionId, event.payload)
                const request = askPermission(client, running, AcpMapper.subagentPermissionRequestOf(session.sessionId, session.cwd, event.payload, uncovered))
                yield* answer(session, running, { toolCallId: childToolCallId, tool, args }, request, childSessionId)
              }
              if (event.type === "turn.started" && running.turnId === undefined) {
                running.turnId = event.turnId
                // Cancelled before its start was seen: the cancel may have found another turn (a queued follow-up's) running for it.
                if (running.cancelled) yield* engine.cancelTurn({ sessionId: session.sessionId, turnId: event.turnId })
              }
              if (event.type === "model.usage") used = Pricing.totalInput(event.payload.usage, event.payload.provider)
              if (event.type === "turn.completed") {
                completed = event.payload
                if (used !== undefined && model !== undefined) {
                  const state = yield* Effect.option(engine.sessionState({ sessionId: session.sessionId }))
                  const totals = Option.getOrUndefined(state)?.totals
                  // Left out while no turn could be priced (docs/acp.md): not a cost of 0.
                  const cost = totals !== undefined && UsageText.hasKnownCost(totals) ? totals.cost : undefined
                  yield* send(client, session.sessionId, AcpMapper.usageUpdateOf(used, model.maxContextTokens, cost))
                }
              }
            })
          )
        )
        return completed
      })

    /** The prompt's answer for a turn's end. */
    const promptResponse = (session: Served, running: Running, completed: AgentEvent.PayloadOf<"turn.completed"> | undefined) => {
      // ACP: after session/cancel the prompt answers `cancelled`, even if the turn won the race.
      if (running.cancelled) return Effect.succeed<acp.PromptResponse>({ stopReason: "cancelled" })
      if (completed === undefined) return Effect.fail(new acp.RequestError(-32603, "the turn ended without completing", { errorCode: "internal_error" }))
      const ending = AcpMapper.endingOf(completed)
      return ending._tag === "Stop"
        ? Effect.succeed<acp.PromptResponse>({ stopReason: ending.stopReason })
        : Effect.fail(turnFailed(ending.errorCode, session.sessionId))
    }

    /** The session's policy for its cwd; read before anything is stored, so a bad settings file refuses the request. */
    const policyFor = (cwd: string) =>
      options.sessionPolicy === undefined || sessionModes === undefined
        ? Effect.succeed<AcpPermissions.SessionPolicy>({})
        : options.sessionPolicy(cwd).pipe(
          Effect.mapError((error) => acp.RequestError.invalidParams({ errorCode: "invalid_settings" }, error.message))
        )

    /** The servers a client named, as configuration; SSE and clashing names refuse the request. */
    const mcpServersOf = (servers: ReadonlyArray<acp.McpServer>) =>
      Either.match(AcpMapper.mcpServersOf(servers), {
        onLeft: (message) => Effect.fail(acp.RequestError.invalidParams({ errorCode: "invalid_mcp_servers", field: "mcpServers" }, message)),
        onRight: (configured) =>
          Object.keys(configured).length > 0 && options.sessionServers === undefined
            ? Effect.as(Effect.logWarning("effect-agent acp: this agent starts no MCP servers (no sessionServers); ignoring them"), {})
            : Effect.succeed(configured)
      })

    /** Starts the servers of a session in `cwd` (and the files' servers of its cwd, as the embedder decides), not yet the session's. */
    const prepareServers = (cwd: string, servers: McpConfig.Servers): Effect.Effect<PendingServers, acp.RequestError> =>
      options.sessionServers === undefined
        ? Effect.succeed({ bind: () => Effect.void, discard: Effect.void })
        : options.sessionServers(cwd, servers).pipe(
          Effect.mapError((error) => acp.RequestError.invalidParams({ errorCode: "mcp_server_failed", field: "mcpServers" }, error.message))
        )

    /** Starts a session's servers, then creates it (or finds the loaded one) and binds them to it (see `PendingServers.startThenBind`). */
    const withServers = <S extends { readonly sessionId: string }, E>(cwd: string, servers: McpConfig.Servers, session: Effect.Effect<S, E>) =>
      Pending.startThenBind(prepareServers(cwd, servers), session, () => acp.RequestError.internalError(undefined, Pending.expectedShape))

    const modeState = (mode: string): acp.SessionModeState | undefined =>
      sessionModes === undefined ? undefined : {
        currentModeId: mode,
        availableModes: AcpPermissions.modes.map(({ description, id, name }) => ({ id, name, description }))
      }

    const initialize = (params: acp.InitializeRequest): acp.InitializeResponse => {
      support = AcpMapper.supportOf(params.clientCapabilities)
      return {
        // We speak version 1 only: the client's version when it is 1, else our latest, which the
        // client may decline by disconnecting (ACP's negotiation).
        protocolVersion: acp.PROTOCOL_VERSION,
        agentCapabilities: {
          loadSession: true,
          mcpCapabilities: { http: options.sessionServers !== undefined, sse: false },
          promptCapabilities: { image: true, audio: false, embeddedContext: true },
          sessionCapabilities: { list: {}, close: {} }
        },
        agentInfo: { name: options.name ?? "effect-agent", version: options.version ?? version },
        authMethods: []
      }
    }

    const newSession = (params: acp.NewSessionRequest) =>
      Effect.gen(function*() {
        // Absolute, an existing directory, stored as its real path (`..` and links resolved once, here).
        const cwd = yield* WorkingDirectory.canonical(params.cwd).pipe(Effect.mapError(requestErrorOf))
        const servers = yield* mcpServersOf(params.mcpServers)
        const policy = yield* policyFor(cwd)
        // The servers start before the session is stored: one that cannot start refuses the request, and no session is left behind.
        const session = yield* withServers(cwd, servers, engine.createSession({ cwd, client: "acp" }).pipe(Effect.mapError(requestErrorOf)))
        if (sessionModes !== undefined) yield* sessionModes.configure(session.sessionId, policy)
        sessions.set(session.sessionId, { sessionId: session.sessionId, cwd: session.cwd, running: undefined, title: undefined })
        const modes = sessionModes === undefined ? undefined : modeState(yield* sessionModes.get(session.sessionId))
        return { sessionId: session.sessionId, ...(modes === undefined ? {} : { modes }) } satisfies acp.NewSessionResponse
      })

    /** Holds the session for a load, from its first step (see `loading`); fails while a turn runs or another load holds it. */
    const holdForLoad = (sessionId: string, arrivedAt: number) =>
      Effect.suspend(() => {
        if (sessions.get(sessionId)?.running !== undefined || loading.has(sessionId)) {
          return Effect.fail(requestErrorOf({ _tag: "TurnInProgress", sessionId }))
        }
        const running: Running = { controller: new AbortController(), cancelled: false, arrivedAt, turnId: undefined }
        loading.set(sessionId, running)
        return Effect.succeed(running)
      })

    /** Who drives the session when another live process does, else `undefined` (see `SessionEngine.drivenElsewhere`). */
    const drivenElsewhere = (sessionId: string) =>
      SessionEngine.drivenElsewhere(engine, sessionId).pipe(Effect.mapError(requestErrorOf))

    /** Why the policy asked about a paused call asked again after a load (see `PermissionPolicy.reasonAgain`). */
    const reasonAgain = (state: SessionState.SessionState, call: SessionState.OpenToolCall) => {
      const take = sessionModes?.takeAskReason
      return router === undefined || permissions === undefined || take === undefined
        ? Effect.succeed(undefined)
        : PermissionPolicy.reasonAgain({ tools: router, permissions, take }, state, call)
    }

    const loadSession = (params: acp.LoadSessionRequest, client: acp.AgentContext, signal: AbortSignal, requestId: acp.JsonRpcId) =>
      Effect.suspend(() => {
        const arrivedAt = arrivals.requestAt(requestId)
        // The client cancelled this load ($/cancel_request) before it got here: nothing is replayed.
        if (signal.aborted) return Effect.fail(acp.RequestError.requestCancelled())
        return Effect.flatMap(holdForLoad(params.sessionId, arrivedAt), (running) =>
          // A session/cancel that arrived after this load but was handled before it held the session
          // found nothing to cancel: it closes the paused turn now, as one handled during the load does.
          // (The SDK handles messages in arrival order today; this keeps the meaning if it ever does not.)
          Effect.zipRight(
            arrivals.cancelledAfter(params.sessionId, running.arrivedAt) ? cancel(params, running) : Effect.void,
            loadHeld(params, client, running, signal)
          ).pipe(
            Effect.ensuring(Effect.sync(() => {
              if (loading.get(params.sessionId) === running) loading.delete(params.sessionId)
            }))
          ))
      })

    /** A load's replay to the client, and the paused turn's calls; fails cancelled when the client cancelled the load meanwhile. */
    const replay = (client: acp.AgentContext, sessionId: string, cwd: string, policy: PermissionPolicy.Options, signal: AbortSignal) =>
      Effect.gen(function*() {
        if (sessionModes !== undefined) yield* sessionModes.configure(sessionId, policy)
        const opened = sessions.get(sessionId)
        const session: Served = opened ?? { sessionId, cwd, running: undefined, title: undefined }
        sessions.set(sessionId, session)
        // A load that does not succeed (cancelled, a store error) does not open the session on this connection.
        yield* Effect.addFinalizer((exit) => Effect.sync(() => {
          if (Exit.isFailure(exit) && opened === undefined && sessions.get(sessionId) === session) sessions.delete(sessionId)
        }))
        // The whole conversation, the user's messages included, in log order.
        const replayed = new Map<string, AcpMapper.Call>()
        let title: string | undefined
        yield* engine.replaySession({ sessionId }).pipe(
          Stream.mapError(requestErrorOf),
          Stream.runForEach((event) => {
            AcpMapper.noteCall(replayed, event)
            const updates = AcpMapper.updatesOf(event, { cwd: session.cwd, phase: "replay", support, callOf: (id) => replayed.get(id), title })
            title = Session.applyTitle(title, Session.titleChange(event))
            return Effect.flatMap(
              updatesWithImages(sessionId, event, "replay", updates),
              (shown) => Effect.forEach(shown, (update) => send(client, sessionId, update), { discard: true })
            )
          })
        )
        session.title = title
        const pending = yield* engine.pendingApprovals({ sessionId }).pipe(Effect.mapError(requestErrorOf))
        // The client cancelled this load ($/cancel_request) meanwhile: it answers cancelled and asks
        // nothing (a $/cancel_request cancels its request, not the turn): a paused turn stays paused for a later load.
        if (signal.aborted) return yield* Effect.fail(acp.RequestError.requestCancelled())
        return { pending, session }
      }).pipe(Effect.scoped)

    const loadHeld = (params: acp.LoadSessionRequest, client: acp.AgentContext, running: Running, signal: AbortSignal) =>
      Effect.gen(function*() {
        const { sessionId } = params
        // A kernel folder (`/proc`, `/sys`, `/dev`, one below them, a link there) is refused as `session/new` refuses it.
        const given = yield* asStored(params.cwd)
        const kernel = WorkingDirectory.kernelArea(given)
        if (kernel !== undefined) return yield* Effect.fail(requestErrorOf({ _tag: "InvalidInput", field: "cwd", detail: kernel }))
        const state = yield* engine.sessionState({ sessionId }).pipe(Effect.mapError(requestErrorOf))
        if (params.cwd !== state.cwd && given !== state.cwd) {
          return yield* Effect.fail(acp.RequestError.invalidParams(
            { errorCode: "cwd_mismatch", field: "cwd" },
            "a session's cwd is fixed when it is created; start a new session for another directory"
          ))
        }
        const policy = yield* policyFor(state.cwd)
        const servers = yield* mcpServersOf(params.mcpServers ?? [])
        // The servers start first (one that cannot start refuses the load) and become the session's
        // only once the load has succeeded: a load cancelled or failed mid-way stops them, and the
        // session keeps the servers it had (before, they were bound before the replay).
        const { pending, session } = yield* Pending.startThenBindOnSuccess(
          prepareServers(state.cwd, servers),
          sessionId,
          replay(client, sessionId, state.cwd, policy, signal),
          () => acp.RequestError.internalError(undefined, Pending.expectedShape)
        )
        // Another live process drives the session: its turn waits on the question it asked its own
        // client. This one is not asked (its answer could not reach that turn, and was dropped); each
        // call's card says where the question is.
        const elsewhere = pending.length > 0 && !running.cancelled ? yield* drivenElsewhere(sessionId) : undefined
        if (elsewhere !== undefined) {
          for (const call of pending) yield* send(client, sessionId, AcpMapper.askedElsewhereOf(sessionId, session.cwd, call, elsewhere))
        }
        // A session/cancel during the load closed the paused turn: nothing is left to ask.
        if (pending.length > 0 && !running.cancelled && elsewhere === undefined) {
          // Re-asked before the answer (the requests are queued for writing now), answered in the
          // background: the client may take its time, and the paused turn goes on from the answers.
          // The load's hold becomes the turn's claim in one step: no prompt gets in between.
          session.running = running
          loading.delete(sessionId)
          const reasons = yield* Effect.forEach(pending, (call) => reasonAgain(state, call))
          const asked = pending.map((call, i) => ({ call, request: permissionRequest(client, session, running, call, reasons[i]) }))
          yield* FiberSet.run(fibers, resumeAfter(client, session, running, asked))
        }
        const mode = sessionModes === undefined ? undefined : yield* sessionModes.get(sessionId)
        const modes = mode === undefined ? undefined : modeState(mode)
        return (modes === undefined ? {} : { modes }) satisfies acp.LoadSessionResponse
      })

    /** The paused turn of a loaded session: the answers, then the rest of the turn. */
    const resumeAfter = (
      client: acp.AgentContext,
      session: Served,
      running: Running,
      asked: ReadonlyArray<{ readonly call: Call; readonly request: Promise<acp.RequestPermissionResponse> }>
    ) =>
      Effect.gen(function*() {
        for (const { call, request } of asked) {
          yield* answer(session, running, call, request)
          if (running.cancelled) return
        }
        const completed = yield* drive(client, session, running, engine.resumeTurn({ sessionId: session.sessionId }).pipe(
          Stream.catchTag("NothingToResume", () => Stream.empty)
        ))
        if (completed !== undefined) {
          yield* Effect.logInfo("effect-agent acp: a resumed turn ended").pipe(Effect.annotateLogs({ sessionId: session.sessionId, stopReason: completed.stopReason }))
        }
      }).pipe(
        Effect.catchAll((error) => Effect.logWarning("effect-agent acp: a resumed turn failed", error)),
        Effect.ensuring(release(session, running))
      )

    const prompt = (params: acp.PromptRequest, client: acp.AgentContext, signal: AbortSignal, requestId: acp.JsonRpcId) =>
      Effect.gen(function*() {
        const arrivedAt = arrivals.requestAt(requestId)
        const session = yield* served(params.sessionId)
        const userMessage = AcpMapper.promptText(params.prompt)
        const images = AcpMapper.promptImages(params.prompt)
        if (Either.isLeft(images)) return yield* Effect.fail(acp.RequestError.invalidParams({ errorCode: "invalid_input", field: "prompt" }, images.left))
        if (userMessage.trim() === "" && images.right.length === 0) {
          return yield* Effect.fail(acp.RequestError.invalidParams({ errorCode: "invalid_input", field: "prompt" }, "the prompt has no text"))
        }
        // A text the model's window could never hold is refused before anything is stored: stored, it
        // would end this turn and every later one of the session `context_overflow` (the engine stores
        // what it is given, and ends a request over the window so, as the contract says).
        const over = model === undefined ? undefined : Tokens.overWindow(userMessage, model.maxContextTokens)
        if (over !== undefined) return yield* Effect.fail(acp.RequestError.invalidParams({ errorCode: "invalid_input", field: "userMessage" }, `userMessage ${over}`))
        const running = yield* claim(session, arrivedAt)
        // Cancelled before it got here, it never starts: by a session/cancel that arrived after it
        // (and was handled first), or by `$/cancel_request` — the SDK aborts the signal as it reads
        // the cancel, which can be before this handler runs, and an aborted signal fires no more.
        if (signal.aborted || arrivals.cancelledAfter(session.sessionId, arrivedAt)) {
          yield* release(session, running)
          return { stopReason: "cancelled" } satisfies acp.PromptResponse
        }
        // The client cancelling this request ($/cancel_request) or going away cancels the turn; the
        // turn then ends as it does for session/cancel.
        const onAbort = () => runFork(cancel(session, running))
        signal.addEventListener("abort", onAbort, { once: true })
        const completed = yield* drive(client, session, running, engine.runTurn({ sessionId: session.sessionId, userMessage, ...(images.right.length === 0 ? {} : { images: images.right }) })).pipe(
          Effect.ensuring(Effect.sync(() => signal.removeEventListener("abort", onAbort))),
          Effect.ensuring(release(session, running))
        )
        return yield* promptResponse(session, running, completed)
      })

    /**
     * `session/close`: its work stops as `session/cancel` stops it (a running turn, or a load's
     * paused turn, is cancelled and waited for; the prompt answers `cancelled`), then what the
     * connection holds for it is let go — its MCP servers (`releaseServers`), its mode and rules.
     * The log stays: `session/load` opens it again. A session not open here is `-32002`.
     */
    const closeSession = (params: acp.CloseSessionRequest) =>
      Effect.gen(function*() {
        const session = yield* served(params.sessionId)
        const running = session.running ?? loading.get(session.sessionId)
        if (running !== undefined) yield* cancel(session, running)
        if (sessions.get(session.sessionId) === session) sessions.delete(session.sessionId)
        if (options.releaseServers !== undefined) yield* options.releaseServers(session.sessionId)
        if (sessionModes?.forget !== undefined) yield* sessionModes.forget(session.sessionId)
        endOfInput.check()
        return {} satisfies acp.CloseSessionResponse
      })

    const setMode = (params: acp.SetSessionModeRequest) =>
      Effect.gen(function*() {
        yield* served(params.sessionId)
        if (sessionModes === undefined) return yield* Effect.fail(acp.RequestError.methodNotFound(acp.methods.agent.session.setMode))
        if (!AcpPermissions.isMode(params.modeId)) {
          return yield* Effect.fail(acp.RequestError.invalidParams({ errorCode: "unknown_mode", modeId: params.modeId }, `unknown mode ${params.modeId}`))
        }
        yield* sessionModes.set(params.sessionId, params.modeId)
        return {} satisfies acp.SetSessionModeResponse
      })

    const listSessions = (params: acp.ListSessionsRequest) =>
      Effect.gen(function*() {
        // One page holds every session, so no cursor is ever handed out.
        if (params.cursor !== undefined && params.cursor !== null) {
          return yield* Effect.fail(acp.RequestError.invalidParams({ errorCode: "invalid_cursor" }, "unknown cursor"))
        }
        const summaries = yield* engine.listSessions.pipe(Effect.mapError(requestErrorOf))
        const cwd = params.cwd === undefined || params.cwd === null ? undefined : yield* asStored(params.cwd)
        const sessions = summaries
          .filter((s) => cwd === undefined || s.cwd === cwd || s.cwd === params.cwd)
          .map((s): acp.SessionInfo => ({ sessionId: s.sessionId, cwd: s.cwd, updatedAt: s.lastActivityAt, ...(s.title === undefined ? {} : { title: s.title }) }))
        return { sessions } satisfies acp.ListSessionsResponse
      })

    const app = acp.agent({ name: options.name ?? "effect-agent" })
      .onRequest(acp.methods.agent.initialize, ({ params }) => initialize(params))
      .onRequest(acp.methods.agent.session.new, ({ params }) => handle(newSession(params)))
      .onRequest(acp.methods.agent.session.load, ({ client, params, requestId, signal }) => handle(loadSession(params, client, signal, requestId)))
      .onRequest(acp.methods.agent.session.prompt, ({ client, params, requestId, signal }) => handle(prompt(params, client, signal, requestId)))
      .onRequest(acp.methods.agent.session.setMode, ({ params }) => handle(setMode(params)))
      .onRequest(acp.methods.agent.session.close, ({ params }) => handle(closeSession(params)))
      .onRequest(acp.methods.agent.session.list, ({ params }) => handle(listSessions(params)))
      .onNotification(acp.methods.agent.session.cancel, ({ params }) => handle(cancelNotified(params.sessionId)))

    const connection = app.connect(arrivals.observe(endOfInput.observe(stream)))
    yield* Effect.addFinalizer(() => Effect.sync(() => connection.close()))
    yield* Effect.promise(() => connection.closed)
    // The client is gone: cancel what still runs (each turn stores its close), then the fiber set's
    // finalizer waits for every handler to end.
    yield* Effect.forEach(sessions.values(), (s) => (s.running === undefined ? Effect.void : cancel(s, s.running)), { discard: true, concurrency: "unbounded" })
    yield* FiberSet.awaitEmpty(fibers)
  }))

/**
 * The process's stdin and stdout as an ACP stream: stdout then carries nothing but protocol, so
 * logs must go to stderr. The SDK ends the connection when the input fails — a message over its
 * 32 MiB limit (`acp.MessageTooLargeError`), a read error — as if the client had closed it, so
 * `onInputError` is told why: the CLI exits non-zero saying so instead of silently with 0.
 */
export const stdio = (options: { readonly onInputError?: (error: unknown) => void } = {}): acp.Stream => {
  const { readable, writable } = acp.ndJsonStream(
    Writable.toWeb(process.stdout) as WritableStream<Uint8Array>,
    Readable.toWeb(process.stdin) as unknown as ReadableStream<Uint8Array>
  )
  const onInputError = options.onInputError
  if (onInputError === undefined) return { readable, writable }
  const reader = readable.getReader()
  return {
    writable,
    readable: new ReadableStream({
      pull: (controller) =>
        reader.read().then(
          ({ done, value }) => done ? controller.close() : controller.enqueue(value),
          (error: unknown) => {
            onInputError(error)
            controller.close()
          }
        ),
      cancel: (reason) => reader.cancel(reason)
    })
  }
}

/** Why the input ended the connection, in one line. */
export const inputErrorMessage = (error: unknown): string =>
  error instanceof acp.MessageTooLargeError
    ? `a message on stdin is over the ${error.maxMessageBytes / (1024 * 1024)} MiB limit of a JSON-RPC line; the connection is closed`
    : `reading stdin failed (${error instanceof Error ? error.message : String(error)}); the connection is closed`
