/**
 * A fake Anthropic Messages endpoint for the benchmarks, run in its own process (so the CPU time the
 * bench measures is the client's alone): every POST streams one answer of `deltas` text deltas (the
 * query string `?deltas=N`, else BENCH_VENDOR_DELTAS, else 10,000), one SSE event per write, the next
 * written once the previous has been handed to the socket — as a vendor streams tokens. Prints its
 * URL on stdout once listening.
 *
 *   node --import tsx bench/vendor.ts
 */
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"

const defaultDeltas = Number(process.env.BENCH_VENDOR_DELTAS ?? 10_000)

const sse = (type: string, data: unknown) => `event: ${type}\ndata: ${JSON.stringify(data)}\n\n`

/** The SSE events of one answer: the same 4-character deltas as the scripted rows (`deltaTexts`). */
const answer = (deltas: number): Array<string> => [
  sse("message_start", {
    type: "message_start",
    message: { id: "msg_bench", type: "message", role: "assistant", model: "bench", content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 10, output_tokens: 1 } }
  }),
  sse("content_block_start", { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }),
  ...Array.from({ length: deltas }, (_, i) =>
    sse("content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: i.toString(36).padStart(4, "x").slice(-4) } })),
  sse("content_block_stop", { type: "content_block_stop", index: 0 }),
  sse("message_delta", { type: "message_delta", delta: { stop_reason: "end_turn", stop_sequence: null }, usage: { output_tokens: deltas } }),
  sse("message_stop", { type: "message_stop" })
]

const answers = new Map<number, Array<string>>()

const server = createServer((req, res) => {
  req.resume().on("end", () => {
    const deltas = Number(new URL(req.url ?? "/", "http://x").searchParams.get("deltas") ?? defaultDeltas)
    const events = answers.get(deltas) ?? answers.set(deltas, answer(deltas)).get(deltas)!
    res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" })
    const send = (i: number) => {
      if (i === events.length) return void res.end()
      res.write(events[i], () => setImmediate(() => send(i + 1)))
    }
    send(0)
  })
})
server.listen(0, "127.0.0.1", () => {
  console.log(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)
})
process.on("disconnect", () => process.exit(0))
