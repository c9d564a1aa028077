/**
 * A live session and the views it hands out are objects V8 keeps in a hidden class: made as object
 * literals with a getter (a new function each time the literal is made), each had a dictionary of its
 * properties, and every read of a session's `state`, `transcript` or `writes` — a dozen a commit —
 * was a hash lookup; each of the six or so `live` reads a step made such a view (step20). Failed on
 * main: `%HasFastProperties` false for both, and `live` a new object at each read.
 */
import { setFlagsFromString } from "node:v8"
import { describe, expect, it } from "vitest"
import type { EventOfType } from "../../src/domain/AgentEvent.js"
import * as SessionState from "../../src/domain/SessionState.js"
import * as LiveSession from "../../src/engine/LiveSession.js"

setFlagsFromString("--allow-natives-syntax")
// Compiled after the flag is set: V8's own answer, not a guess from the outside.
const hasFastProperties = new Function("o", "return %HasFastProperties(o)") as (o: object) => boolean

const created: EventOfType<"session.created"> = {
  id: "evt_1",
  sessionId: "sess_1",
  sequence: 1,
  timestamp: "2026-12-06T00:00:00.000Z",
  type: "session.created",
  payload: { cwd: "/w", client: "test" }
}

describe("a live session's shape", () => {
  it("has fast properties, and so does its view", () => {
    const session = LiveSession.replayed(SessionState.fromCreated(created), [created])
    expect(hasFastProperties(session)).toBe(true)
    expect(hasFastProperties(session.live)).toBe(true)
  })

  it("hands out one view a state, which reads the state it was made of and the transcript now", () => {
    const session = LiveSession.replayed(SessionState.fromCreated(created), [created])
    const before = session.live
    expect(session.live).toBe(before)
    expect(before.state).toBe(session.state)
    expect(before.transcript).toEqual(session.transcript.snapshot())
    const next: SessionState.SessionState = { ...session.state, title: "renamed" }
    session.state = next
    const after = session.live
    expect(after).not.toBe(before)
    expect(after.state).toBe(next)
    expect(before.state).not.toBe(next)
    expect(Object.keys(after)).toContain("state")
  })
})
