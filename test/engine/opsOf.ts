/**
 * The Effect operations an effect runs: every op of its fiber, counted by a supervisor with op
 * supervision (as `bench/ops.ts` counts a turn's). For tests that hold a hot path's cost in operations.
 */
import * as Effect from "effect/Effect"
import * as RuntimeFlags from "effect/RuntimeFlags"
import * as RuntimeFlagsPatch from "effect/RuntimeFlagsPatch"
import * as Supervisor from "effect/Supervisor"

export const opsOf = (effect: Effect.Effect<unknown>): Effect.Effect<number> =>
  Effect.suspend(() => {
    let ops = 0
    const counter = new (class extends Supervisor.AbstractSupervisor<void> {
      readonly value = Effect.void
      override onEffect() {
        ops++
      }
    })()
    return Effect.map(Effect.withRuntimeFlagsPatch(Effect.supervised(effect, counter), RuntimeFlagsPatch.enable(RuntimeFlags.OpSupervision)), () => ops)
  })
