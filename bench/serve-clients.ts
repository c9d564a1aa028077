/**
 * The SSE clients of rows 15–18, in a child process of their own (so their parsing does not share
 * the bench's event loop): `node bench/serve-clients.ts <url> <token> <sessionId> <clients>`.
 * Opens every `/live` connection (one socket each), prints `ready` once all are connected, waits
 * for `go` on stdin, starts the turn over HTTP and times until every client has read
 * `turn.completed` (`node bench/serve-clients.ts … <clients> <stalled>`: the first `stalled` clients stop
 * reading once connected and are not waited for). Each client checks its ids are 1, 2, 3… with no gap and no duplicate. Prints
 * one JSON line: `{ ms, events, clients }` (events per client).
 *
 * A client reads its response off the socket itself (status line, headers, chunked body) rather than
 * through `node:http`, and finds frames and ids in a latin1 string of each read: 100 clients in one
 * process were ≈ 110 ms more CPU (760 against 650 ms, medians of 7 alternated rounds) through `node:http`
 * and UTF-8 decoding, on the same 2 cores as the server (docs/benchmarks.md, "perfserve").
 * The checks are the same: every frame's id, in order, and the turn's end.
 */
import { request } from "node:http"
import { connect as netConnect } from "node:net"

const [url, token, sessionId, clientsArg, stalledArg] = process.argv.slice(2) as [string, string, string, string, string | undefined]
const clients = Number(clientsArg)
/** Row 27: how many of the clients stall — stop reading once connected, until the others have read the turn. */
const stalled = Number(stalledArg ?? 0)
const headers = { authorization: `Bearer ${token}` }

interface Client {
  readonly done: Promise<number>
}

const connect = (onConnected: () => void, stall = false): Client => {
  let resolveDone!: (events: number) => void
  let rejectDone!: (error: Error) => void
  const done = new Promise<number>((resolve, reject) => {
    resolveDone = resolve
    rejectDone = reject
  })
  const target = new URL(`${url}/sessions/${sessionId}/live`)
  const socket = netConnect(Number(target.port), target.hostname)
  socket.write(`GET ${target.pathname} HTTP/1.1\r\nHost: ${target.host}\r\nAuthorization: ${headers.authorization}\r\nAccept: text/event-stream\r\n\r\n`)
  let rest = ""
  let last = 0
  let connected = false
  let finished = false
  const finish = (error?: Error) => {
    finished = true
    socket.destroy()
    if (error === undefined) resolveDone(last)
    else rejectDone(error)
  }
  /** One frame's check (from `start`, its blank line excluded); false once the client is done or failed. */
  const frame = (text: string, start: number): boolean => {
    if (text.charCodeAt(start) === 58) { // ":" a comment
      if (!connected) {
        connected = true
        // A stalled client reads nothing more (the server's writes back up) until `main` destroys it.
        if (stall) socket.pause()
        onConnected()
      }
      return true
    }
    let id = 0
    let i = start + 4
    for (let c = text.charCodeAt(i); c >= 48 && c <= 57; c = text.charCodeAt(++i)) id = id * 10 + c - 48
    if (id !== last + 1 || text.charCodeAt(i) !== 10) {
      finish(new Error(`a client read id ${id} after ${last}`))
      return false
    }
    last = id
    if (text.startsWith("event: turn.completed\n", i + 1)) {
      finish()
      return false
    }
    return true
  }
  /** The body's bytes, in order: frames found in place, a frame split between two pieces joined. */
  const body = (text: string) => {
    let at = 0
    if (rest !== "") {
      const split = rest.charCodeAt(rest.length - 1) === 10 && text.charCodeAt(0) === 10
      const end = split ? 0 : text.indexOf("\n\n")
      if (end === -1) {
        rest += text
        return
      }
      const whole = split ? rest.slice(0, -1) : rest + text.slice(0, end)
      rest = ""
      if (!frame(whole, 0)) return
      at = split ? 1 : end + 2
    }
    let end: number
    while ((end = text.indexOf("\n\n", at)) !== -1) {
      if (!frame(text, at)) return
      at = end + 2
    }
    rest = text.slice(at)
  }
  // HTTP/1.1 read by hand: the head, then the chunked body (a size line, that many bytes, CRLF).
  let head = ""
  let inHead = true
  let chunkLeft = 0 // bytes of the current chunk still to read
  let between = "" // read since the last chunk's bytes: their CRLF and the next size line, until whole
  socket.on("data", (bytes: Buffer) => {
    if (finished) return
    let text = bytes.toString("latin1")
    if (inHead) {
      head += text
      const end = head.indexOf("\r\n\r\n")
      if (end === -1) return
      if (!head.startsWith("HTTP/1.1 200 ")) return finish(new Error(`/live answered ${head.slice(0, head.indexOf("\r\n"))}`))
      if (!/\r\ntransfer-encoding: chunked\r\n/i.test(head.slice(0, end + 2))) return finish(new Error("/live answered without chunked encoding"))
      inHead = false
      text = head.slice(end + 4)
      head = ""
    }
    let at = 0
    while (at < text.length && !finished) {
      if (chunkLeft > 0) {
        const take = Math.min(chunkLeft, text.length - at)
        body(at === 0 && take === text.length ? text : text.slice(at, at + take))
        chunkLeft -= take
        at += take
        continue
      }
      const piece = text.slice(at, at + 40) // a size line is short
      between += piece
      const from = between.startsWith("\r\n") ? 2 : 0 // the first chunk has no CRLF before it
      const eol = between.indexOf("\r\n", from)
      if (eol === -1) {
        at += piece.length
        continue
      }
      // What follows the size line in this piece is the chunk's: given back.
      at += piece.length - (between.length - (eol + 2))
      chunkLeft = parseInt(between.slice(from, eol), 16)
      between = ""
      if (!(chunkLeft > 0)) return finish(new Error(`the response ended after id ${last}`))
    }
  })
  socket.on("error", (error) => finished || finish(error))
  socket.on("close", () => finished || finish(new Error(`the connection closed after id ${last}`)))
  return { done }
}

const post = (path: string, body: unknown) =>
  new Promise<void>((resolve, reject) => {
    const req = request(`${url}${path}`, { method: "POST", headers: { ...headers, "content-type": "application/json" } }, (res) => {
      res.resume()
      res.on("end", () => (res.statusCode! < 300 ? resolve() : reject(new Error(`${path} answered ${res.statusCode}`))))
    })
    req.on("error", reject)
    req.end(JSON.stringify(body))
  })

const main = async () => {
  let connected = 0
  let allConnected!: () => void
  const ready = new Promise<void>((resolve) => (allConnected = resolve))
  const all = Array.from({ length: clients }, (_, i) =>
    connect(() => {
      if (++connected === clients) allConnected()
    }, i < stalled))
  const reading = all.slice(stalled)
  await ready
  process.stdout.write("ready\n")
  await new Promise<void>((resolve) => process.stdin.once("data", () => resolve()))
  const start = performance.now()
  await post(`/sessions/${sessionId}/turns`, { message: "go" })
  const counts = await Promise.all(reading.map((c) => c.done))
  const ms = performance.now() - start
  if (new Set(counts).size !== 1) throw new Error(`clients read different counts: ${[...new Set(counts)].join(", ")}`)
  // `clients`: those that read the turn (the stalled ones are left to the process's exit).
  process.stdout.write(`${JSON.stringify({ ms, events: counts[0], clients: reading.length })}\n`)
}

main().then(() => process.exit(0), (error) => {
  console.error(String(error))
  process.exit(1)
})
