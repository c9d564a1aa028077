/**
 * The bench's rows measure what issue 20 asks (review58c): row 1 hands one delta per chunk on both
 * sides, the paced vendor of rows 24–25 writes each event on its own and reports its first delta,
 * and the side arrays of rows 19 and 21 drop the warm-up's entry. No timing is asserted: only what is
 * handed over, and in what shape.
 */
import { connect } from "node:net"
import { Effect, Stream } from "effect"
import { describe, expect, it } from "vitest"
import { deltaTexts } from "../../bench/both.js"
import { perDeltaStreamFn, scriptedModel } from "../../bench/piScripted.js"
import { firstDeltaLatencies } from "../../bench/rows/sdkTurn.js"
import { measuredOnly } from "../../bench/rows/steps.js"
import { perDeltaModel } from "../../bench/rows/turn.js"
import { answer, startVendorServer } from "../../bench/vendor-server.js"
import { ModelProvider } from "../../src/index.js"

describe("row 1: one delta per chunk on both sides", () => {
  it("our model hands the engine every delta in a chunk of its own", async () => {
    const sizes = await Effect.runPromise(Effect.flatMap(ModelProvider.ModelProvider, (model) => {
      const seen: Array<number> = []
      return Stream.runForEachChunk(model.stream({ system: "", messages: [], tools: [] }), (chunk) => Effect.sync(() => void seen.push(chunk.length))).pipe(Effect.as(seen))
    }).pipe(Effect.provide(perDeltaModel(deltaTexts(500)))))
    // 500 deltas and the finish, each a chunk of one.
    expect(sizes).toHaveLength(501)
    expect(new Set(sizes)).toEqual(new Set([1]))
  })

  it("pi's stream function hands over every delta as a text delta of its own", async () => {
    const deltas = deltaTexts(50)
    const stream = perDeltaStreamFn(deltas)(scriptedModel, { messages: [] })
    const got: Array<string> = []
    for await (const event of await stream) if (event.type === "text_delta") got.push(event.delta)
    expect(got).toEqual(deltas)
  })
})

describe("rows 24–25: the paced vendor", () => {
  it("writes each SSE event in a write of its own and reports its first delta's write", async () => {
    let first = Number.NaN
    const vendor = await startVendorServer({ deltas: 5, paceMs: 1, onFirstDelta: (at) => (first = at) })
    try {
      const writes: Array<number> = []
      const body = await new Promise<string>((resolve, reject) => {
        const url = new URL(vendor.url)
        const socket = connect(Number(url.port), url.hostname)
        let text = ""
        socket.on("data", (b) => (text += b.toString("utf8")))
        socket.on("end", () => resolve(text))
        socket.on("error", reject)
        socket.write(`POST /v1/messages HTTP/1.1\r\nHost: ${url.host}\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}`)
      })
      // Chunked encoding: one chunk per `res.write`, so one size line per event.
      for (const m of body.matchAll(/\r\n([0-9a-f]+)\r\nevent: /g)) writes.push(parseInt(m[1]!, 16))
      const events = answer(5)
      expect(writes).toEqual(events.map((e) => Buffer.byteLength(e)))
      expect(Number.isFinite(first)).toBe(true)
    } finally {
      vendor.server.close()
    }
  })

  it("row 25 samples one latency per turn after a warm-up turn", async () => {
    const samples = await firstDeltaLatencies(3, 3, 1)
    expect(samples).toHaveLength(3)
    for (const s of samples) expect(s).toBeGreaterThanOrEqual(0)
  })
})

describe("rows 19 and 21: the warm-up's entries are not samples", () => {
  it("keeps the last `reps` entries of a side array", () => {
    expect(measuredOnly([9, 1, 2, 3], 3)).toEqual([1, 2, 3])
    expect(measuredOnly([1, 2], 3)).toEqual([1, 2])
  })
})
