/**
 * Issue 19, item 2: a `session/cancel` that lands just after a turn ended (a Stop click a moment too
 * late), followed at once by `session/prompt`. A cancel with no running turn is a no-op: the prompt
 * answers `end_turn`, and every later prompt works. One cancel, two, a hundred; several rounds each.
 */
import * as acp from "@agentclientprotocol/sdk"
import { mkdirSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { expectWellFormedLog } from "../helpers.js"
import { steps } from "../steps.js"
import { acpScratch, logOf } from "./client.js"

const scratch = acpScratch("acp-late-cancel")
const { dir } = scratch


describe("effect-agent acp: a late session/cancel", () => {
  for (const cancels of [1, 2, 100]) {
    it(`${cancels} cancel(s) right after a turn ended, then a prompt at once: the prompt answers end_turn, the session goes on`, async () => {
      const root = join(dir, `c${cancels}`)
      const cwd = join(root, "work")
      mkdirSync(cwd, { recursive: true })
      const storage = ["--data-dir", join(root, "data")]
      // No script: the built-in echo model answers every prompt.
      // A prompt that never answers (a wedged session) is named when the test times out: no time of
      // its own, which a loaded machine can outlast (it was 20 s a prompt).
      const log = steps()
      const agent = scratch.launch(storage, { cwd })
      log.show("the agent's stderr", agent.stderr)
      await agent.initialize()
      const { sessionId } = await agent.agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [] })
      const prompt = (text: string) => agent.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text }] })
      expect((await log.waiting("the first prompt", prompt("round 0"))).stopReason).toBe("end_turn")
      for (let round = 1; round <= 5; round++) {
        // The cancels and the prompt are written back to back, without waiting for anything between.
        const sent = Array.from({ length: cancels }, () => agent.agent.notify(acp.methods.agent.session.cancel, { sessionId }))
        const answered = prompt(`round ${round}`)
        await Promise.all(sent)
        expect((await log.waiting(`the prompt of round ${round}`, answered)).stopReason).toBe("end_turn")
      }
      expect((await log.waiting("the last prompt", prompt("after"))).stopReason).toBe("end_turn")
      agent.child.stdin.end()
      await agent.exited
      const stored = await logOf(sessionId, storage)
      expectWellFormedLog(stored)
      expect(stored.filter((e) => e.type === "turn.completed").map((e) => e.payload.stopReason)).toEqual(Array.from({ length: 7 }, () => "final"))
    })
  }
})
