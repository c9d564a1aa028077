/**
 * The engine's reads of a stream in its own fiber (`Pulled`): every chunk in order, the reading
 * stopped where the reader says (the rest never pulled), the stream closed however the reading
 * ends, and its failure and the reader's passed on.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as Pulled from "../../src/engine/Pulled.js"

/** A stream of `chunks` that records which chunks were pulled and whether it was closed. */
const recorded = (chunks: ReadonlyArray<ReadonlyArray<number>>, failAfter?: number) => {
  const log = { pulled: [] as Array<number>, closed: false }
  const stream = Stream.fromIterable(chunks.map((c, i) => [c, i] as const)).pipe(
    Stream.tap(([, i]) => Effect.sync(() => log.pulled.push(i))),
    Stream.mapConcat(([c]) => c),
    Stream.concat(failAfter === undefined ? Stream.empty : Stream.fail("broken" as const)),
    Stream.ensuring(Effect.sync(() => void (log.closed = true)))
  )
  return { log, stream }
}

describe("Pulled", () => {
  it.effect("forEachChunk hands over every element, in order, and closes the stream at its end", () =>
    Effect.gen(function*() {
      const { log, stream } = recorded([[1, 2], [3], [4, 5, 6]])
      const seen: Array<number> = []
      yield* Pulled.forEachChunk(stream, (chunk) => Effect.sync(() => (seen.push(...Chunk.toReadonlyArray(chunk)), true)))
      expect(seen).toEqual([1, 2, 3, 4, 5, 6])
      expect(log.closed).toBe(true)
    }))

  it.effect("forEachChunk stops where the reader answers false: the rest is not pulled, and the stream is closed", () =>
    Effect.gen(function*() {
      const { log, stream } = recorded([[1], [2], [3], [4]])
      const seen: Array<number> = []
      yield* Pulled.forEachChunk(stream.pipe(Stream.rechunk(1)), (chunk) =>
        Effect.sync(() => {
          seen.push(...Chunk.toReadonlyArray(chunk))
          return seen.length < 2
        }))
      expect(seen).toEqual([1, 2])
      expect(log.pulled.length).toBeLessThan(4)
      expect(log.closed).toBe(true)
    }))

  it.effect("forEachChunk fails with the stream's failure, or the reader's, and closes the stream", () =>
    Effect.gen(function*() {
      const failing = recorded([[1]], 1)
      expect(yield* Effect.either(Pulled.forEachChunk(failing.stream, () => Effect.succeed(true)))).toEqual(Either.left("broken"))
      expect(failing.log.closed).toBe(true)
      const refused = recorded([[1], [2]])
      expect(yield* Effect.either(Pulled.forEachChunk(refused.stream, () => Effect.fail("refused" as const)))).toEqual(Either.left("refused"))
      expect(refused.log.closed).toBe(true)
    }))

  it.effect("head answers the first element without reading on, and none for an empty stream", () =>
    Effect.gen(function*() {
      const { log, stream } = recorded([[], [7, 8], [9]])
      expect(yield* Pulled.head(stream.pipe(Stream.rechunk(1)))).toEqual(Option.some(7))
      expect(log.pulled).not.toContain(2)
      expect(log.closed).toBe(true)
      expect(yield* Pulled.head(Stream.empty)).toEqual(Option.none())
    }))
})
