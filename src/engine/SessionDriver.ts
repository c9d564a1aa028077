/**
 * The driver of one session, read top-down. A *run* takes the session — one at a time — closes what
 * a crash or a store failure left open, then runs one turn after the other until nothing is left:
 *
 * 1. the turn the log holds paused, when a caller resumes it (`resumeTurn`);
 * 2. the follow-ups queued in the log, oldest first (`followUp`, or a queue a stopped process left);
 * 3. the turn a caller asked for (`runTurn`).
 *
 * Each work item is data (`Turn.Work`) made into a `Turn`, which owns one cancel state
 * (`Turn.Cancel`). What happens when a turn ends — its caller's stream, the steers and waits it
 * leaves, a store failure — is decided in one place, {@link turnEnded}; a run that stops for good
 * (a shutdown, a failed store) hands the turns it did not end to the same place.
 *
 * Writes made with no run — an answer stored to a turn paused in the log, closing such a turn, a
 * manual compaction — hold the session's lock while they work ({@link exclusive}); a run takes the
 * same lock to start, so the two never overlap. Whoever lets the session go starts the follow-ups
 * queued meanwhile ({@link wake}); queuing one never waits for anything.
 *
 * @since 0.5.0
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as FiberRef from "effect/FiberRef"
import * as HashMap from "effect/HashMap"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import * as Tracer from "effect/Tracer"
import {
  ApprovalNotPending,
  type EventStoreFailure,
  InvalidInput,
  NothingToResume,
  NoTurnInProgress,
  type SessionBusy,
  type SessionNotFound,
  TurnInProgress
} from "../domain/Errors.js"
import * as SessionState from "../domain/SessionState.js"
import type { ToolCallInput } from "../services/ToolRouter.js"
import type { DriverLock } from "./DriverLock.js"
import * as EventDraft from "./EventDraft.js"
import * as LiveSession from "./LiveSession.js"
import type { LiveSessions } from "./LiveSessions.js"
import type { Services } from "./Services.js"
import * as StartedNow from "./StartedNow.js"
import * as Subagents from "./Subagents.js"
import * as Turn from "./Turn.js"
import { TurnSink } from "./TurnSink.js"
import * as TurnDriver from "./TurnDriver.js"

/** The engine a driver works in. */
export interface Engine {
  readonly services: Services
  readonly sessions: LiveSessions
  /** Runs are fibers of this scope (the engine's): closing it stops them, as a shutdown does. */
  readonly scope: Scope.Scope
  /** Owns the runs a caller's turn starts at once (`StartedNow`), in `scope`: closing it stops them before the sessions' writer locks are let go. */
  readonly runs: StartedNow.Owner
}

/** A run: the session's driver at work. */
export interface Run {
  /** The turn that runs now (or has just ended, until the run has chosen what comes next). */
  current: Turn.Turn | undefined
  /** The turn a caller asked for and has not started: it runs after the queued follow-ups (a resumed one before them). */
  requested: Turn.Turn | undefined
}

/** Who drives a session, as the session holds it (`LiveSession.driver`); changed by this module alone. */
export interface Slot {
  /** The run under way; none while the session is idle here. */
  run: Run | undefined
  /** Why a turn open in the log with no run was left open: its errorCode once it is closed. */
  danglingReason: string
  /** Held to start a run and by each write made with no run, so that the two never overlap. */
  readonly lock: DriverLock
  /** How many hold `lock` now: the session is busy while any does. */
  holders: number
  /**
   * The follow-ups with an idempotency key being stored now, by key: the same follow-up sent again
   * meanwhile is queued once (once stored, the log answers it). Made at the first such follow-up.
   */
  queuing: Map<string, SessionState.AppliedMessage> | undefined
}

/** Whether nothing drives the session nor writes to it here: it may be let go. */
export const isIdle = (slot: Slot): boolean => slot.run === undefined && slot.holders === 0

// ---------------------------------------------------------------------------------------------
// The run, top-down

/**
 * One run of the session. A shutdown stops it between two turns, or interrupts the steps of the
 * turn that runs (the turn then closes, or stays paused in the log when it waits for the user). A
 * store failure stops it: the turns it has not run end with the failure (see {@link runEnded}).
 */
