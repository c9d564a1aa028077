/**
 * Two `serve` processes on one data dir: a Stop sent to the one that does not drive the turn used to
 * answer `200 {ok}` and cancel nothing (review62b) — the turn ran on to `final`. It answers 409
 * `SessionBusy` now, as a steer there does; the server that drives it cancels it.
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { liveUntil } from "./harness.js"
import { startServe } from "./serveProcess.js"

const dir = realpathSync(mkdtempSync(join(tmpdir(), "effect-agent-cancel-elsewhere-")))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe("POST /cancel on a server that does not drive the turn", () => {
  it("answers 409 SessionBusy and leaves the turn to the server that drives it, which cancels it", { timeout: 120_000 }, async () => {
    const cwd = join(dir, "work")
    mkdirSync(cwd, { recursive: true })
    const script = join(dir, "script.json")
    // A slow answer: the turn is still open when B is asked to stop it, however loaded the machine.
    writeFileSync(script, JSON.stringify({ responses: [{ chunks: Array.from({ length: 600 }, (_, i) => `tick ${i} `), delay: "100 millis" }] }))
    const data = join(dir, "data")
    const a = await startServe(["--script", script, "--data-dir", data], { cwd })
    const b = await startServe(["--script", script, "--data-dir", data], { cwd })
    try {
      const headers = (token: string) => ({ authorization: `Bearer ${token}`, "content-type": "application/json" })
      const { sessionId } = await (await fetch(`${a.url}/sessions`, { method: "POST", headers: headers(a.token), body: JSON.stringify({ cwd }) })).json() as { sessionId: string }
      const { turnId } = await (await fetch(`${a.url}/sessions/${sessionId}/turns`, { method: "POST", headers: headers(a.token), body: JSON.stringify({ message: "go" }) })).json() as { turnId: string }
      await liveUntil(`${a.url}/sessions/${sessionId}/live`, { token: a.token }, (e) => e.type === "model.delta")

      for (const query of [`?turnId=${turnId}`, ""]) {
        const refused = await fetch(`${b.url}/sessions/${sessionId}/cancel${query}`, { method: "POST", headers: headers(b.token) })
        expect(refused.status).toBe(409)
        expect(await refused.json()).toMatchObject({ error: "SessionBusy" })
      }

      const stopped = await fetch(`${a.url}/sessions/${sessionId}/cancel?turnId=${turnId}`, { method: "POST", headers: headers(a.token) })
      expect(stopped.status).toBe(200)
      const events = await liveUntil(`${a.url}/sessions/${sessionId}/live`, { token: a.token }, (e) => e.type === "turn.completed")
      expect(events.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "cancelled" } })

      // Nothing open any more: a Stop on B is the late cancel it always was, answered ok.
      const late = await fetch(`${b.url}/sessions/${sessionId}/cancel`, { method: "POST", headers: headers(b.token) })
      expect(late.status).toBe(200)
    } finally {
      for (const s of [a, b]) s.server.child.kill("SIGTERM")
      await Promise.all([a.server.done, b.server.done])
    }
  })
})
