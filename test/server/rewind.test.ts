/**
 * `POST /sessions/:id/rewind`: token-checked like every session route; rewinds the conversation
 * and the files (a file a turn created is removed); a file changed outside the agent is a 409
 * `RewindRefused` naming it, until `force: true`.
 */
import * as NodeFs from "node:fs/promises"
import * as NodePath from "node:path"
import { describe, expect, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import * as Transcript from "../../src/domain/Transcript.js"
import { raw, startIn } from "./harness.js"

const json = (body: unknown) => ({ method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) })

describe("POST /sessions/:id/rewind", () => {
  it.scopedLive("rewinds a turn that wrote a file: the file is gone, the log says session.rewound; conflicts are 409 naming the file; no token is 401", () =>
    Effect.gen(function*() {
      const { cwd, server } = yield* startIn({
        checkpoints: true,
        policy: { mode: "acceptEdits" },
        responses: [
          { chunks: ["Writing."], toolCalls: [{ tool: "write_file", args: { path: "notes.txt", content: "first\n" } }] },
          { chunks: ["Done."] },
          { chunks: ["Again."], toolCalls: [{ tool: "write_file", args: { path: "notes.txt", content: "second\n" } }] },
          { chunks: ["Done again."] }
        ]
      })
      const { url } = server
      const session = yield* server.client.sessions.create({ payload: {} })
      const sessionId = session.sessionId
      yield* Stream.runDrain(server.engine.runTurn({ sessionId, userMessage: "write notes" }))
      const point = (yield* server.engine.sessionState({ sessionId })).lastSequence
      yield* Stream.runDrain(server.engine.runTurn({ sessionId, userMessage: "write again" }))
      const notes = NodePath.join(cwd, "notes.txt")
      expect(yield* Effect.promise(() => NodeFs.readFile(notes, "utf8"))).toBe("second\n")

      const unauthorized = yield* raw(`${url}/sessions/${sessionId}/rewind`, json({ toSequence: point }))
      expect(unauthorized.status).toBe(401)
      const badPoint = yield* raw(`${url}/sessions/${sessionId}/rewind`, { ...json({ toSequence: point + 2 }), token: server.token })
      expect(badPoint.status).toBe(400)

      // Changed outside the agent: refused, naming it; nothing changed.
      yield* Effect.promise(() => NodeFs.writeFile(notes, "mine\n"))
      const refused = yield* raw(`${url}/sessions/${sessionId}/rewind`, { ...json({ toSequence: point }), token: server.token })
      expect(refused.status).toBe(409)
      expect(refused.body).toMatchObject({ error: "RewindRefused", reason: "changed_outside", files: ["notes.txt"] })
      expect(JSON.stringify(refused.body)).not.toContain(cwd)
      expect(yield* Effect.promise(() => NodeFs.readFile(notes, "utf8"))).toBe("mine\n")

      const forced = yield* server.client.sessions.rewind({ path: { id: sessionId }, payload: { toSequence: point, force: true } })
      expect(forced.forced).toEqual(["notes.txt"])
      expect(forced.changes.map((c) => c.path)).toEqual(["notes.txt"])
      expect(yield* Effect.promise(() => NodeFs.readFile(notes, "utf8"))).toBe("first\n")

      // Back to the start: the file the first turn created is removed.
      const all = yield* server.client.sessions.rewind({ path: { id: sessionId }, payload: { toSequence: 1 } })
      expect(all.toSequence).toBe(1)
      expect(yield* Effect.promise(() => NodeFs.access(notes).then(() => true, () => false))).toBe(false)
      const events = yield* server.client.sessions.events({ path: { id: sessionId }, urlParams: {} })
      expect(events.filter((e) => e.type === "session.rewound").map((e) => (e.payload as { toSequence: number }).toSequence)).toEqual([point, 1])
    }))
})

describe("POST /sessions/:id/fork {} after a rewind", () => {
  it.scopedLive("forks the session as it is: at its session.rewound, the rewound turn out of the fork's conversation", () =>
    Effect.gen(function*() {
      const { server } = yield* startIn({ responses: [{ chunks: ["answer 1"] }, { chunks: ["answer 2"] }, { chunks: ["answer 3"] }] })
      const { sessionId } = yield* server.client.sessions.create({ payload: {} })
      yield* Stream.runDrain(server.engine.runTurn({ sessionId, userMessage: "one" }))
      const point = (yield* server.engine.sessionState({ sessionId })).lastSequence
      yield* Stream.runDrain(server.engine.runTurn({ sessionId, userMessage: "two, rewound away" }))
      const rewound = yield* server.client.sessions.rewind({ path: { id: sessionId }, payload: { toSequence: point } })

      const forked = yield* raw(`${server.url}/sessions/${sessionId}/fork`, { ...json({}), token: server.token })
      expect(forked.status).toBe(201)
      const fork = (forked.body as { sessionId: string }).sessionId
      const events = yield* server.client.sessions.events({ path: { id: fork }, urlParams: {} })
      expect(events.at(-1)).toMatchObject({ type: "session.forked", payload: { fromSessionId: sessionId, atSequence: rewound.sequence } })
      // The fork's next turn continues the conversation the source has now.
      yield* Stream.runDrain(server.engine.runTurn({ sessionId: fork, userMessage: "three" }))
      const log = yield* Stream.runCollect(server.engine.replaySession({ sessionId: fork }))
      const said = Transcript.messages(Transcript.replay(Chunk.toReadonlyArray(log))).flatMap((m) => m.role === "user" ? [m.content] : [])
      expect(said).toEqual(["one", "three"])
    }))
})
