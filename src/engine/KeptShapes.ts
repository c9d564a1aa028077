/**
 * One live object of each short-lived shape a turn's hot path makes — effect's run loop and data, and
 * the engine's own per-session and per-turn objects — held for as long as the process runs, so that
 * V8 keeps those shapes' hidden classes (maps).
 *
 * Why: these objects are built by adding fields to a fresh instance (class fields, or
 * `Object.create` then assignments), and V8 reaches the maps that result only through its transition
 * tree, which it holds weakly. When no such object is alive at a major GC — every one of them dies
 * with the step, turn or session that made it — the maps go, and every TurboFan code that embedded them is thrown away
 * ("marking dependent code … reason: weak objects" under `--trace-deopt`). The next turn then runs
 * effect's run loop unoptimized and compiles it again on V8's helper threads, which share the
 * machine's cores with the main thread: after a major GC, a cancel (bench row 7) took about twice the
 * CPU. One object of each keeps its map, and the code with it (docs/benchmarks.md, "cancel8").
 *
 * The same holds after a turn: a process between turns (an embedder's `runPromise` per turn, a server
 * gone idle, whose idle-time GC is a major one) has no fiber, turn or response alive, and a full GC
 * took row 1's code of the run loop, the transcript's fold, the commit and the turn's sink with it —
 * about 40 TurboFan compiles a 10,000-delta turn, about 27 with these kept (docs/benchmarks.md, "perf62core").
 *
 * Nothing here changes what effect or the engine does: these are their own constructors, called once.
 *
 * @since 0.10.0
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import * as FiberId from "effect/FiberId"
import * as FiberStatus from "effect/FiberStatus"
import * as Hash from "effect/Hash"
import * as Mailbox from "effect/Mailbox"
import * as RuntimeFlags from "effect/RuntimeFlags"
import type * as Tracer from "effect/Tracer"
import * as SessionState from "../domain/SessionState.js"
import * as ModelProvider from "../services/ModelProvider.js"
import * as EventDraft from "./EventDraft.js"
import * as LiveSession from "./LiveSession.js"
import { LiveTranscript } from "./LiveTranscript.js"
import * as ModelResponse from "./ModelResponse.js"
import * as Services from "./Services.js"
import { Cancel } from "./Turn.js"
import { TurnSink } from "./TurnSink.js"

let kept: ReadonlyArray<unknown> | undefined
let parked: Fiber.RuntimeFiber<void> | undefined

/** The fiber `hold` parked, once it has run: one of `Fiber.roots` for the process's life. */
export const parkedFiber = (): Fiber.RuntimeFiber<void> | undefined => parked

/**
 * Makes the objects once and keeps them. Called by the engine as it is made (a call, not a
 * module-level value, so that a bundler keeps it). Answers how many objects are kept.
 */
export const hold = (): number => {
  if (kept === undefined) {
    const interrupted = Cause.interrupt(FiberId.none)
    kept = [
      // Every `withFiberRuntime` step makes one (`FiberStatus.running`): the most re-optimized code after a GC.
      FiberStatus.running(RuntimeFlags.none),
      // An interruption's cause, alone and combined, and the exit it ends a fiber with.
      interrupted,
      Cause.sequential(interrupted, interrupted),
      Exit.failCause(interrupted),
      // `yield*` of an effect in `Effect.gen`.
      Effect.void[Symbol.iterator](),
      // A fiber (`FiberRuntime`, whose map every step of the run loop checks) parked for good inside an
      // uninterruptible region, so its stack holds the region's `RevertFlags` frames: with no fiber alive at a
      // major GC — a process between two `runPromise` turns — the run loop's code went (perf62core). It
      // waits on nothing (no timer, no handle): it neither keeps the process alive nor ever runs again. It
      // is one of `Fiber.roots`, so it waits interruptibly (`restore`): an embedder's shutdown that
      // interrupts every root ends (until December 2026 it waited uninterruptibly, and that never returned).
      (parked = Effect.runFork(Effect.uninterruptibleMask((restore) => Effect.flatMap(restore(Effect.async<void>(() => {})), () => Effect.void)))),
      // A chunk of an array and one of a single piece (the shapes a pull of one delta hands over), and a buffer.
      Chunk.unsafeFromArray([0, 1]),
      Chunk.of(0),
      Effect.runSync(Mailbox.make<never>()),
      hashedFiberId(),
      ...spanShapes(),
      ...engineShapes()
    ]
  }
  return kept.length
}

