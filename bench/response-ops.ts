/**
 * What reading a provider's response costs a step in Effect operations, apart from the engine: a
 * scripted tool-call response (one chunk, as `FakeModelProvider` hands it over) read by the run-ahead
 * (`ModelProvider.runAheadIn`, the engine's reader), taken, and its scope closed; and the same stream
 * read by `Channel.toPullIn` alone (two pulls: its chunk, its end), the cheapest public way to read an
 * effect `Stream` by pulls. Deterministic (a supervisor counts every op); not a test. perf64steps;
 * since perf65steps the run-ahead pulls the stream with its end marked and leaves the channel executor
 * of a stream read to its end unclosed (157 → 77 ops), where `Channel.toPullIn`'s close is 94 of its 129.
 *
 *   node --import tsx bench/response-ops.ts
 */
import { Channel, Chunk, Effect, ExecutionStrategy, Exit, RuntimeFlags, RuntimeFlagsPatch, Scope, Stream, Supervisor } from "effect"
import * as ModelProvider from "../src/services/ModelProvider.js"

class Counter extends Supervisor.AbstractSupervisor<void> {
  ops = 0
  readonly value = Effect.void
  override onEffect() {
    this.ops++
  }
}

const chunks = [ModelProvider.toolCall("c1", "read_file", { path: "a.txt" }), ModelProvider.finish("tool_calls")]
const stream = () => Stream.suspend(() => Stream.fromChunk(Chunk.unsafeFromArray(chunks)))
const closing = <A>(use: (scope: Scope.CloseableScope) => Effect.Effect<A>) =>
  Effect.flatMap(Scope.make(ExecutionStrategy.sequential), (scope) => Effect.zipRight(use(scope), Scope.close(scope, Exit.void)))
const runAhead = closing((scope) => Effect.flatMap(ModelProvider.runAheadIn(stream(), 64, scope, 2), (run) => run.arrived.takeAll))
const pulled = closing((scope) => Effect.flatMap(Channel.toPullIn(Stream.toChannel(stream()), scope), (pull) => Effect.zipRight(pull, pull)))

const counted = async (self: Effect.Effect<unknown, unknown>): Promise<number> => {
  const counter = new Counter()
  await Effect.runPromise(Effect.withRuntimeFlagsPatch(Effect.supervised(Effect.ignore(self), counter), RuntimeFlagsPatch.enable(RuntimeFlags.OpSupervision)))
  return counter.ops
}
const warm = async (self: Effect.Effect<unknown, unknown>): Promise<number> => {
  for (let i = 0; i < 3; i++) await counted(self)
  return counted(self)
}
const floor = await warm(Effect.void)
console.log(`a scripted response read by runAheadIn, taken, its scope closed: ${(await warm(runAhead)) - floor} Effect ops`)
console.log(`the same stream by Channel.toPullIn (two pulls), its scope closed: ${(await warm(pulled)) - floor} Effect ops`)
