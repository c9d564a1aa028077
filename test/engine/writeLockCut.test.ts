/**
 * A session's write lock (`LiveSession.WriteLock`, held by each commit) with its waiter cut
 * anywhere (see test/interleavings.ts): a holder letting go between the waiter's look at the lock
 * and its wait still hands it over. It did not: the lock was let go with nobody waiting, and the
 * commit then waited for a holder that was gone — until some other commit of the session came, or
 * for ever (a turn whose calls commit at once, a subagent's progress beside another call's end).
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { WriteLock } from "../../src/engine/LiveSession.js"
import { stepper, stuckCuts } from "../interleavings.js"

describe("WriteLock, its waiter cut anywhere", () => {
  it("a holder letting go between the waiter's look and its wait hands the lock over", () => {
    expect(stuckCuts(() => {
      const lock = new WriteLock()
      // A holder in the middle of its commit, let go when `act` says (its fiber run by hand, to the end).
      let letGo: (() => void) | undefined
      const holder = stepper()
      Effect.runFork(Effect.withScheduler(lock.holding(Effect.async<void>((resume) => {
        letGo = () => resume(Effect.void)
      })), holder.scheduler))
      holder.drain()
      return {
        waiter: lock.holding(Effect.void),
        act: () => {
          letGo!()
          holder.drain()
        }
      }
    })).toEqual([])
  })
})
