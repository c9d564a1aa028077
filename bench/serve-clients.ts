/**
 * The SSE clients of rows 15–18, in a child process of their own (so their parsing does not share
 * the bench's event loop): `node bench/serve-clients.ts <url> <token> <sessionId> <clients>`.
 * Opens every `/live` connection (one socket each), prints `ready` once all are connected, waits
 * for `go` on stdin, starts the turn over HTTP and times until every client has read
 * `turn.completed`. Each client checks its ids are 1, 2, 3… with no gap and no duplicate. Prints
 * one JSON line: `{ ms, events, clients }` (events per client).
 */
import { request } from "node:http"

const [url, token, sessionId, clientsArg] = process.argv.slice(2) as [string, string, string, string]
const clients = Number(clientsArg)
const headers = { authorization: `Bearer ${token}` }

interface Client {
  readonly done: Promise<number>
}

const connect = (onConnected: () => void): Client => {
  let resolveDone!: (events: number) => void
  let rejectDone!: (error: Error) => void
  const done = new Promise<number>((resolve, reject) => {
    resolveDone = resolve
    rejectDone = reject
  })
  const req = request(`${url}/sessions/${sessionId}/live`, { headers, agent: false }, (res) => {
    if (res.statusCode !== 200) return rejectDone(new Error(`/live answered ${res.statusCode}`))
    res.setEncoding("utf8")
    let buffer = ""
    let last = 0
    let connected = false
    res.on("data", (text: string) => {
      buffer += text
      // Frames are read in place and the buffer cut once per read (cutting per frame copies the rest each time).
      let at = 0
      let end: number
      while ((end = buffer.indexOf("\n\n", at)) !== -1) {
        const start = at
        at = end + 2
        if (buffer.charCodeAt(start) === 58) { // ":" a comment
          if (!connected) {
            connected = true
            onConnected()
          }
          continue
        }
        // id: N\nevent: type\ndata: …
        const id = Number(buffer.slice(start + 4, buffer.indexOf("\n", start)))
        if (id !== last + 1) {
          rejectDone(new Error(`a client read id ${id} after ${last}`))
          return req.destroy()
        }
        last = id
        if (buffer.startsWith("event: turn.completed\n", buffer.indexOf("\n", start) + 1)) {
          resolveDone(last)
          return req.destroy()
        }
      }
      buffer = buffer.slice(at)
    })
    res.on("error", () => undefined)
  })
  req.on("error", (error) => rejectDone(error))
  req.end()
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
  const all = Array.from({ length: clients }, () =>
    connect(() => {
      if (++connected === clients) allConnected()
    }))
  await ready
  process.stdout.write("ready\n")
  await new Promise<void>((resolve) => process.stdin.once("data", () => resolve()))
  const start = performance.now()
  await post(`/sessions/${sessionId}/turns`, { message: "go" })
  const counts = await Promise.all(all.map((c) => c.done))
  const ms = performance.now() - start
  if (new Set(counts).size !== 1) throw new Error(`clients read different counts: ${[...new Set(counts)].join(", ")}`)
  process.stdout.write(`${JSON.stringify({ ms, events: counts[0], clients })}\n`)
}

main().then(() => process.exit(0), (error) => {
  console.error(String(error))
  process.exit(1)
})
