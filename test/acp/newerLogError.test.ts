/**
 * review58b: `session/load` of a log a newer effect-agent wrote answered "the event store failed to
 * read (corrupt)" — the editor's user was left to think the log damaged (and might remove it). The
 * store's detail names files and stays out of the answer; its kind is said.
 */
import { describe, expect, it } from "@effect/vitest"
import { requestErrorOf } from "../../src/acp/AcpAgent.js"
import { EventStoreFailure } from "../../src/index.js"

describe("an ACP client asking for a log of a newer format version", () => {
  it("is told a newer effect-agent wrote it, not that it is corrupt; no path in the answer", () => {
    const error = requestErrorOf(
      new EventStoreFailure({
        operation: "read",
        reason: "corrupt",
        detail: "unsupported log format version 99",
        path: "/home/u/.effect-agent/sessions/s.jsonl",
        line: 1,
        sessionId: "s"
      })
    )
    expect(error.code).toBe(-32603)
    expect(error.message).toBe("the session's log was written by a newer effect-agent: read it with that version")
    expect(error.data).toEqual({ errorCode: "event_store_failure", reason: "corrupt", newerVersion: true })
    expect(JSON.stringify({ message: error.message, data: error.data })).not.toContain("/home/u")
  })

  it("a damaged log still says corrupt", () => {
    const error = requestErrorOf(new EventStoreFailure({ operation: "read", reason: "corrupt", detail: "not a valid event", sessionId: "s" }))
    expect(error.message).toBe("the event store failed to read (corrupt)")
    expect(error.data).toEqual({ errorCode: "event_store_failure", reason: "corrupt" })
  })
})
