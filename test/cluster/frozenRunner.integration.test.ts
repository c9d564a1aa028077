/**
 * A runner frozen (SIGSTOP: a VM paused, a process stopped, a machine cut off by the network)
 * gives its shards up once its shard locks lapse (`--shard-lock-ttl`), as a dead one does, on real
 * runner processes and the test PostgreSQL. review59a: its shard locks were PostgreSQL advisory
 * locks, held as long as its idle connection stayed open — which the server keeps for a frozen
 * process, and for a lost machine until TCP keepalive (about two hours) — so a turn sent to one of
 * its sessions through another runner got no answer at all (151 s and counting).
 *
 * The frozen runner runs as if on another machine where this one allows: its sessions' writer
 * leases are then waited out (on this machine its process would tell it alive, and the next owner
 * answers `SessionBusy` instead — an answer still, bounded by the lease's ttl).
 */
import { hostname } from "node:os"
import { describe, expect, it } from "vitest"
import type { AgentEvent } from "../../src/index.js"
import { otherHostFlags } from "../cli/subprocess.js"
import { expectWellFormedLog } from "../helpers.js"
import { freePort } from "../../bench/support/ports.js"
import { testCluster } from "./processes.js"

const cluster = testCluster("frozen", { token: "frozen-test-token-0123456789abcdef", writerLeaseTtl: "6 seconds" })
const { eventsOf, post, sessionOwnedBy, untilEvent, writeScript } = cluster

const launch = async (script: string, host?: string) => {
  const runnerPort = await freePort()
  const args = [
    "serve", "--port", "0", "--cluster", "--store", "postgres", "--runner-port", String(runnerPort),
    "--shards-per-group", "6", "--shard-lock-ttl", "3", "--script", script
  ]
  return cluster.launch(runnerPort, args, host === undefined ? {} : { hostname: host })
}

const closes = (turnId: string) => (event: AgentEvent.AgentEvent) => event.type === "turn.completed" && event.turnId === turnId

describe("a frozen runner", () => {
  it("loses its shards once its locks lapse: a turn on its session through another runner is answered and runs there", { timeout: 300_000 }, async () => {
    const echo = writeScript("echo.json", { responses: [] })
    const a = await launch(echo)
    const remote = otherHostFlags() !== undefined
    const b = await launch(echo, remote ? `not-${hostname()}`.slice(0, 60) : undefined)
    const sessionId = await sessionOwnedBy(a, b)
    const first = await post(a.http, `/sessions/${sessionId}/turns`, { message: "before" })
    expect(first.status, JSON.stringify(first.body)).toBe(202)
    await untilEvent(a.http, sessionId, closes(first.body["turnId"] as string))

    b.process.child.kill("SIGSTOP")
    let after: Awaited<ReturnType<typeof post>>
    try {
      // On main this request was never answered: B's idle connection kept its advisory locks.
      after = await post(a.http, `/sessions/${sessionId}/turns`, { message: "after the freeze" })
      if (!remote) {
        // On this machine B's process is alive to the lease: an answer, not a hang.
        expect(after, JSON.stringify(after.body)).toMatchObject({ status: 409, body: { error: "SessionBusy" } })
        return
      }
      expect(after.status, JSON.stringify(after.body)).toBe(202)
      await untilEvent(a.http, sessionId, closes(after.body["turnId"] as string))
      expect(a.owned()).toContain(sessionId)
      expect(a.stderr()).toMatch(new RegExp(`took over the writer lease of session ${sessionId} left by .*, whose lease expired`))
    } finally {
      b.process.child.kill("SIGCONT")
    }

    // B wakes, finds at its next renewal that its locks were taken, and the shards settle again
    // (some may go back to it, and a turn running on a shard that moves is ended): the session goes
    // on, its log well formed, every turn closed once.
    const woken = await post(a.http, `/sessions/${sessionId}/turns`, { message: "after the wake" })
    expect(woken.status, JSON.stringify(woken.body)).toBe(202)
    await untilEvent(a.http, sessionId, closes(woken.body["turnId"] as string))
    const log = await eventsOf(a.http, sessionId)
    expectWellFormedLog(log)
    expect(log.filter((event) => event.type === "turn.completed").map((event) => event.turnId)).toEqual([first, after, woken].map((turn) => turn.body["turnId"]))
  })
})