const runLoop = (engine: Engine, session: LiveSession.LiveSession, run: Run): Effect.Effect<void, EventStoreFailure> =>
  Effect.gen(function*() {
    yield* betweenTurns
    // A turn asked to resume is not dangling, whatever its subagents did meanwhile: it goes on from them.
    // Nothing open (every turn of a session that ended well): no step for it.
    if (run.requested?.work._tag !== "Resume" && leftOpen(session)) yield* closeDangling(engine, session)
    let turn = yield* nextTurn(engine, session, run)
    while (turn !== undefined) {
      yield* betweenTurns
      // Everything the turn logs names its turn (its steps run in this fiber).
      yield* annotate("turnId", turn.turnId)
      const ending = yield* TurnDriver.run(turn)
      yield* unannotate("turnId")
      // What comes next is chosen before the turn's caller hears that it ended, so that a caller who
      // goes on at once (a new turn, a compaction, a retry after a failure) finds the session as it will be.
      const next = ending._tag === "Failed" ? letGo(session, run) : yield* nextTurn(engine, session, run)
      yield* turnEnded(engine, session, turn, ending)
      if (ending._tag === "Failed") return yield* Effect.failCause(ending.cause)
      turn = next
    }
  })

/**
 * Log annotations of the run's own fiber, set and removed in it rather than scoped with
 * `Effect.annotateLogs`: a scoped annotation stays on the fiber's stack for the whole turn (about 3 KB
 * per turn in flight, bench row 21), where a set one is one entry of the fiber's annotations. The run
 * owns its fiber, and the fiber ends with it, so nothing else sees them.
 */
const annotate = (key: string, value: string): Effect.Effect<void> =>
  FiberRef.update(FiberRef.currentLogAnnotations, HashMap.set(key, value as unknown))

const unannotate = (key: string): Effect.Effect<void> => FiberRef.update(FiberRef.currentLogAnnotations, HashMap.remove(key))

/** Where a shutdown stops a run: between two turns, never inside one. */
const betweenTurns = Effect.interruptible(Effect.void)

/**
 * The next work item as a turn, made current — or none, and then the run lets the session go in
 * the same step, so that a follow-up queued right after starts a run of its own.
 */
const nextTurn = (engine: Engine, session: LiveSession.LiveSession, run: Run): Effect.Effect<Turn.Turn | undefined> =>
  Effect.suspend(() => {
    const { state } = session.live
    const requested = run.requested
    // A paused turn is open in the log: it goes first, and nothing else starts while it is open.
    if (requested?.work._tag === "Resume") return Effect.succeed(makeCurrent(run, requested))
    if (state.openTurn !== undefined) return Effect.succeed(letGo(session, run))
    const queued = state.followUps[0]
    if (queued !== undefined) {
      return Effect.map(engine.services.ids.next("turn"), (turnId) =>
        makeCurrent(run, Turn.make(engine.services, session, turnId, { _tag: "Queued", queueId: queued.queueId, content: queued.content })))
    }
    return Effect.succeed(requested === undefined ? letGo(session, run) : makeCurrent(run, requested))
  })

const makeCurrent = (run: Run, turn: Turn.Turn): Turn.Turn => {
  if (run.requested === turn) run.requested = undefined
  run.current = turn
  return turn
}

/** The run lets the session go (nothing is left to run, or the store failed). */
const letGo = (session: LiveSession.LiveSession, run: Run): undefined => {
  if (session.driver.run === run) session.driver.run = undefined
  return undefined
}

/**
 * What happens when a turn ends, in one place:
 * - steers that came too late to be stored are dropped (with a warning), and waits it never reached let go;
 * - a store failure leaves the turn open in the log — the next run closes it `event_store_failure` —
 *   and fails its caller's stream with the failure;
 * - otherwise its caller's stream ends, right after `turn.completed` (or where a shutdown left it paused);
 * - whoever waits for its end (a cancel) goes on.
 */
