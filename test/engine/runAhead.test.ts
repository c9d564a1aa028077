/**
 * A response's stream run ahead into its buffer (`ModelProvider.runAhead`): every piece in order,
 * however the stream chunks it, a buffer too small for a chunk holding the stream back until the
 * reader makes room (the rest of the chunk offered before the next pull), the end and a failure
 * passed on, and a stream that hands everything over at once read whole before the reader takes.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Stream from "effect/Stream"
import { runAhead, type RunAhead } from "../../src/services/ModelProvider.js"

/** Everything the reader takes, with `takeAll`, until the end (or the failure, as an exit). */
const readAll = <A, E>(started: RunAhead<A, E>) =>
  Effect.gen(function*() {
    const seen: Array<A> = []
    const takes: Array<number> = []
    for (;;) {
      const [chunk, done] = yield* started.arrived.takeAll
      seen.push(...Chunk.toReadonlyArray(chunk))
      takes.push(chunk.length)
      if (done) return { seen, takes }
    }
  })

describe("runAhead", () => {
  it.scoped("a stream handing everything over at once is read whole as it starts, every piece in order", () =>
    Effect.gen(function*() {
      const items = Array.from({ length: 100 }, (_, i) => i)
      const started = yield* runAhead(Stream.fromIterable(items).pipe(Stream.rechunk(1)), 4096)
      expect(started.whole).toBe(true)
      const { seen, takes } = yield* readAll(started)
      expect(seen).toEqual(items)
      expect(takes[0]).toBe(100)
    }))

  it.scoped("a buffer too small holds the stream back: the rest of a chunk waits for room, nothing is lost or reordered", () =>
    Effect.gen(function*() {
      // Chunks of 7 into a buffer of 3: each chunk is taken in part, the rest offered (waiting) before the next pull.
      const items = Array.from({ length: 50 }, (_, i) => i)
      const started = yield* runAhead(Stream.fromIterable(items).pipe(Stream.rechunk(7)), 3)
      expect(started.whole).toBe(false)
      const { seen, takes } = yield* readAll(started)
      expect(seen).toEqual(items)
      expect(Math.max(...takes)).toBeLessThanOrEqual(3)
    }))

  it.scoped("a failure after some pieces reaches the reader after them", () =>
    Effect.gen(function*() {
      const stream = Stream.concat(Stream.make(1, 2, 3).pipe(Stream.rechunk(1)), Stream.fail("broken" as const))
      const started = yield* runAhead(stream, 4096)
      const seen: Array<number> = []
      const exit = yield* Effect.exit(Effect.forever(Effect.flatMap(started.arrived.takeAll, ([chunk]) => Effect.sync(() => seen.push(...chunk)))))
      expect(seen).toEqual([1, 2, 3])
      expect(exit).toStrictEqual(Exit.fail("broken"))
    }))

  it.scoped("a failure while the buffer is full comes after what the buffer held back", () =>
    Effect.gen(function*() {
      const stream = Stream.concat(Stream.fromIterable([1, 2, 3, 4, 5, 6, 7]).pipe(Stream.rechunk(7)), Stream.fail("broken" as const))
      const started = yield* runAhead(stream, 2)
      const seen: Array<number> = []
      const exit = yield* Effect.exit(Effect.forever(Effect.flatMap(started.arrived.takeAll, ([chunk]) => Effect.sync(() => seen.push(...chunk)))))
      expect(seen).toEqual([1, 2, 3, 4, 5, 6, 7])
      expect(exit).toStrictEqual(Exit.fail("broken"))
    }))
})

/**
 * perf65steps: a response read to its end leaves its channel executor unclosed — what closing it would
 * run, the stream's own finalizers, has run as the stream ended. A stream not read to its end (left
 * early, failed) is still closed with the scope, its finalizers run then.
 */
describe("runAhead, the stream's finalizers", () => {
  const finalized = () => {
    const log: Array<string> = []
    const fin = (name: string) => Effect.sync(() => void log.push(name))
    return { log, fin }
  }

  it.effect("a stream read to its end has run its own finalizers before its end is taken, however it holds them", () =>
    Effect.gen(function*() {
      const { fin, log } = finalized()
      const streams = [
        Stream.make(1, 2).pipe(Stream.ensuring(fin("ensuring"))),
        Stream.acquireRelease(Effect.succeed(1), () => fin("acquireRelease")),
        Stream.unwrapScoped(Effect.as(Effect.acquireRelease(Effect.void, () => fin("unwrapScoped")), Stream.make(1, 2))),
        Stream.concat(Stream.make(1).pipe(Stream.ensuring(fin("first"))), Stream.make(2)).pipe(Stream.rechunk(1), Stream.ensuring(fin("outer")))
      ]
      for (const stream of streams) {
        yield* Effect.scoped(Effect.gen(function*() {
          const started = yield* runAhead(stream, 4096)
          yield* readAll(started)
          log.push("end taken")
        }))
      }
      expect(log).toEqual(["ensuring", "end taken", "acquireRelease", "end taken", "unwrapScoped", "end taken", "first", "outer", "end taken"])
    }))

  it.effect("a stream left before its end, or failed, is closed with the scope: its finalizers run then", () =>
    Effect.gen(function*() {
      const { fin, log } = finalized()
      // Waits after its first piece: the reader leaves it there.
      yield* Effect.scoped(Effect.gen(function*() {
        const started = yield* runAhead(Stream.concat(Stream.make(1), Stream.never).pipe(Stream.ensuring(fin("left"))), 4096)
        yield* started.arrived.takeAll
        log.push("scope closing")
      }))
      yield* Effect.scoped(Effect.gen(function*() {
        const started = yield* runAhead(Stream.concat(Stream.make(1), Stream.fail("broken")).pipe(Stream.ensuring(fin("failed"))), 4096)
        yield* Effect.exit(readAll(started))
        log.push("failure taken")
      }))
      expect(log).toEqual(["scope closing", "left", "failed", "failure taken"])
    }))
})
