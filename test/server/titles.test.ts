/**
 * Session titles over HTTP (issue 23): the list and the state carry the title; `POST
 * /sessions/:id/title` renames (typed client and raw requests), refusing an empty or oversized title
 * with a 400 that stores nothing; `GET /sessions?cwd=&search=` narrows the list.
 */
import { mkdirSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { expectWireError, liveUntil, raw, start, storedEvents, workspace } from "./harness.js"

const json = (body: unknown) => ({ method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json" } })

describe("session titles over HTTP", () => {
  it.scopedLive("list and state carry the title; POST /sessions/:id/title renames; ?cwd= and ?search= narrow the list, ?limit= cuts it", () =>
    Effect.gen(function*() {
      const { cwd, dataDir } = workspace()
      const other = join(cwd, "sub", "project")
      mkdirSync(other, { recursive: true })
      const server = yield* start({ cwd, dataDir, responses: [{ chunks: ["one"] }, { chunks: ["two"] }] })
      const { client } = server
      const first = yield* client.sessions.create({ payload: {} })
      const second = yield* client.sessions.create({ payload: { cwd: other } })
      yield* Effect.forEach([[first.sessionId, "Fix the <b>build</b>\nthen more"], [second.sessionId, "\x1b[31mDeploy\x1b[0m the site"]] as const, ([id, message]) =>
        Effect.gen(function*() {
          yield* client.sessions.startTurn({ path: { id }, payload: { message } })
          // The turn runs on its own: its end is awaited on /live.
          yield* Effect.promise(() => liveUntil(`${server.url}/sessions/${id}/live`, { token: server.token }, (e) => e.type === "turn.completed"))
        }))
      const titles = Effect.map(client.sessions.list(), (sessions) => Object.fromEntries(sessions.map((s) => [s.sessionId, s.title])))
      expect(yield* titles).toEqual({ [first.sessionId]: "Fix the <b>build</b>", [second.sessionId]: "Deploy the site" })
      expect((yield* client.sessions.get({ path: { id: first.sessionId } })).title).toBe("Fix the <b>build</b>")

      expect(yield* client.sessions.rename({ path: { id: first.sessionId }, payload: { title: "  Build\tfix\n" } })).toEqual({ title: "Build fix" })
      expect((yield* titles)[first.sessionId]).toBe("Build fix")
      expect((yield* client.sessions.get({ path: { id: first.sessionId } })).title).toBe("Build fix")
      expect((yield* storedEvents(server, first.sessionId)).at(-1)).toMatchObject({ type: "session.titled", payload: { title: "Build fix" } })

      // Refused, nothing stored: empty once plain, too long, 1 MB; an unknown session is 404.
      const before = (yield* storedEvents(server, first.sessionId)).length
      for (const title of ["\x07 \x1b[0m", "x".repeat(201), "y".repeat(1 << 20)]) {
        const refused = yield* raw(`${server.url}/sessions/${first.sessionId}/title`, { ...json({ title }), token: server.token })
        expect([400, 413]).toContain(refused.status)
        expectWireError(refused.body, refused.status === 400 ? "BadRequest" : "PayloadTooLarge")
      }
      expect((yield* storedEvents(server, first.sessionId)).length).toBe(before)
      expect((yield* raw(`${server.url}/sessions/sess_nope/title`, { ...json({ title: "x" }), token: server.token })).status).toBe(404)

      const ids = (query: string) =>
        Effect.map(raw(`${server.url}/sessions${query}`, { token: server.token }), (r) => (r.body as Array<{ sessionId: string }>).map((s) => s.sessionId))
      expect(yield* ids(`?cwd=${encodeURIComponent(join(cwd, "sub"))}`)).toEqual([second.sessionId])
      expect((yield* ids(`?cwd=${encodeURIComponent(cwd)}`)).sort()).toEqual([first.sessionId, second.sessionId].sort())
      expect(yield* ids("?search=BUILD")).toEqual([first.sessionId])
      expect(yield* ids(`?search=${second.sessionId.slice(-5)}`)).toEqual([second.sessionId])
      expect(yield* ids("?search=deploy%20site&cwd=%2Fnowhere")).toEqual([])
      const twice = yield* raw(`${server.url}/sessions?search=a&search=b`, { token: server.token })
      expect(twice.status).toBe(400)
      // ?limit= keeps the most recently active that many, after the filters; anything but 1..100000 is 400.
      const all = yield* ids("")
      expect(yield* ids("?limit=1")).toEqual(all.slice(0, 1))
      expect(yield* ids("?limit=5")).toEqual(all)
      expect(yield* ids(`?limit=1&cwd=${encodeURIComponent(join(cwd, "sub"))}`)).toEqual([second.sessionId])
      for (const limit of ["0", "-1", "1.5", "x", "100001", "1&limit=2"]) {
        const refused = yield* raw(`${server.url}/sessions?limit=${limit}`, { token: server.token })
        expect(refused.status).toBe(400)
        expectWireError(refused.body, "BadRequest")
      }
    }))
})