const turnEnded = (engine: Engine, session: LiveSession.LiveSession, turn: Turn.Turn, ending: TurnDriver.Ending): Effect.Effect<void> =>
  // One step for a turn's usual end (closed, nothing dropped): no generator, no effect per part.
  Effect.suspend(() => {
    engine.sessions.touch(session.sessionId)
    const dropped = turn.steers.splice(0).length
    turn.approvals.clear()
    // What the turn accepted and never stored is gone with it: the same message sent again is new.
    turn.accepted.clear()
    const warned = dropped > 0
      ? Effect.logWarning("steers that came as the turn closed were dropped").pipe(Effect.annotateLogs({ turnId: turn.turnId, dropped }))
      : Effect.void
    if (ending._tag === "Failed") {
      session.driver.danglingReason = "event_store_failure"
      const failure = Cause.failureOption(ending.cause)
      const forgotten = Option.isSome(failure) ? forgetIfStale(engine, session.sessionId, failure.value) : Effect.void
      return Effect.zipRight(warned, Effect.zipRight(forgotten, Effect.sync(() => ended(turn, Exit.failCause(ending.cause)))))
    }
    if (dropped > 0) return Effect.zipRight(warned, Effect.sync(() => ended(turn, Exit.void)))
    ended(turn, Exit.void)
    return Effect.void
  })

/** The turn's stream ends as `exit` says, after what was handed over; then whoever waits for the turn's end goes on. */
const ended = (turn: Turn.Turn, exit: Exit.Exit<void, EventStoreFailure>): void => {
  turn.sink?.endWith(exit)
  Deferred.unsafeDone(turn.ended, Exit.void)
}

/**
 * What happens when a run stops for good: it lets the session go, and the turns it did not end — a
 * shutdown stopped it between turns, the store failed as it closed what a crash left open — end as
 * turns do, without having started.
 */
const runEnded = (engine: Engine, session: LiveSession.LiveSession, run: Run, exit: Exit.Exit<void, EventStoreFailure>): Effect.Effect<void> =>
  Effect.gen(function*() {
    letGo(session, run)
    const ending: TurnDriver.Ending = Exit.isSuccess(exit) || Cause.isInterruptedOnly(exit.cause)
      ? { _tag: "NotStarted" }
      : { _tag: "Failed", cause: exit.cause }
    for (const turn of [run.current, run.requested]) {
      if (turn !== undefined && !(yield* Deferred.isDone(turn.ended))) yield* turnEnded(engine, session, turn, ending)
    }
  })

/**
 * Starts a run in the engine's scope, for `requested` (a caller's turn) or for the queue alone. The
 * run is uninterruptible but where it says ({@link betweenTurns}, and a turn's wait for its steps),
 * and its fiber starts so (it is forked from an uninterruptible region): its end is always dealt
 * with, even when the engine shuts down before the fiber has taken a step.
 *
 * A caller's turn starts at once (`StartedNow`): the run's fiber runs in this step until its first
 * wait, so the turn has stored its start — and a response read whole (scripted, cached), the
 * response — before the caller takes its first events: neither the run's start nor the caller's
 * first take is a round of the scheduler across every turn in flight (bench row 21). `request`
 * holds the session's lock meanwhile; the run never takes it, and what it may call that would
 * (`wake`, `exclusive`) gives up or waits for it, as with any holder. The queue's run (`wake`)
 * starts on the scheduler's next turn, as before: a follow-up's sender is not made to run its turn.
 */
const startRun = (engine: Engine, session: LiveSession.LiveSession, requested?: Turn.Turn): Effect.Effect<void> =>
  Effect.uninterruptible(Effect.suspend(() => {
    const run: Run = { current: undefined, requested }
    session.driver.run = run
    const loop = Effect.zipRight(annotate("sessionId", session.sessionId), runLoop(engine, session, run))
    const program = Effect.uninterruptible(Effect.onExit(loop, (exit) => runEnded(engine, session, run, exit)))
    return requested === undefined ? Effect.asVoid(Effect.forkIn(program, engine.scope)) : engine.runs.forkIn(program)
  }))

/**
 * Closes what the log holds open with no run behind it: a compaction a stopped process left (closed
 * `compaction.failed {interrupted}`: the context is as it was before it), and a turn left open by a
 * crash or a store failure — its compaction, its open calls, then the turn, with the reason it was
 * left open. A turn paused on the user's answer is not dangling: it waits to be resumed — nor is one
 * whose `task` calls wait on subagents that wait (see `Subagents.treeWaits`); the `task` calls of
 * one whose subagents do not wait end as their subagents did (`Subagents.settle`) before it closes.
 */