/**
 * A fiber's id once hashed: `Hash.hash` caches the hash on the id itself (a property added to it),
 * which gives the id a map of its own, reached only through V8's transition tree. Ids are hashed when
 * they go into effect's hashed sets (an interruption's, a scope's); a span's step compares the fiber's
 * id with its ref's (`FiberRefs`' `unsafeUpdateAs`). With no hashed id alive at a full GC, the map
 * went, the next one hashed got a new one, and the code that had seen the old one was deoptimized
 * ("wrong map") at every turn of bench row 19 (docs/benchmarks.md, "perf63steps").
 */
const hashedFiberId = (): FiberId.FiberId => {
  const id = FiberId.make(0, 0)
  Hash.hash(id)
  return id
}

/**
 * A span of effect's default (native) tracer, as the engine's spans are made (`OwnedSpan`): one still
 * started and one ended, each with a parent (an `Option.some`) and an attribute. A span's fields are
 * added to a fresh instance, so its map was reached only through V8's transition tree: a tool step
 * makes 7 spans and keeps none, and with no span alive at a full GC (bench row 19: a fresh engine a
 * turn, a `gc()` before each) the code of `attribute`, `makeSpan` and the tracer's `span` was thrown
 * away at every turn (docs/benchmarks.md, "perf63steps"). Made by the default tracer, not an
 * embedder's: no span of this reaches anything but this list.
 */
const spanShapes = (): ReadonlyArray<Tracer.Span> => {
  const [parent, started, ended] = Effect.runSync(Effect.flatMap(
    Effect.makeSpan("KeptShapes", { captureStackTrace: false }),
    (parent) =>
      Effect.all([
        Effect.succeed(parent),
        Effect.makeSpan("KeptShapes", { captureStackTrace: false, parent }),
        Effect.makeSpan("KeptShapes", { captureStackTrace: false, parent })
      ])
  ))
  for (const span of [started, ended]) span.attribute("kept", true)
  ended.end(BigInt(0), Exit.void)
  return [parent, started, ended]
}

/** A `model.delta` event made before its commit, then given its sequence, timestamp and id as the commit gives them. */
const madeDelta = (sessionId: string, at: string): LiveSession.Made => {
  const made = LiveSession.madeEvent(sessionId, "kept", "model.delta", { text: "" })
  made.sequence = 2
  made.timestamp = at
  made.id = ""
  return made
}

/**
 * The engine's own per-session and per-turn objects, one of each: a session (its transcript, its
 * lock, its view), a commit's fold, a turn's sink, and a `model.delta` draft and event as the
 * commit builds them.
 */
const engineShapes = (): ReadonlyArray<unknown> => {
  const at = new Date(0).toISOString()
  const state = SessionState.fromCreated({ id: "", sessionId: "kept", sequence: 1, timestamp: at, type: "session.created", payload: { cwd: "/", client: "cli" } })
  const session = LiveSession.make(state, new LiveTranscript())
  const draft = EventDraft.modelDelta("")
  // A turn's cancellation once its state has been written: the post-cancel guard reads it a batch, and
  // with no turn alive at a full GC its shape went with the turn's, so the next turn's guard was
  // compiled on a field V8 took for constant and thrown away at the turn's end (perf64core).
  const cancel = new Cancel()
  cancel.close()
  return [
    cancel,
    session,
    session.live,
    new SessionState.Folder(state),
    new TurnSink(),
    LiveSession.eventOf(state.sessionId, "kept", 2, at, draft.type, draft.payload),
    // A response's delta as its reading makes it and its commit finishes it (`LiveSession.madeEvent`,
    // `commitMade`): its sequence, timestamp and id written after it was made, as every one of them is
    // (perf65stream). Without one alive at a full GC, the read of a piece, which makes them, was thrown away.
    madeDelta(state.sessionId, at),
    // A response's reading, and the pieces the adapters hand over most (a text delta, a finish with
    // and without usage): after a full GC with none alive, the reading's code of a piece was thrown away
    // and compiled again for each turn's first response, and left again at its finish (perf63core).
    ModelResponse.keptReading(Services.defaultOptions),
    ModelProvider.textDelta(""),
    ModelProvider.finish("stop"),
    ModelProvider.finish("stop", { inputTokens: 0, outputTokens: 0 })
  ]
}
