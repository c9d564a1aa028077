/**
 * A session's log replaced under a running `serve` (review65b): an editor's save, `sed -i` or a
 * backup restored renames another file — even a byte-identical copy — over the log. `serve` went on
 * appending to the file no longer named: the next turn answered 202, its state said the turn was
 * stored, and the file on disk never got it. Now the append fails typed (`log_replaced`), nothing
 * a 2xx claimed is missing, the file holds whole lines only, and the next turn goes to the new file.
 */
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, renameSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { liveUntil } from "./harness.js"
import { startServe } from "./serveProcess.js"

const dir = realpathSync(mkdtempSync(join(tmpdir(), "effect-agent-replaced-log-")))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe("a session's log renamed over under serve", () => {
  it("fails the next turn typed (log_replaced) rather than answering 202 for events the file never gets; the turn after goes to the new file", { timeout: 180_000 }, async () => {
    const cwd = join(dir, "work")
    mkdirSync(cwd, { recursive: true })
    const script = join(dir, "script.json")
    writeFileSync(script, JSON.stringify({ responses: [{ chunks: ["one"] }, { chunks: ["two"] }, { chunks: ["three"] }] }))
    const data = join(dir, "data")
    const s = await startServe(["--script", script, "--data-dir", data], { cwd })
    try {
      const headers = { authorization: `Bearer ${s.token}`, "content-type": "application/json" }
      const { sessionId } = await (await fetch(`${s.url}/sessions`, { method: "POST", headers, body: JSON.stringify({ cwd }) })).json() as { sessionId: string }
      const turn = async (message: string) => {
        const answer = await fetch(`${s.url}/sessions/${sessionId}/turns`, { method: "POST", headers, body: JSON.stringify({ message }) })
        return { status: answer.status, body: await answer.json() as { turnId?: string; error?: string; message?: string } }
      }
      const completed = (turnId: string) =>
        liveUntil(`${s.url}/sessions/${sessionId}/live`, { token: s.token }, (e) => e.type === "turn.completed" && e.turnId === turnId)
      const first = await turn("first")
      expect(first.status).toBe(202)
      await completed(first.body.turnId!)

      const log = join(data, "sessions", `${sessionId}.jsonl`)
      const before = readFileSync(log, "utf8")
      copyFileSync(log, `${log}.tmp`)
      renameSync(`${log}.tmp`, log)
      const second = await turn("second")
      expect(second.status).not.toBe(202)
      expect(second.body).toMatchObject({ error: "EventStoreFailure" })
      expect(second.body.message).toContain("log_replaced")
      expect(second.body.message).not.toContain(data)
      expect(readFileSync(log, "utf8")).toBe(before)

      const third = await turn("third")
      expect(third.status).toBe(202)
      await completed(third.body.turnId!)
      const text = readFileSync(log, "utf8")
      expect(text.endsWith("\n")).toBe(true)
      const events = text.trimEnd().split("\n").slice(1).map((line) => JSON.parse(line) as { sequence: number; type: string; payload: { text?: string } })
      expect(events.map((e) => e.sequence)).toEqual(events.map((_, i) => i + 1))
      expect(text).toContain('"third"')
      expect(text).not.toContain('"second"')
    } finally {
      s.server.child.kill("SIGTERM")
      await s.server.done
    }
  })
})