export const closeDangling = (engine: Engine, session: LiveSession.LiveSession): Effect.Effect<void, EventStoreFailure> =>
  Effect.gen(function*() {
    const { state } = session.live
    const { compaction, openTurn: open } = state
    if (open === undefined && compaction !== undefined) {
      yield* Effect.logWarning("closing a compaction left open").pipe(
        Effect.annotateLogs({ sessionId: session.sessionId, compactionId: compaction.compactionId })
      )
      yield* LiveSession.commit(engine.services, session, undefined, [EventDraft.compactionFailed(compaction.compactionId, "interrupted")])
    }
    if (open === undefined || (yield* waits(engine, state))) return
    const errorCode = session.driver.danglingReason
    yield* Effect.logWarning("closing a turn left open").pipe(Effect.annotateLogs({ sessionId: session.sessionId, turnId: open.turnId, errorCode }))
    const commit = Turn.commitTo(engine.services, session, open.turnId)
    yield* Subagents.settle(engine.services, session, commit)
    yield* TurnDriver.closeUndriven(engine.services, session, commit, { stopReason: "error", errorCode })
    session.driver.danglingReason = "interrupted"
  })

/** Whether the log holds a turn or a compaction open (what {@link closeDangling} looks at). */
const leftOpen = (session: LiveSession.LiveSession): boolean => {
  const { state } = session.live
  return state.openTurn !== undefined || state.compaction !== undefined
}

/** Whether the open turn waits — on the user, or on subagents that wait — rather than being left open by a crash. */
const waits = (engine: Engine, state: SessionState.SessionState): Effect.Effect<boolean> =>
  SessionState.isPaused(state) ? Effect.succeed(true) : Subagents.treeWaits(engine.services, state)

// ---------------------------------------------------------------------------------------------
// What callers ask of the driver

/**
 * Runs `effect` holding the session's lock (waiting for it), counted as busy meanwhile, in one
 * region. A free lock (the usual case: once per turn) is taken and let go without an effect of its
 * own (`DriverLock`).
 */
const holding = <A, E>(session: LiveSession.LiveSession, effect: Effect.Effect<A, E>): Effect.Effect<A, E> =>
  Effect.uninterruptibleMask((restore) => {
    const { lock } = session.driver
    return lock.tryTake() ? held(session, restore(effect)) : Effect.flatMap(restore(lock.take()), () => held(session, restore(effect)))
  })

/** `effect` run by the lock's holder, counted as busy; the lock let go however it ends. In the holder's uninterruptible region. */
const held = <A, E>(session: LiveSession.LiveSession, effect: Effect.Effect<A, E>): Effect.Effect<A, E> => {
  const { driver } = session
  driver.holders++
  const letGo = () => {
    driver.holders--
    driver.lock.release()
  }
  return Effect.matchCauseEffect(effect, {
    onFailure: (cause) => {
      letGo()
      return Effect.failCause(cause)
    },
    onSuccess: (value) => {
      letGo()
      return Effect.succeed(value)
    }
  })
}

/** The id a `TurnInProgress` names: the turn running or asked for, else the turn open in the log. */
const busyTurnId = (session: LiveSession.LiveSession): string => {
  const run = session.driver.run
  return run?.current?.turnId ?? run?.requested?.turnId ?? session.live.state.openTurn?.turnId ?? session.live.state.lastTurn?.turnId ?? "queued"
}

/**
 * Asks for a turn whose events the caller reads from the returned turn's `sink`: a new one, or the
 * turn the log holds paused, resumed. Fails `TurnInProgress` while a turn runs or waits to run (a
 * paused one included, for a new turn); waits while a write made with no run (a manual compaction)
 * works. The turn runs in the session's run, after the follow-ups queued before it, or starts one.
 * A turn left open by a crash is closed instead of resumed: then there is `NothingToResume`.
 */
