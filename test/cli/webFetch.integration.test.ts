/**
 * `web_fetch` through the built CLI: it reaches a loopback server only with
 * `--allow-private-network`, and the model sees the page as Markdown. (That it asks by default is
 * the policy's: test/layers/webFetch.integration.test.ts.)
 */
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { run, scratch, sessionIdIn } from "./subprocess.js"

const { dataDir, dir, replay } = scratch("web-fetch")
let server: Http.Server
let url: string
let hits = 0

beforeAll(async () => {
  server = Http.createServer((_req, res) => {
    hits++
    res.writeHead(200, { "content-type": "text/html" })
    res.end("<h1>Local docs</h1><script>evil()</script>")
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/docs`
})
afterAll(async () => {
  server.closeAllConnections()
  await new Promise((resolve) => server.close(resolve))
})

const script = () => {
  const file = join(dir, "script.json")
  writeFileSync(file, JSON.stringify({ responses: [{ toolCalls: [{ tool: "web_fetch", args: { url } }] }, { chunks: ["read it"] }] }))
  return file
}

const toolEnd = async (args: ReadonlyArray<string>) => {
  const result = await run(["run", "read the docs", "--script", script(), ...args, "--data-dir", dataDir], { cwd: dir })
  const events = await replay(sessionIdIn(result.stderr)!)
  return { result, events, end: events.find((e) => e.type === "tool.completed" || e.type === "tool.failed") }
}

describe("effect-agent run with web_fetch", () => {
  it("allowed, a loopback server is refused without --allow-private-network and read with it", async () => {
    const before = hits
    const refused = await toolEnd(["--allow", "web_fetch"])
    expect(refused.end).toMatchObject({ type: "tool.failed", payload: { errorCode: "private_address" } })
    expect(hits).toBe(before)
    const allowed = await toolEnd(["--allow", "web_fetch", "--allow-private-network"])
    expect(allowed.result.code).toBe(0)
    expect(allowed.end).toMatchObject({ type: "tool.completed" })
    const output = JSON.stringify(allowed.end!.payload)
    expect(output).toContain("# Local docs")
    expect(output).not.toContain("evil")
    expect(hits).toBe(before + 1)
  })
})
