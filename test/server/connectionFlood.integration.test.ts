/**
 * `effect-agent serve` (the built CLI) under a flood of connections that show no credential, with
 * its file descriptors limited to 2048 (`prlimit`; Node raises its soft limit to the hard one, so
 * that is the limit it runs with). The timeouts bound how long such a connection is held, not how
 * many: 2100 silent connections used to take every descriptor of the process, and then `/healthz`
 * got no answer and a client with the token could not create a session. Now at most 1024 connections
 * without a credential stay open (the oldest are closed for new ones), and the server serves.
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs"
import { connect, type Socket } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { type Running, start } from "../cli/subprocess.js"
import { send } from "./requests.js"

const dir = mkdtempSync(join(tmpdir(), "effect-agent-flood-"))
const running: Array<Running> = []
afterAll(() => {
  for (const r of running) r.child.kill("SIGKILL")
  rmSync(dir, { recursive: true, force: true })
})

/** A connection that sends nothing, once open (or refused). */
const opened = (port: number) =>
  new Promise<Socket>((resolve) => {
    const socket = connect(port, "127.0.0.1")
    socket.on("error", () => {})
    socket.once("connect", () => resolve(socket))
    socket.once("error", () => resolve(socket))
  })

describe("serve under a flood of connections without a credential", () => {
  it("2100 silent connections with 2048 descriptors: /healthz answers and a client with the token creates a session", async () => {
    const cwd = join(dir, "work")
    mkdirSync(cwd, { recursive: true })
    const script = join(dir, "script.json")
    writeFileSync(script, JSON.stringify({ responses: [{ chunks: ["served"] }] }))
    const server = start(["serve", "--port", "0", "--script", script, "--data-dir", join(cwd, ".data")], { cwd, prefix: ["prlimit", "--nofile=2048:2048"] })
    running.push(server)
    let stderr = ""
    server.child.stderr!.on("data", (chunk: string) => (stderr += chunk))
    await server.waitForStderr(/viewer \(this URL works once[^)]*\): \S+\n/)
    const port = Number(/listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(stderr)![1])
    const token = /token: (\S+)/.exec(stderr)![1]!
    const flood: Array<Socket> = []
    try {
      for (let i = 0; i < 2100; i++) flood.push(await opened(port))
      // Each answer is a request on a connection of its own, made after the whole flood.
      expect((await send(port, "/healthz")).status).toBe(200)
      const created = await send(port, "/sessions", {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({ cwd })
      })
      expect(created.status).toBe(201)
      // The process holds its descriptors for its own work still: well under its limit.
      expect(readdirSync(`/proc/${server.child.pid}/fd`).length).toBeLessThan(1200)
    } finally {
      for (const socket of flood) socket.destroy()
    }
  }, 120_000)
})
