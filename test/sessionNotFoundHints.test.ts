/**
 * "Session not found" says where the stored sessions are listed, on every surface: the HTTP API
 * points at `GET /sessions`, ACP at `session/list` (and the CLI's `effect-agent sessions`). The CLI's
 * own line is checked on the built CLI (test/cli/unknownSession.integration.test.ts).
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { requestErrorOf } from "../src/acp/AcpAgent.js"
import { SessionNotFound } from "../src/index.js"
import { toWire } from "../src/server/Handlers.js"

describe("a session that is not stored", () => {
  it.effect("over HTTP: 404 SessionNotFound, naming GET /sessions", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(toWire(new SessionNotFound({ sessionId: "sess_nope" })))
      expect(error).toMatchObject({ error: "SessionNotFound", message: "No session sess_nope; GET /sessions lists the stored ones" })
    }))

  it("over ACP: -32002 with data.sessionId, naming session/list", () => {
    const error = requestErrorOf(new SessionNotFound({ sessionId: "sess_nope" }))
    expect(error.code).toBe(-32002)
    expect(error.data).toEqual({ sessionId: "sess_nope" })
    expect(error.message).toBe("Resource not found: no session sess_nope here; session/list lists the stored ones (effect-agent sessions in a terminal)")
  })
})
