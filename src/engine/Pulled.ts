/**
 * Reading a stream in the fiber that asks for it, chunk by chunk (`Channel.toPull`), for the
 * engine's own reads of the store. `Stream.runForEachChunk` and `Stream.runHead` run a stream
 * through effect's `Channel.run`, which forks a fiber for it, with a scope of its own and two
 * deferreds to hand the result back: for a short log (a session loaded again after the cache let
 * it go) that fixed cost is most of the read — about 2× the CPU of pulling the same stream here
 * (docs/benchmarks.md, row 21). Closing the pull's scope closes the stream (a file store's handle).
 *
 * @since 0.6.0
 * @internal
 */
import * as Channel from "effect/Channel"
import type * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"

/**
 * Runs `f` on each chunk of `stream` in turn, as `Stream.runForEachChunk` does, until the stream
 * ends; `f` answering `false` stops the reading there (the rest of the stream is not read).
 */
export const forEachChunk = <A, E, E2>(
  stream: Stream.Stream<A, E>,
  f: (chunk: Chunk.Chunk<A>) => Effect.Effect<boolean, E2>
): Effect.Effect<void, E | E2> =>
  Effect.scoped(Effect.flatMap(Channel.toPull(Stream.toChannel(stream)), (pull) => {
    const loop: Effect.Effect<void, E | E2> = Effect.flatMap(pull, (pulled) =>
      Either.isLeft(pulled) ? Effect.void : Effect.flatMap(f(pulled.right), (more) => (more ? loop : Effect.void)))
    return loop
  }))

const more = Effect.succeed(true)
const enough = Effect.succeed(false)

/** The first element of `stream`, as `Stream.runHead`: the rest is not read. */
export const head = <A, E>(stream: Stream.Stream<A, E>): Effect.Effect<Option.Option<A>, E> =>
  Effect.suspend(() => {
    let first: Option.Option<A> = Option.none()
    return Effect.map(
      forEachChunk(stream, (chunk) => {
        for (const a of chunk) {
          first = Option.some(a)
          return enough
        }
        return more
      }),
      () => first
    )
  })
