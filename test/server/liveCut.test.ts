/**
 * A `/live` response's hand-overs cut anywhere (see test/interleavings.ts): what the other side
 * does between one side's look and its wait — a batch handed over, the end, the slot emptied, a
 * shared batch's bytes made — still wakes it. It did not: a response that found the slot empty and
 * was cut before it waited missed the watch's last batch and its end (the client waited for
 * ever); a watch that found the slot full missed the response emptying it (both waited for ever);
 * a client that found another one encoding a batch missed its bytes.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import { Live } from "../../src/server.js"
import { stuckCuts } from "../interleavings.js"
import { liveEvent } from "./liveEvents.js"

const bytes = (text: string) => new TextEncoder().encode(text)

describe("/live response cut anywhere", () => {
  it("the in-process response waiting for bytes gets a batch and the end handed over in between", () => {
    const emptied = () => {
      const box = new Live.Mailbox(bytes("first"))
      Effect.runSync(box.take)
      return box
    }
    expect(stuckCuts(() => {
      const box = emptied()
      return { waiter: box.take, act: () => Effect.runSync(box.put(bytes("next"))) }
    })).toEqual([])
    expect(stuckCuts(() => {
      const box = emptied()
      return { waiter: Effect.ignore(box.take), act: box.end }
    })).toEqual([])
  })

  it("the watch waiting for the slot goes on once the response empties it in between", () => {
    expect(stuckCuts(() => {
      const box = new Live.Mailbox(bytes("first"))
      return { waiter: box.put(bytes("next")), act: () => Effect.runSync(box.take) }
    })).toEqual([])
  })

  it("a client waiting for a shared batch's bytes gets them when the encoding client ends in between", () => {
    // Over `eventsPerStep` events: encoded a piece at a time by the first client to take the batch.
    expect(stuckCuts(() => {
      // New events each time: a batch's bytes, once made, are the batch's for good.
      const batch = Chunk.makeBy(Live.eventsPerStep + 1, (i) => liveEvent(i + 1))
      const first = Live.bytesOf(batch)
      return { waiter: Live.bytesOf(batch), act: () => void Effect.runSync(first) }
    })).toEqual([])
  })
})
