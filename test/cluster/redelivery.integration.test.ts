/**
 * Messages applied once (issue 24, item 2), across real runner processes on the test PostgreSQL:
 * the owner of a session is killed (SIGKILL, from inside, by the test fault
 * `EFFECT_AGENT_TEST_KILL_AFTER_STORED`) once a follow-up — and, on a second owner, an approval's
 * answer — is in the log and before it answers. The runner the request came through sees its
 * message delivered again to the session's next owner (itself), which finds the message's key in
 * the log and answers from it: the HTTP request succeeds, with the queueId that was stored, and the
 * log holds the follow-up and the answer once each.
 *
 * Which runner owns a session is read from the line each runner prints when a session arrives.
 */
import { describe, expect, it } from "vitest"
import type { AgentEvent } from "../../src/index.js"
import { expectWellFormedLog } from "../helpers.js"
import { freePort } from "../../bench/support/ports.js"
import { ofType, type Runner, testCluster } from "./processes.js"

const cluster = testCluster("redelivery", { token: "redelivery-test-token-0123456789abcdef", writerLeaseTtl: "8 seconds" })
const { eventsOf, post, sessionOwnedBy, untilEvent, writeScript } = cluster
const shards = 6

const launch = async (script: string, fault?: string): Promise<Runner> => {
  const runnerPort = await freePort()
  const args = [
    "serve", "--port", "0", "--cluster", "--store", "postgres", "--runner-port", String(runnerPort),
    "--shards-per-group", String(shards), "--shard-lock-ttl", "3", "--script", script
  ]
  return cluster.launch(runnerPort, args, fault === undefined ? {} : { env: { EFFECT_AGENT_TEST_KILL_AFTER_STORED: fault } })
}

describe("a message whose owner dies between storing it and answering", () => {
  it("is answered from the log by the next owner and stored once: a follow-up, an approval's answer", { timeout: 180_000 }, async () => {
    const echo = writeScript("echo.json", { responses: [] })
    const b = await launch(echo)

    // A follow-up: its owner A dies once it is stored; B, which the request came through, answers it.
    const a = await launch(echo, "FollowUp")
    const queuedOn = await sessionOwnedBy(b, a)
    const followUp = await post(b.http, `/sessions/${queuedOn}/followups`, { message: "once" })
    expect((await a.process.done).signal).toBe("SIGKILL")
    expect(a.stderr()).toContain("test fault: killed after storing FollowUp")
    expect(followUp.status, JSON.stringify(followUp.body)).toBe(202)
    const afterFollowUp = await eventsOf(b.http, queuedOn)
    const queued = ofType(afterFollowUp, "followup.queued")
    expect(queued).toHaveLength(1)
    expect(followUp.body["queueId"]).toBe(queued[0]!.payload.queueId)
    expect(b.owned()).toContain(queuedOn)

    // An approval's answer: its owner C pauses a turn on a write, then dies once the answer is stored.
    const write = writeScript("write.json", { responses: [{ toolCalls: [{ tool: "write_file", args: { path: "once.txt", content: "x\n" } }] }] })
    const c = await launch(write, "ResolvePermission")
    const approvedOn = await sessionOwnedBy(b, c)
    const started = await post(b.http, `/sessions/${approvedOn}/turns`, { message: "write it" })
    expect(started.status, JSON.stringify(started.body)).toBe(202)
    const asked = await untilEvent(b.http, approvedOn, (event): event is AgentEvent.EventOfType<"permission.resolved"> =>
      event.type === "permission.resolved" && event.payload.decision === "ask")
    const toolCallId = asked.payload.toolCallId
    const approved = await post(b.http, `/sessions/${approvedOn}/approvals/${toolCallId}`, { decision: "allow" })
    expect((await c.process.done).signal).toBe("SIGKILL")
    expect(c.stderr()).toContain("test fault: killed after storing ResolvePermission")
    expect(approved, JSON.stringify(approved.body)).toMatchObject({ status: 200, body: { ok: true } })
    await untilEvent(b.http, approvedOn, (event) => event.type === "turn.completed" && event.turnId === started.body["turnId"])
    const log = await eventsOf(b.http, approvedOn)
    expectWellFormedLog(log)
    expect(ofType(log, "permission.resolved").filter((event) => event.payload.toolCallId === toolCallId).map((event) => event.payload.decision)).toEqual([
      "ask",
      "allow"
    ])
    expect(b.owned()).toContain(approvedOn)
    // B still serves, and its own follow-up log is still well formed.
    expectWellFormedLog(await eventsOf(b.http, queuedOn))
  })
})
