/**
 * A local process (or, with a non-loopback `--host`, a network peer) holding the server's
 * connections without the token (audit 3, item 4). Node's HTTP server times out a request whose
 * headers arrive too slowly, but never a connection that sends nothing at all: 100 such connections
 * stayed open for good (each a file descriptor of the agent's process, shared with its session logs
 * and tools), and so would 10,000. Now a connection has `headersTimeout` to send its first request's
 * headers, whether it sent nothing or a trickle; a request under way (a `/live` stream) is not cut.
 * The timeouts bound how long, not how many: at most `maxUnauthenticatedConnections` connections
 * that sent no request with a credential stay open, one more closing the oldest of them, and a
 * connection with the token is never among them.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import * as Scheduler from "effect/Scheduler"
import { connect, type Socket } from "node:net"
import { Security } from "../../src/server.js"
import { liveUntil, startIn } from "./harness.js"
import { send } from "./requests.js"

const opened = (port: number) =>
  new Promise<Socket>((resolve, reject) => {
    const socket = connect(port, "127.0.0.1", () => resolve(socket))
    socket.once("error", reject)
  })

/**
 * Resolves once the server closed the socket. No deadline of its own (a busy machine can be later
 * than any guess): a socket the server never closes fails the test at vitest's timeout.
 */
const closed = (socket: Socket) =>
  new Promise<void>((resolve) => {
    if (socket.destroyed || socket.readableEnded) return resolve()
    socket.once("close", () => resolve())
    socket.on("error", () => {})
    socket.resume()
  })