export function request(
  engine: Engine,
  session: LiveSession.LiveSession,
  work: Extract<Turn.Work, { readonly _tag: "New" }>
): Effect.Effect<Turn.Turn, TurnInProgress | EventStoreFailure>
export function request(
  engine: Engine,
  session: LiveSession.LiveSession,
  work: Extract<Turn.Work, { readonly _tag: "Resume" }>
): Effect.Effect<Turn.Turn, TurnInProgress | NothingToResume | EventStoreFailure>
export function request(
  engine: Engine,
  session: LiveSession.LiveSession,
  work: Extract<Turn.Work, { readonly _tag: "New" | "Resume" }>
): Effect.Effect<Turn.Turn, TurnInProgress | NothingToResume | EventStoreFailure> {
  return holding(session, Effect.gen(function*() {
    const { sessionId } = session
    const run = session.driver.run
    if (run?.current !== undefined || run?.requested !== undefined) return yield* new TurnInProgress({ sessionId, turnId: busyTurnId(session) })
    const { state } = session.live
    const open = state.openTurn
    let turnId: string
    if (work._tag === "New") {
      if (open !== undefined && (yield* waits(engine, state))) return yield* new TurnInProgress({ sessionId, turnId: open.turnId })
      turnId = yield* engine.services.ids.next("turn")
    } else {
      // A turn waiting on its subagents resumes whatever they did meanwhile (ended, or left open by a crash).
      if (open !== undefined && !SessionState.isWaiting(state) && run === undefined) yield* closeDangling(engine, session)
      if (open === undefined || !SessionState.isWaiting(state)) return yield* new NothingToResume({ sessionId })
      turnId = open.turnId
    }
    // The turn's events go to the caller's stream; its span is a child of the caller's.
    // The context's parent span as `Effect.currentParentSpan` reads it, without its failure when none to undo (`Effect.option`).
    const span = Option.getOrUndefined(yield* Effect.serviceOption(Tracer.ParentSpan))
    const turn = Turn.make(engine.services, session, turnId, work, { sink: new TurnSink(), span })
    // A resumed turn's waits are registered before it runs, so an answer given right away is never lost.
    for (const call of work._tag === "Resume" ? SessionState.pendingApprovals(state) : []) {
      turn.approvals.set(call.toolCallId, yield* Deferred.make<Turn.UserDecision>())
    }
    // A run between two turns takes it as its requested turn; otherwise it starts one.
    if (run !== undefined) run.requested = turn
    else yield* startRun(engine, session, turn)
    return turn
  }))
}

/**
 * The caller reading `turn`'s stream went away: a turn not started yet is withdrawn (and the queued
 * follow-up's turn running before it, for it, is cancelled); a started one is cancelled. Returns once
 * what it cancelled has ended.
 */
export const abandon = (session: LiveSession.LiveSession, turn: Turn.Turn): Effect.Effect<void> =>
  Effect.suspend(() => {
    const run = session.driver.run
    if (run === undefined || run.requested !== turn) return cancelAndWait(turn)
    run.requested = undefined
    const withdrawn = Effect.zipRight(Effect.ignore(turn.sink?.end ?? Effect.void), Deferred.done(turn.ended, Exit.void))
    return run.current === undefined ? withdrawn : Effect.zipRight(withdrawn, cancelAndWait(run.current))
  })

const cancelAndWait = (turn: Turn.Turn): Effect.Effect<void> => Effect.zipRight(turn.cancel.request, Deferred.await(turn.ended))

/**
 * Cancels the turn running — or asked for and not started yet — in the session (only the one named
 * `turnId`, when given) and returns once it has ended. A turn paused in the log with no run is closed
 * `cancelled` (when another process drives the session, it is left alone and a warning logged). Does
 * nothing when no turn runs; never fails.
 */
export const cancel = (engine: Engine, sessionId: string, turnId?: string): Effect.Effect<void> =>
  Effect.suspend(() => {
    // A turn that runs here runs on a session held, with its writer lock: found as it is, without a
    // load or a catch-up to ask for (what `get` answers for it, in a step and a generator fewer).
    const held = engine.sessions.loaded(sessionId)
    const running = held === undefined ? undefined : runningTurn(held, turnId)
    if (running === undefined) return cancelNotRunning(engine, sessionId, turnId)
    engine.sessions.touch(sessionId)
    return cancelAndWait(running)
  })

