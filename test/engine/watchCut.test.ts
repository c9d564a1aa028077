/**
 * A watcher of a session's feed cut anywhere (see test/interleavings.ts): what is published, or
 * the poll's failure, between its look at the feed and its wait still wakes it. It did not: a
 * publish in that gap woke the watchers already waiting, not this one, which then waited for the
 * session's next write — for a turn's last events (`turn.completed`), one that never comes: a
 * `/live` client waited for ever.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Scope from "effect/Scope"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import * as Watchers from "../../src/engine/Watchers.js"
import { stuckCuts } from "../interleavings.js"

const event = (sequence: number) => ({ sequence }) as unknown as AgentEvent

/** A hub and a watcher of session "s" in it (its scope left open). */
const watching = <E = never>() => {
  const hub = Watchers.make<E>()
  const subscription = Effect.runSync(Effect.flatMap(Scope.make(), (scope) => Scope.extend(hub.subscribe("s"), scope)))
  return { hub, subscription }
}

describe("Watchers, a watcher cut anywhere", () => {
  it("a publish between the watcher's look at the feed and its wait reaches it", () => {
    expect(stuckCuts(() => {
      const { hub, subscription } = watching()
      return { waiter: subscription.take, act: () => hub.publish("s", [event(1)]) }
    })).toEqual([])
  })
})