describe("idle and slow connections (slowloris)", () => {
  it.scopedLive("100 silent and 100 trickling connections neither block the server nor stay open", () =>
    Effect.gen(function*() {
      const { server } = yield* startIn({ headersTimeout: "400 millis" })
      const { port, token } = server
      const silent = yield* Effect.promise(() => Promise.all(Array.from({ length: 100 }, () => opened(port))))
      const trickling = yield* Effect.promise(() => Promise.all(Array.from({ length: 100 }, () => opened(port))))
      const trickle = setInterval(() => {
        for (const socket of trickling) if (!socket.destroyed) socket.write("X-Slow: 1\r\n")
      }, 50)
      for (const socket of trickling) socket.write(`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n`)
      try {
        // The server still answers, with and without the token.
        expect((yield* Effect.promise(() => send(port, "/healthz"))).status).toBe(200)
        expect((yield* Effect.promise(() => send(port, "/sessions", { headers: { authorization: `Bearer ${token}` } }))).status).toBe(200)
        // And closes every connection that sent no whole request in time.
        yield* Effect.promise(() => Promise.all([...silent, ...trickling].map(closed)))
      } finally {
        clearInterval(trickle)
        for (const socket of [...silent, ...trickling]) socket.destroy()
      }
    }), 30_000)

  it.scopedLive("connections without a credential beyond the bound close the oldest of them; a /live stream with the token and new clients are served", () =>
    Effect.gen(function*() {
      // The timeouts close nothing during the test: only the bound does.
      const max = 50
      const { cwd, server } = yield* startIn({ headersTimeout: "10 minutes", maxUnauthenticatedConnections: max })
      const { port, token } = server
      const session = yield* server.client.sessions.create({ payload: { cwd } })
      const closes: Array<Socket> = []
      const waiting: Array<() => void> = []
      const watched = (socket: Socket) => {
        socket.on("error", () => {})
        socket.once("close", () => {
          closes.push(socket)
          waiting.forEach((check) => check())
        })
        return socket
      }
      const closed = (count: number) =>
        new Promise<void>((done) => {
          const check = () => closes.length >= count && done()
          waiting.push(check)
          check()
        })
      // The oldest connection: a /live stream with the token, answered.
      const live = watched(yield* Effect.promise(() => opened(port)))
      yield* Effect.promise(() =>
        new Promise<void>((answered) => {
          live.on("data", (chunk: Buffer) => chunk.toString("utf8").startsWith("HTTP/1.1 200") && answered())
          live.write(`GET /sessions/${session.sessionId}/live HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${token}\r\n\r\n`)
        })
      )
      // Then, without a credential: a sign-in whose body never finishes, and silent connections, one by one.
      const login = watched(yield* Effect.promise(() => opened(port)))
      login.write(`POST /login HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nSec-Fetch-Site: same-origin\r\nContent-Length: 4000\r\n\r\n{"token": "`)
      // And the viewer's cookie alone (which another server of this host may have been sent), without
      // the page's key: refused at once, its body unread (until review 54 it was read, and never
      // finished). Its connection sent no request with a credential: still a stranger.
      const cookieOnly = watched(yield* Effect.promise(() => opened(port)))
      const cookie = `${Security.cookieName(String(port))}=${Redacted.value(Security.sessionSecret(Redacted.make(token), String(port)))}`
      const refused = new Promise<string>((answered) => {
        let text = ""
        cookieOnly.on("data", (chunk: Buffer) => {
          text += chunk.toString("utf8")
          if (text.includes("\r\n")) answered(text)
        })
      })
      cookieOnly.write(`POST /sessions HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nCookie: ${cookie}\r\nContent-Type: application/json\r\nContent-Length: 4000\r\n\r\n{"cwd": "`)
      expect(yield* Effect.promise(() => refused)).toMatch(/^HTTP\/1\.1 403/)
      const silent: Array<Socket> = []
      for (let i = 0; i < max + 29; i++) silent.push(watched(yield* Effect.promise(() => opened(port))))
      try {
        // 81 strangers, 50 kept: the 31 oldest are closed, in the order they came.
        yield* Effect.promise(() => closed(31))
        expect(closes).toEqual([login, cookieOnly, ...silent.slice(0, 29)])
        // The stream with the token, older than all of them, is still open: it was never among them.
        expect(live.destroyed || live.readableEnded).toBe(false)
        expect((yield* Effect.promise(() => send(port, "/healthz"))).status).toBe(200)
        expect((yield* Effect.promise(() => send(port, "/sessions", { headers: { authorization: `Bearer ${token}` } }))).status).toBe(200)
      } finally {
        for (const socket of [live, login, ...silent]) socket.destroy()
      }
    }), 30_000)

  it.scopedLive("a request with the token leaves the strangers when Node reads it, not when its start's turn in the scheduler comes", () =>
    Effect.gen(function*() {
      // The server's scheduler, held: the starts of requests (tasks of no fiber) wait, as behind a
      // busy queue — `serve` starts each request but /healthz as a task of its scheduler.
      let held = true
      const waiting: Array<() => void> = []
      const holding: Scheduler.Scheduler = {
        shouldYield: (fiber) => Scheduler.defaultScheduler.shouldYield(fiber),
        scheduleTask: (task, priority, fiber) => {
          if (held && fiber === undefined) waiting.push(task)
          else Scheduler.defaultScheduler.scheduleTask(task, priority, fiber)
        }
      }
      const max = 10
      held = false
      const { server } = yield* startIn({ headersTimeout: "10 minutes", maxUnauthenticatedConnections: max }).pipe(Effect.withScheduler(holding))
      const { port, token } = server
      held = true
      const client = yield* Effect.promise(() => opened(port))
      client.on("error", () => {})
      let answer = ""
      client.on("data", (chunk: Buffer) => (answer += chunk.toString("utf8")))
      client.write(`GET /sessions HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${token}\r\n\r\n`)
      // Read by Node: its start waits in the queue.
      while (waiting.length === 0) yield* Effect.sleep("5 millis")
      // Strangers enough to close the oldest five of them.
      const silent: Array<Socket> = []
      let closes = 0
      for (let i = 0; i < max + 5; i++) {
        const socket = yield* Effect.promise(() => opened(port))
        socket.on("error", () => {})
        socket.once("close", () => closes++)
        silent.push(socket)
      }
      try {
        while (closes < 5) yield* Effect.sleep("5 millis")
        expect(client.destroyed || client.readableEnded).toBe(false)
        held = false
        for (const task of waiting.splice(0)) Scheduler.defaultScheduler.scheduleTask(task, 0)
        while (!answer.includes("\r\n\r\n") && !client.destroyed) yield* Effect.sleep("5 millis")
        expect(answer.split("\r\n")[0]).toBe("HTTP/1.1 200 OK")
      } finally {
        for (const socket of [client, ...silent]) socket.destroy()
      }
    }), 30_000)

  it.scopedLive("a request under way is not cut: a /live stream outlasts the headers timeout", () =>
    Effect.gen(function*() {
      const { cwd, server } = yield* startIn({ headersTimeout: "200 millis", keepAlive: "10 seconds", responses: [{ chunks: ["late"] }] })
      const session = yield* server.client.sessions.create({ payload: { cwd } })
      const events = Effect.promise(() =>
        liveUntil(`${server.url}/sessions/${session.sessionId}/live`, { token: server.token }, (event) => event.type === "turn.completed"))
      const seen = yield* Effect.fork(events)
      // Nothing is sent on the stream for several times the headers timeout, then the turn runs.
      yield* Effect.sleep("1500 millis")
      yield* server.client.sessions.startTurn({ path: { id: session.sessionId }, payload: { message: "hi" } })
      const all = yield* seen.await.pipe(Effect.flatten)
      expect(all.map((event) => event.type)).toContain("model.delta")
    }), 30_000)

  it.scopedLive("a body is not read before the request shows a credential: 401 at once, not after 32 MiB", () =>
    Effect.gen(function*() {
      const { server } = yield* startIn()
      const { port } = server
      // Headers announcing a turn's largest body, and a first KiB of it: no token.
      const answer = yield* Effect.promise(() =>
        new Promise<string>((resolve) => {
          const socket = connect(port, "127.0.0.1", () => {
            socket.write(
              `POST /sessions/sess_x/turns HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\n` +
                `Content-Length: ${server.config.maxTurnBodyBytes}\r\n\r\n{"message": "${"a".repeat(1024)}`
            )
          })
          let text = ""
          socket.on("data", (chunk) => {
            text += chunk.toString("utf8")
            if (text.includes("\r\n\r\n")) {
              socket.destroy()
              resolve(text.split("\r\n")[0]!)
            }
          })
          socket.on("error", () => {})
          socket.once("close", () => resolve("closed without an answer"))
          // The rest of the body never comes: a server that waits for it never answers, and the test
          // fails at vitest's timeout (no deadline of its own, which a busy machine could outlast).
        })
      )
      expect(answer).toBe("HTTP/1.1 401 Unauthorized")
      // The one body read without a credential, the sign-in form's, is a token: 4 KiB at most.
      const login = yield* Effect.promise(() =>
        send(port, "/login", {
          method: "POST",
          headers: { "content-type": "application/json", "sec-fetch-site": "same-origin" },
          body: JSON.stringify({ token: "x".repeat(5000) })
        })
      )
      expect(login.status).toBe(413)
    }), 30_000)
})