/** {@link cancel} of a session with no turn running here: one asked for meanwhile, or one paused in the log. */
const cancelNotRunning = (engine: Engine, sessionId: string, turnId: string | undefined): Effect.Effect<void> =>
  Effect.gen(function*() {
    const found = yield* Effect.option(engine.sessions.get(sessionId))
    if (Option.isNone(found)) return
    const target = runningTurn(found.value, turnId)
    if (target !== undefined) return yield* cancelAndWait(target)
    const { state } = found.value.live
    if (state.openTurn === undefined || !SessionState.isWaiting(state)) return
    // Closing a paused turn is a write: it needs the session's writer lock.
    const writable = yield* Effect.either(engine.sessions.writable(sessionId))
    if (Either.isLeft(writable)) {
      return yield* Effect.logWarning("could not cancel the paused turn", writable.left.message).pipe(Effect.annotateLogs({ sessionId }))
    }
    const session = writable.right
    yield* exclusive(engine, session, Effect.suspend(() => {
      const { state } = session.live
      const open = state.openTurn
      if (open === undefined || !SessionState.isWaiting(state) || (turnId !== undefined && turnId !== open.turnId)) return Effect.void
      const commit = Turn.commitTo(engine.services, session, open.turnId)
      // A cancel cascades: the subagents it waits on are cancelled first, each in its own log.
      return Effect.zipRight(Subagents.cancelWaiting(engine.services, session, commit), TurnDriver.closeUndriven(engine.services, session, commit, { stopReason: "cancelled" }))
    })).pipe(
      // A run took the session meanwhile: its turn is the one to cancel.
      Effect.catchTag("TurnInProgress", () => {
        const turn = runningTurn(session, turnId)
        return turn === undefined ? Effect.void : cancelAndWait(turn)
      }),
      Effect.catchTag("EventStoreFailure", (e) =>
        forgetIfStale(engine, sessionId, e).pipe(
          Effect.zipRight(Effect.logWarning("could not store the cancellation of a paused turn", e.message).pipe(Effect.annotateLogs({ sessionId })))
        ))
    )
  })

/** The turn running, else the one asked for; only the one named `turnId` when given. */
const runningTurn = (session: LiveSession.LiveSession, turnId: string | undefined): Turn.Turn | undefined => {
  const run = session.driver.run
  return [run?.current, run?.requested].find((turn) => turn !== undefined && (turnId === undefined || turn.turnId === turnId))
}

// ---------------------------------------------------------------------------------------------
// Messages applied once: what a message sent with an idempotency key did

/**
 * What the message sent with `key` did: as the log holds it (`SessionState.applied`), else as it
 * was accepted and is not stored yet — a follow-up being stored, a steer waiting for its step
 * boundary, an answer handed to a waiting call. None without a key, or for a key not seen.
 */
const applied = (session: LiveSession.LiveSession, key: string | undefined): SessionState.AppliedMessage | undefined => {
  if (key === undefined) return undefined
  const run = session.driver.run
  return SessionState.findApplied(session.live.state, key) ?? session.driver.queuing?.get(key) ?? run?.current?.accepted.get(key) ??
    run?.requested?.accepted.get(key)
}

/** A key already used by another message of the session (another kind, or another call's answer): the caller reused it. */
const keyReused = (sessionId: string) =>
  new InvalidInput({ field: "idempotencyKey", detail: `was already used by another message of session ${sessionId}` })

/**
 * Hands a message to the turn running now, to be stored at its next step boundary. Fails
 * `NoTurnInProgress` when no turn runs, or the one running has decided how it ends (or is
 * cancelled): a steer then is refused rather than accepted and never stored. A steer sent again with
 * its key — stored already, or waiting for its step boundary — is accepted and changes nothing
 * (whether or not a turn runs now): it never goes to another turn. With `turnId`, only that turn
 * takes it: checked in the same step that hands it over, so a turn that ended meanwhile never
 * passes its steer on to the next one.
 */
export const steer = (
  session: LiveSession.LiveSession,
  message: Turn.Steer,
  turnId?: string
): Effect.Effect<void, NoTurnInProgress | InvalidInput> =>
  Effect.suspend((): Effect.Effect<void, NoTurnInProgress | InvalidInput> => {
    const key = message.idempotencyKey
    const earlier = applied(session, key)
    if (earlier !== undefined) return earlier._tag === "TurnSteered" ? Effect.void : Effect.fail(keyReused(session.sessionId))
    const turn = session.driver.run?.current
    if (turn === undefined || turn.cancel.state !== "running" || (turnId !== undefined && turn.turnId !== turnId)) {
      return Effect.fail(new NoTurnInProgress({ sessionId: session.sessionId }))
    }
    turn.steers.push(message)
    if (key !== undefined) turn.accepted.set(key, { _tag: "TurnSteered", key, turnId: turn.turnId })
    return Effect.void
  })

