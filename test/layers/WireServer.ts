/**
 * A local HTTP server that replays recorded vendor responses (fixtures/providers/<vendor>/*.http:
 * a status line, headers, a blank line, the body exactly as sent), one per request, and records
 * what it received. SSE bodies go out event by event; an SSE comment `: stall …` makes it stop
 * sending and hold the connection open, as a stalled stream would.
 */
import { readFileSync } from "node:fs"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { resolve } from "node:path"

/** A request the server received. */
export interface Received {
  readonly method: string
  readonly path: string
  readonly headers: IncomingMessage["headers"]
  readonly body: any
}

/** A recorded response. */
export interface Recording {
  readonly status: number
  readonly headers: Record<string, string>
  readonly body: string
  /**
   * The body as these socket writes instead, byte for byte, each sent once the one before it was
   * flushed (so a piece may end inside an event, a line ending or a character's bytes).
   */
  readonly pieces?: ReadonlyArray<string | Uint8Array> | undefined
  /** How the connection ends after the last piece: the body's end (default), or a reset (TCP RST) mid-response. */
  readonly end?: "end" | "reset" | undefined
  /** Milliseconds between two pieces (a body that trickles); none once the client closed the connection. */
  readonly gapMs?: number | undefined
  /** What piece `i` waits for before it is written, if anything (a test's gate: a vendor that waits for the client to have seen something). */
  readonly before?: ((i: number) => Promise<void> | undefined) | undefined
}

const fixtures = resolve(import.meta.dirname, "../../fixtures/providers")

/** Reads `<vendor>/<name>.http`. */
export const recording = (vendor: "anthropic" | "openai" | "openai-responses", name: string): Recording => {
  const text = readFileSync(resolve(fixtures, vendor, `${name}.http`), "utf8")
  const split = text.indexOf("\n\n")
  const [statusLine, ...headerLines] = text.slice(0, split).split("\n")
  const status = Number(statusLine!.split(" ")[1])
  const headers = Object.fromEntries(headerLines.map((line) => {
    const colon = line.indexOf(":")
    return [line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim()]
  }))
  return { status, headers, body: text.slice(split + 2) }
}

/** A running replay server. */
export interface WireServer {
  readonly url: string
  readonly received: Array<Received>
  /** Requests whose connection the client closed before the response ended. */
  readonly clientClosed: () => number
  /** Queues the responses for the next requests, in order. */
  readonly respond: (...recordings: ReadonlyArray<Recording>) => void
  /** Forgets what was received and what is still queued: a test that failed leaves nothing for the next. */
  readonly reset: () => void
  readonly close: () => Promise<void>
}

/** Starts a server on 127.0.0.1 with a free port. */
export const start = async (): Promise<WireServer> => {
  const queue: Array<Recording> = []
  const received: Array<Received> = []
  let closed = 0
  const open = new Set<ServerResponse>()

  const handle = (req: IncomingMessage, res: ServerResponse, body: string) => {
    received.push({ method: req.method ?? "", path: req.url ?? "", headers: req.headers, body: body === "" ? undefined : JSON.parse(body) })
    const next = queue.shift()
    if (next === undefined) {
      res.writeHead(500, { "content-type": "application/json" }).end(JSON.stringify({ error: { message: "no recording queued" } }))
      return
    }
    open.add(res)
    let finished = false
    res.on("close", () => {
      open.delete(res)
      if (!finished) closed++
    })
    res.writeHead(next.status, next.headers)
    if (next.pieces !== undefined) {
      res.socket?.setNoDelay(true)
      const pieces = next.pieces
      const gapMs = next.gapMs
      const write = (i: number): void => {
        if (res.destroyed) return
        const gate = i < pieces.length ? next.before?.(i) : undefined
        if (gate !== undefined) return void gate.then(() => writeNow(i))
        writeNow(i)
      }
      const writeNow = (i: number) => {
        if (res.destroyed) return
        const after = () => (gapMs === undefined ? setImmediate(() => write(i + 1)) : setTimeout(() => write(i + 1), gapMs))
        if (i < pieces.length) return void res.write(pieces[i]!, after)
        if (next.end === "reset") return void res.socket?.resetAndDestroy()
        finished = true
        res.end()
      }
      write(0)
      return
    }
    if (!next.headers["content-type"]?.startsWith("text/event-stream")) {
      finished = true
      res.end(next.body)
      return
    }
    const events = next.body.split("\n\n").filter((e) => e !== "")
    const send = (i: number) => {
      if (i === events.length) {
        finished = true
        res.end()
        return
      }
      // A stall: nothing more is sent, and the connection stays open until the client gives up.
      if (events[i]!.startsWith(": stall")) return
      res.write(events[i] + "\n\n", () => setImmediate(() => send(i + 1)))
    }
    send(0)
  }

  const server = createServer((req, res) => {
    let body = ""
    req.setEncoding("utf8").on("data", (chunk: string) => (body += chunk)).on("end", () => handle(req, res, body))
  })
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    clientClosed: () => closed,
    respond: (...recordings) => queue.push(...recordings),
    reset: () => {
      queue.length = 0
      received.length = 0
    },
    close: () =>
      new Promise<void>((done) => {
        for (const res of open) res.destroy()
        server.closeAllConnections()
        server.close(() => done())
      })
  }
}
