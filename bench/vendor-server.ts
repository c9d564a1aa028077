/**
 * The fake Anthropic Messages endpoint of rows 10–11 and 24–25 (`bench/vendor.ts` runs it in a process
 * of its own): every POST streams one answer of `deltas` text deltas (the query string `?deltas=N`,
 * else the option), one SSE event per `write`.
 *
 * - Unpaced (`paceMs` 0): the next event is written once the previous has been handed to the socket
 *   (`setImmediate` after the write's callback). The client's socket reads then hold many events each
 *   (row 10's turn commits ~100 deltas at a time): a flood, not a vendor's pace.
 * - Paced (`paceMs` > 0, `?pace=MS` too): each event in its own write, the next `paceMs` after the
 *   previous reached the socket, as a vendor streams tokens over time; the client reads about one
 *   event per socket read, so the adapter hands the engine about one delta per chunk.
 *
 * `onFirstDelta` (in-process use, row 25) hears `performance.now()` just before the first text delta
 * is written.
 */
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"

const sse = (type: string, data: unknown) => `event: ${type}\ndata: ${JSON.stringify(data)}\n\n`

/** The SSE events of one answer: the same 4-character deltas as the scripted rows (`deltaTexts`); the first delta is at index 2. */
export const answer = (deltas: number): Array<string> => [
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

export interface VendorOptions {
  readonly deltas: number
  readonly paceMs?: number
  readonly onFirstDelta?: (at: number) => void
}

/** Starts the vendor on a free port of 127.0.0.1; resolves with the server and its URL. */
export const startVendorServer = (options: VendorOptions): Promise<{ readonly server: Server; readonly url: string }> => {
  const answers = new Map<number, Array<string>>()
  const server = createServer((req, res) => {
    req.resume().on("end", () => {
      const query = new URL(req.url ?? "/", "http://x").searchParams
      const deltas = Number(query.get("deltas") ?? options.deltas)
      const pace = Number(query.get("pace") ?? options.paceMs ?? 0)
      const events = answers.get(deltas) ?? answers.set(deltas, answer(deltas)).get(deltas)!
      res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" })
      const send = (i: number) => {
        if (i === events.length) return void res.end()
        if (i === 2 && deltas > 0) options.onFirstDelta?.(performance.now())
        res.write(events[i], () => pace > 0 ? setTimeout(() => send(i + 1), pace) : setImmediate(() => send(i + 1)))
      }
      send(0)
    })
  })
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` })))
}