/**
 * Queues a follow-up (`followup.queued`) and returns its queue id once stored; the session's run
 * takes it when the session is idle ({@link wake}), never making this wait. Sent again with a key
 * the log holds (or a follow-up being stored now holds), it answers that follow-up's queue id and
 * queues nothing — and wakes the session, since a process that stopped may have stored it and never
 * started it.
 */
export const followUp = (
  engine: Engine,
  session: LiveSession.LiveSession,
  message: { readonly content: string; readonly idempotencyKey?: string | undefined }
): Effect.Effect<string, EventStoreFailure | InvalidInput> =>
  Effect.gen(function*() {
    const { content, idempotencyKey: key } = message
    const queueId = yield* engine.services.ids.next("queue")
    // Checked and claimed in one step: the same follow-up sent twice at once is queued once.
    const earlier = applied(session, key)
    if (earlier !== undefined && earlier._tag !== "FollowUpQueued") return yield* keyReused(session.sessionId)
    if (earlier === undefined) {
      if (key !== undefined) (session.driver.queuing ??= new Map()).set(key, { _tag: "FollowUpQueued", key, queueId })
      yield* LiveSession.commit(engine.services, session, undefined, [EventDraft.followUpQueued(queueId, content, key)]).pipe(
        Effect.tapError((failure) => forgetIfStale(engine, session.sessionId, failure)),
        Effect.ensuring(Effect.sync(() => key !== undefined && session.driver.queuing?.delete(key)))
      )
    }
    yield* wake(engine, session)
    return earlier?.queueId ?? queueId
  })

/**
 * Hands the user's answer to a turn of the run waiting for it; false when none waits. An answer with
 * a key is the turn's accepted message until the turn stores it.
 */
const deliver = (session: LiveSession.LiveSession, toolCallId: string, answer: Turn.UserDecision): Effect.Effect<boolean> =>
  Effect.suspend(() => {
    const run = session.driver.run
    for (const turn of [run?.current, run?.requested]) {
      const waiting = turn?.approvals.get(toolCallId)
      if (turn === undefined || waiting === undefined) continue
      const key = answer.idempotencyKey
      if (key !== undefined) turn.accepted.set(key, { _tag: "PermissionResolved", key, toolCallId })
      return Effect.tap(Deferred.succeed(waiting, answer), (delivered) => Effect.sync(() => delivered || key === undefined || turn.accepted.delete(key)))
    }
    return Effect.succeed(false)
  })

/**
 * Answers a call paused on `ask`: a turn waiting for it here goes on with the answer; a turn paused
 * in the log (its process stopped while it waited) has the answer stored now (`permission.resolved
 * {actor: "user"}`), and `resumeTurn` goes on from it. `remember` stores the scope of the call
 * (`scopeOf`). Fails `ApprovalNotPending` when no call with that id waits — unless the answer
 * carries a key the session has seen with this call's answer (stored, or handed to the waiting
 * call): then it succeeds, changing nothing. A key seen with another message fails `InvalidInput`.
 */
