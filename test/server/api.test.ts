/**
 * The API through its typed client (`HttpApiClient`) against a real server on port 0: every route,
 * every error status with its `{error, message}` body, the token on every route but /healthz.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServer from "@effect/platform/HttpServer"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import { Security, Server, ServerConfig } from "../../src/server.js"
import { embedderEngine, expectWireError, liveUntil, raw, startIn, storedEvents, workspace } from "./harness.js"

const packageVersion = (JSON.parse(readFileSync(join(import.meta.dirname, "../../package.json"), "utf8")) as { version: string }).version

const json = (body: unknown) => ({ method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json" } })

describe("the HTTP API", () => {
  it.scopedLive("every route through HttpApiClient: create, list, get, turns, events (JSON and NDJSON), approvals, cancel", () =>
    Effect.gen(function*() {
      const { cwd, dataDir, server } = yield* startIn({
        responses: [
          { chunks: ["Hello", " there"] },
          { chunks: ["Writing."], toolCalls: [{ tool: "write_file", args: { path: "a.txt", content: "one" } }] },
          { chunks: ["Done."] }
        ]
      })
      const { client } = server

      expect(yield* client.health.healthz()).toEqual({ ok: true })
      const session = yield* client.sessions.create({ payload: { cwd } })
      expect(session).toMatchObject({ cwd, client: "web" })
      const defaulted = yield* client.sessions.create({ payload: {} })
      expect(defaulted.cwd).toBe(cwd)
      const listed = yield* client.sessions.list()
      expect(listed.map((s) => s.sessionId).sort()).toEqual([session.sessionId, defaulted.sessionId].sort())

      const { turnId } = yield* client.sessions.startTurn({ path: { id: session.sessionId }, payload: { message: "hi" } })
      const first = yield* Effect.promise(() =>
        liveUntil(`${server.url}/sessions/${session.sessionId}/live`, { token: server.token }, (e) => e.type === "turn.completed")
      )
      expect(first.map((e) => e.sequence)).toEqual(first.map((_, i) => i + 1))
      expect(first.filter((e) => e.type === "model.delta").map((e) => (e.payload as { text: string }).text)).toEqual(["Hello", " there"])
      expect(first.at(-1)).toMatchObject({ turnId, payload: { stopReason: "final" } })

      const events = yield* client.sessions.events({ path: { id: session.sessionId }, urlParams: { after: 3 } })
      expect(events.map((e) => e.sequence)).toEqual(first.slice(3).map((e) => e.sequence))
      const ndjson = yield* raw(`${server.url}/sessions/${session.sessionId}/events?after=0`, {
        token: server.token,
        headers: { accept: "application/x-ndjson" }
      })
      expect(ndjson.headers.get("content-type")).toContain("application/x-ndjson")
      const lines = (ndjson.body as string).trim().split("\n")
      // The stored JSON, unchanged: what the JSONL store wrote, line for line.
      expect(lines).toEqual(readFileSync(join(dataDir, "sessions", `${session.sessionId}.jsonl`), "utf8").trim().split("\n").filter((line) => !line.startsWith('{"format"')))

      // A turn pausing on a write: the state shows the pending approval; approving it over HTTP runs the tool.
      const second = yield* client.sessions.startTurn({ path: { id: session.sessionId }, payload: { message: "write a.txt" } })
      const paused = yield* Effect.promise(() =>
        liveUntil(`${server.url}/sessions/${session.sessionId}/live`, { token: server.token, after: first.length }, (e) =>
          e.type === "permission.resolved" && e.payload.decision === "ask")
      )
      const call = paused.at(-1)!.payload as { toolCallId: string }
      const state = yield* client.sessions.get({ path: { id: session.sessionId } })
      expect(state).toMatchObject({ phase: "paused", openTurnId: second.turnId, pendingApprovals: [{ toolCallId: call.toolCallId, tool: "write_file" }] })
      yield* client.sessions.approve({ path: { id: session.sessionId, toolCallId: call.toolCallId }, payload: { decision: "allow" } })
      const rest = yield* Effect.promise(() =>
        liveUntil(`${server.url}/sessions/${session.sessionId}/live`, { token: server.token, after: paused.at(-1)!.sequence }, (e) =>
          e.type === "turn.completed")
      )
      expect(rest.map((e) => e.type)).toContain("tool.completed")
      expect(readFileSync(join(cwd, "a.txt"), "utf8")).toBe("one")
      expect((yield* client.sessions.get({ path: { id: session.sessionId } })).phase).toBe("idle")

      // Cancel answers once the turn has closed (and does nothing on an idle session).
      expect(yield* client.sessions.cancel({ path: { id: session.sessionId } })).toEqual({ ok: true })
      const all = yield* storedEvents(server, session.sessionId)
      expect(all.map((e) => e.sequence)).toEqual(all.map((_, i) => i + 1))
    }))

  it.scopedLive("a cancel stops a running turn and answers after it closed", () =>
    Effect.gen(function*() {
      const { server } = yield* startIn({ responses: [{ chunks: ["a", "b", "c", "d"], delay: "10 seconds" }] })
      const session = yield* server.client.sessions.create({ payload: {} })
      yield* server.client.sessions.startTurn({ path: { id: session.sessionId }, payload: { message: "slow" } })
      yield* server.client.sessions.cancel({ path: { id: session.sessionId } })
      const events = yield* storedEvents(server, session.sessionId)
      expect(events.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "cancelled" } })
    }))

  // Its fields are all optional, as compact's and fork's are, whose body may be left out; this one
  // answered 400 "Expected a JSON object, actual null" to `curl -X POST …/sessions`.
  it.scopedLive("POST /sessions without a body is the same as {}: a session in the server's cwd", () =>
    Effect.gen(function*() {
      const { cwd, server } = yield* startIn()
      const created = yield* raw(`${server.url}/sessions`, { method: "POST", token: server.token })
      expect(created.status, JSON.stringify(created.body)).toBe(201)
      expect(created.body).toMatchObject({ cwd, client: "web" })
      const refused = yield* raw(`${server.url}/sessions`, { ...json({ cwd: "relative" }), token: server.token })
      expect(refused.status).toBe(400)
    }))

  it.scopedLive("errors: 401 without or with a wrong token, 404, 409, 400, 413, all as {error, message}", () =>
    Effect.gen(function*() {
      const { server } = yield* startIn({ maxBodyBytes: 1000, responses: [{ chunks: ["slow"], delay: "10 seconds" }] })
      const { url } = server

      // /healthz alone is open.
      expect((yield* raw(`${url}/healthz`)).status).toBe(200)
      for (const path of ["/sessions", "/sessions/x", "/sessions/x/events", "/sessions/x/live", "/openapi.json"]) {
        const none = yield* raw(`${url}${path}`)
        expect(none.status, path).toBe(401)
        expectWireError(none.body, "Unauthorized")
        const wrong = yield* raw(`${url}${path}`, { token: "wrong-token" })
        expect(wrong.status, path).toBe(401)
        const almost = yield* raw(`${url}${path}`, { token: server.token.slice(0, -1) })
        expect(almost.status, path).toBe(401)
      }
      expect((yield* raw(`${url}/sessions`, { ...json({}), token: "nope" })).status).toBe(401)
      // The viewer's cookie (per port, a secret derived from the token) with its page's key; origin.integration.test.ts has the rest.
      const secret = Redacted.value(Security.sessionSecret(Redacted.make(server.token), String(server.port)))
      const key = Redacted.value(Security.pageKey(Redacted.make(server.token), String(server.port)))
      expect((yield* raw(`${url}/sessions`, { headers: { cookie: `effect_agent_session_${server.port}=${secret}`, "x-effect-agent-key": key } })).status).toBe(200)
      expect((yield* raw(`${url}/sessions`, { headers: { cookie: `effect_agent_session_${server.port}=${secret}` } })).status).toBe(401)
      expect((yield* raw(`${url}/sessions`, { headers: { cookie: `effect_agent_session_${server.port}=wrong` } })).status).toBe(401)

      // Typed errors through the client.
      const missing = yield* server.client.sessions.get({ path: { id: "no-such-session" } }).pipe(Effect.flip)
      expect(missing).toMatchObject({ error: "SessionNotFound" })
      const session = yield* server.client.sessions.create({ payload: {} })
      yield* server.client.sessions.startTurn({ path: { id: session.sessionId }, payload: { message: "one" } })
      const busy = yield* server.client.sessions.startTurn({ path: { id: session.sessionId }, payload: { message: "two" } }).pipe(Effect.flip)
      expect(busy).toMatchObject({ error: "TurnInProgress" })
      const notPending = yield* server.client.sessions.approve({ path: { id: session.sessionId, toolCallId: "call_9" }, payload: { decision: "allow" } }).pipe(
        Effect.flip
      )
      expect(notPending).toMatchObject({ error: "ApprovalNotPending" })

      // The same statuses and bodies on the wire.
      const notFound = yield* raw(`${url}/sessions/nope/live`, { token: server.token })
      expect(notFound.status).toBe(404)
      expectWireError(notFound.body, "SessionNotFound")
      const conflict = yield* raw(`${url}/sessions/${session.sessionId}/turns`, { ...json({ message: "three" }), token: server.token })
      expect(conflict.status).toBe(409)
      expectWireError(conflict.body, "TurnInProgress")
      const noRoute = yield* raw(`${url}/no/such/route`, { token: server.token })
      expect(noRoute.status).toBe(404)
      expectWireError(noRoute.body, "NotFound")
      const bad = yield* raw(`${url}/sessions/${session.sessionId}/turns`, { ...json({ text: 1 }), token: server.token })
      expect(bad.status).toBe(400)
      expectWireError(bad.body, "BadRequest")
      // A field the route does not take is refused, naming it, not silently dropped: images sent
      // with a steer or a follow-up (they go with a turn), a typo in a session's MCP server, a nested extra.
      const before = (yield* storedEvents(server, session.sessionId)).length
      for (const [path, body, field] of [
        [`/sessions/${session.sessionId}/steer`, { message: "look", images: [{ data: "iVBORw0KGgo=" }] }, "images"],
        [`/sessions/${session.sessionId}/followups`, { message: "later", images: [] }, "images"],
        ["/sessions", { mcpServers: { files: { comand: "npx" } } }, "comand"],
        [`/sessions/${session.sessionId}/title`, { title: "x", titel: "y" }, "titel"],
        [`/sessions/${session.sessionId}/fork`, { atSequence: 1, at: 2 }, "at"]
      ] as const) {
        const refused = yield* raw(`${url}${path}`, { ...json(body), token: server.token })
        expect(refused.status, path).toBe(400)
        expectWireError(refused.body, "BadRequest")
        expect((refused.body as { message: string }).message, path).toContain(`"${field}"`)
      }
      expect(yield* storedEvents(server, session.sessionId)).toHaveLength(before)
      const notJson = yield* raw(`${url}/sessions`, { method: "POST", body: "{", headers: { "content-type": "application/json" }, token: server.token })
      expect(notJson.status).toBe(400)
      expectWireError(notJson.body, "BadRequest")
      const empty = yield* raw(`${url}/sessions/${session.sessionId}/turns`, { ...json({ message: " " }), token: server.token })
      expect(empty.status).toBe(400)
      const badId = yield* raw(`${url}/sessions/${session.sessionId}/live`, { token: server.token, headers: { "last-event-id": "x" } })
      expect(badId.status).toBe(400)
      const badAfter = yield* raw(`${url}/sessions/${session.sessionId}/events?after=-1`, { token: server.token })
      expect(badAfter.status).toBe(400)
      const tooLarge = yield* raw(`${url}/sessions/${session.sessionId}/turns`, { ...json({ message: "x".repeat(2000) }), token: server.token })
      expect(tooLarge.status).toBe(413)
      expectWireError(tooLarge.body, "PayloadTooLarge")
      // A body sent without Content-Length (chunked) is refused unread.
      const chunked = yield* raw(`${url}/sessions/${session.sessionId}/turns`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        token: server.token,
        body: new ReadableStream({
          start(controller) {
            controller.enqueue(new TextEncoder().encode(JSON.stringify({ message: "y".repeat(5000) })))
            controller.close()
          }
        }),
        duplex: "half"
      } as RequestInit)
      expect(chunked.status).toBe(411)
      expectWireError(chunked.body, "LengthRequired")
      // Not even the token check reads a body first; and no CORS header ever goes out.
      const tooLargeNoToken = yield* raw(`${url}/sessions`, { ...json({ cwd: "x".repeat(2000) }) })
      expect([401, 413]).toContain(tooLargeNoToken.status)
      const preflight = yield* raw(`${url}/sessions`, { method: "OPTIONS", headers: { origin: "https://evil.example", "access-control-request-method": "POST" } })
      expect(preflight.headers.get("access-control-allow-origin")).toBeNull()
      yield* server.client.sessions.cancel({ path: { id: session.sessionId } })
    }))

  it.scopedLive("/openapi.json describes the routes from the same definitions", () =>
    Effect.gen(function*() {
      const { server } = yield* startIn()
      const spec = yield* raw(`${server.url}/openapi.json`, { token: server.token })
      expect(spec.status).toBe(200)
      // Named after the package (a client generated from it was called "Api" 0.0.1 before).
      expect((spec.body as { info: unknown }).info).toEqual({ title: "effect-agent", version: packageVersion })
      const paths = Object.keys((spec.body as { paths: Record<string, unknown> }).paths).sort()
      expect(paths).toEqual([
        "/healthz",
        "/sessions",
        "/sessions/{id}",
        "/sessions/{id}/approvals/{toolCallId}",
        "/sessions/{id}/cancel",
        "/sessions/{id}/compact",
        "/sessions/{id}/events",
        "/sessions/{id}/followups",
        "/sessions/{id}/fork",
        "/sessions/{id}/live",
        "/sessions/{id}/rewind",
        "/sessions/{id}/steer",
        "/sessions/{id}/title",
        "/sessions/{id}/turns"
      ])
      const operations = (spec.body as { paths: Record<string, Record<string, { responses: Record<string, unknown> }>> }).paths
      expect(Object.keys(operations["/sessions/{id}/followups"]!).sort()).toEqual(["delete", "post"])
      expect(Object.keys(operations["/sessions/{id}/compact"]!["post"]!.responses)).toEqual(expect.arrayContaining(["200", "409", "502"]))
      expect(Object.keys(operations["/sessions/{id}/fork"]!["post"]!.responses)).toEqual(expect.arrayContaining(["201", "400", "404"]))
    }))

  it.live("an embedder mounts the same API as a Layer in its own @effect/platform app (here a web handler)", () =>
    Effect.gen(function*() {
      const { cwd, dataDir } = workspace()
      const engine = embedderEngine(dataDir)
      const { dispose, handler } = HttpApiBuilder.toWebHandler(
        // The app's own host name is named: any other (but localhost and addresses) is refused, as DNS rebinding would send it.
        Layer.mergeAll(
          Server.layer(ServerConfig.make({ token: "embedded-token", defaultCwd: cwd, allowedHosts: ["app.local"] })).pipe(Layer.provide(engine)),
          HttpServer.layerContext
        )
      )
      const auth = { authorization: "Bearer embedded-token", "content-type": "application/json" }
      const health = yield* Effect.promise(() => handler(new Request("http://app.local/healthz")))
      expect(health.status).toBe(200)
      const created = yield* Effect.promise(() => handler(new Request("http://app.local/sessions", { method: "POST", headers: auth, body: "{}" })))
      expect(created.status).toBe(201)
      const session = (yield* Effect.promise(() => created.json())) as { sessionId: string; cwd: string }
      expect(session.cwd).toBe(cwd)
      const refused = yield* Effect.promise(() => handler(new Request("http://app.local/sessions")))
      expect(refused.status).toBe(401)
      const rebound = yield* Effect.promise(() => handler(new Request("http://evil.example/sessions", { headers: auth })))
      expect(rebound.status).toBe(403)
      yield* Effect.promise(() => dispose())
    }))
})
