/**
 * Requests reaching `serve` while it starts (review65b): the port opened when its layer was built,
 * the handler was attached only after the API's layers were, and a request arriving in between was
 * answered nothing (up to the 300 s request timeout). Now each is answered — `503` with
 * `Retry-After` until the server is ready — or its connection refused, never left silent.
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { start } from "../cli/subprocess.js"

const dir = realpathSync(mkdtempSync(join(tmpdir(), "effect-agent-early-requests-")))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const probe = createServer()
    probe.once("error", reject)
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as { port: number }
      probe.close(() => resolve(port))
    })
  })

describe("serve's first moments", () => {
  it("answers every request that reaches it (503 Retry-After before it is ready) or refuses the connection; none hangs", { timeout: 240_000 }, async () => {
    const cwd = join(dir, "work")
    mkdirSync(cwd, { recursive: true })
    const port = await freePort()
    const server = start(["serve", "--port", String(port), "--data-dir", join(dir, "data")], { cwd })
    const outcomes: Array<Promise<string>> = []
    try {
      // Requests fired as fast as the loop turns, each left to finish on its own, until one is answered 200.
      let healthy = false
      while (!healthy) {
        const outcome = fetch(`http://127.0.0.1:${port}/healthz`).then(
          async (response) => {
            if (response.status === 200) healthy = true
            if (response.status === 503) expect(response.headers.get("retry-after")).toBe("1")
            await response.arrayBuffer()
            return String(response.status)
          },
          (error: Error & { cause?: { code?: string } }) => error.cause?.code ?? error.message
        )
        outcomes.push(outcome)
        await new Promise((resolve) => setImmediate(resolve))
      }
      // Every request ends: answered, or its connection refused (a hang fails the test by its timeout).
      const ended = await Promise.all(outcomes)
      for (const result of ended) expect(["200", "503", "ECONNREFUSED", "ECONNRESET"]).toContain(result)
    } finally {
      server.child.kill("SIGTERM")
      await server.done
    }
  })
})