export const answer = (
  engine: Engine,
  sessionId: string,
  toolCallId: string,
  answer: Turn.UserDecision,
  scopeOf: (call: ToolCallInput, cwd: string) => Effect.Effect<string>
): Effect.Effect<void, ApprovalNotPending | SessionNotFound | EventStoreFailure | SessionBusy | InvalidInput> =>
  Effect.gen(function*() {
    const key = answer.idempotencyKey
    /** Whether this answer was given already (stored, or handed to the waiting call): then nothing is done again. */
    const given = (session: LiveSession.LiveSession): Effect.Effect<boolean, InvalidInput> => {
      const earlier = applied(session, key)
      if (earlier === undefined) return Effect.succeed(false)
      return earlier._tag === "PermissionResolved" && earlier.toolCallId === toolCallId ? Effect.succeed(true) : Effect.fail(keyReused(sessionId))
    }
    const givenOrDelivered = (session: LiveSession.LiveSession) =>
      Effect.flatMap(given(session), (done) => done ? Effect.succeed(true) : deliver(session, toolCallId, answer))
    // Only a run of this engine waits for the answer here, and a run holds the writer lock. A session
    // held without it is caught up once, by taking the lock (a read first would look at the log's end
    // twice); one not held is loaded first, so an unknown session fails before any lock is taken.
    const heldToRead = engine.sessions.has(sessionId) && !engine.sessions.holdsWriter(sessionId)
    if (!heldToRead && (yield* givenOrDelivered(yield* engine.sessions.get(sessionId)))) return
    // Storing the answer is a write: it needs the session's writer lock (a waiting run has it already).
    const session = yield* engine.sessions.writable(sessionId).pipe(
      // Another process drives the session: an answer it stored already, with this key, is given.
      Effect.catchTag("SessionBusy", (busy) =>
        Effect.flatMap(Effect.flatMap(engine.sessions.get(sessionId), given), (done) => done ? Effect.succeed(undefined) : Effect.fail(busy)))
    )
    // Taking the lock reloads the session: a run resumed meanwhile may wait on the reloaded one.
    if (session === undefined || (yield* givenOrDelivered(session))) return
    yield* exclusive(engine, session, Effect.gen(function*() {
      if (yield* given(session)) return
      const { state } = session.live
      const call = SessionState.pendingApprovals(state).find((c) => c.toolCallId === toolCallId)
      if (call === undefined || state.openTurn === undefined) return yield* new ApprovalNotPending({ sessionId, toolCallId })
      const scope = answer.remember ? yield* scopeOf({ toolCallId, tool: call.tool, args: call.args }, state.cwd) : undefined
      yield* Turn.commitTo(engine.services, session, state.openTurn.turnId)([
        EventDraft.permissionResolved({
          toolCallId,
          decision: answer.decision,
          actor: "user",
          ...(scope === undefined ? {} : { remember: true, scope }),
          ...(key === undefined ? {} : { idempotencyKey: key })
        })
      ])
    })).pipe(
      // A run started while this waited for the lock: its waits are registered by now.
      Effect.catchTag("TurnInProgress", () =>
        Effect.flatMap(givenOrDelivered(session), (done) => done ? Effect.void : new ApprovalNotPending({ sessionId, toolCallId }))),
      Effect.tapErrorTag("EventStoreFailure", (e) => forgetIfStale(engine, sessionId, e))
    )
  })

/**
 * Runs a write made with no run — storing an answer to a turn paused in the log, closing one, a
 * manual compaction — holding the session's lock: it fails `TurnInProgress` when a run drives the
 * session, and no run starts until it has ended. Then the follow-ups queued meanwhile start.
 */
export const exclusive = <A, E>(engine: Engine, session: LiveSession.LiveSession, write: Effect.Effect<A, E>): Effect.Effect<A, E | TurnInProgress> =>
  holding(session, Effect.suspend((): Effect.Effect<A, E | TurnInProgress> =>
    session.driver.run === undefined ? write : Effect.fail(new TurnInProgress({ sessionId: session.sessionId, turnId: busyTurnId(session) }))
  )).pipe(Effect.ensuring(wake(engine, session)))

/**
 * Starts a run for the follow-ups queued in the session when it is idle here. Never waits: while a
 * run or a write made with no run holds the session, it does nothing — they wake the session
 * themselves when they let it go.
 */
export const wake = (engine: Engine, session: LiveSession.LiveSession): Effect.Effect<void> =>
  // The mask's body runs when the effect does: the lock is looked at then.
  Effect.uninterruptibleMask((restore) =>
    session.driver.lock.tryTake()
      ? held(session, restore(Effect.suspend(() => {
        const { state } = session.live
        const runnable = state.followUps.length > 0 && (state.openTurn === undefined || !SessionState.isPaused(state))
        return session.driver.run === undefined && runnable ? startRun(engine, session) : Effect.void
      })))
      : Effect.void
  )

/**
 * Another writer moved the session on (a second process, on a shared store): what this engine holds
 * of it is stale. It is forgotten, so the next operation loads it again from the store.
 */
export const forgetIfStale = (engine: Engine, sessionId: string, failure: EventStoreFailure): Effect.Effect<void> =>
  failure.reason === "sequence_conflict"
    ? Effect.sync(() => engine.sessions.forget(sessionId)).pipe(
      Effect.zipRight(Effect.logWarning("the session was changed by another writer; it will be reloaded").pipe(Effect.annotateLogs({ sessionId })))
    )
    : Effect.void
