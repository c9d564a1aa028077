/**
 * The agent's own stdio transport (src/layers/mcp/StdioTransport.ts): lines assembled from chunks,
 * the bound, and a server that closes its stdout (seen before only through the SDK's private
 * `_process`).
 */
import type { ChildProcess } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it, onTestFinished, vi } from "vitest"
import { lineSplitter, StdioTransport } from "../../src/layers/mcp/StdioTransport.js"
import { alive } from "../processes.js"

const split = (max: number, chunks: ReadonlyArray<string>) => {
  const lines: Array<string> = []
  let tooLong = 0
  const feed = lineSplitter(max, (line) => lines.push(line), () => tooLong++)
  for (const chunk of chunks) feed(Buffer.from(chunk))
  return { lines, tooLong }
}

const until = async (condition: () => boolean) => {
  while (!condition()) await new Promise((resolve) => setImmediate(resolve))
}

describe("StdioTransport", () => {
  it("joins a line's chunks, splits several lines of one chunk, drops a trailing \\r and keeps a multi-byte character cut between chunks", () => {
    const euro = Buffer.from("€")
    const lines: Array<string> = []
    const feed = lineSplitter(100, (line) => lines.push(line), () => undefined)
    feed(Buffer.from("ab"))
    feed(Buffer.from("c\r\nd\n\ne"))
    feed(euro.subarray(0, 1))
    feed(Buffer.concat([euro.subarray(1), Buffer.from("\n")]))
    expect(lines).toEqual(["abc", "d", "", "e€"])
  })

  it("a line of exactly the bound is read; one byte more fails once, and nothing after it is read", () => {
    expect(split(4, ["ab", "cd\n"])).toEqual({ lines: ["abcd"], tooLong: 0 })
    expect(split(4, ["ab", "cde", "\nok\n", "more\n"])).toEqual({ lines: [], tooLong: 1 })
    expect(split(4, ["ok\nabcde\nno\n"])).toEqual({ lines: ["ok"], tooLong: 1 })
  })

  it("a server that closes its stdout and runs on: the transport closes (onclose) and the server is stopped", async () => {
    const script = `process.stdout.write(JSON.stringify({ jsonrpc: "2.0", method: "pid", params: { pid: process.pid } }) + "\\n", () => { require("node:fs").closeSync(1); setInterval(() => {}, 1 << 30) })`
    const transport = new StdioTransport({ command: process.execPath, args: ["-e", script], env: {}, cwd: process.cwd() })
    let pid: number | undefined
    let closed = 0
    transport.onmessage = (message) => {
      pid = (message as unknown as { params: { pid: number } }).params.pid
    }
    transport.onclose = () => closed++
    await transport.start()
    await until(() => closed > 0)
    expect(pid).toBeTypeOf("number")
    await until(() => !alive(pid!))
    await transport.close()
    expect(closed).toBe(1)
  })
})

describe("StdioTransport: the server's own end (ended)", () => {
  // reach44: `ended()` had no test of its own (the case above has one process; the end through
  // `close()` is tested). A server whose stdout ends can never answer: the transport closes once
  // (onclose, not again at the process's close or at close()), and it stops the server's whole
  // group — what the server started too, as close() does. Checked by mutation: with ended()
  // signalling only its direct child, or not listening for stdout's end, this test never finishes.
  it("a server that closes its stdout with a process it started running: onclose once, and both are stopped", async () => {
    const grandchild = `setInterval(() => {}, 1 << 30)`
    const script = [
      `const started = require("node:child_process").spawn(process.execPath, ["-e", ${JSON.stringify(grandchild)}], { stdio: "ignore" })`,
      `const pids = { server: process.pid, started: started.pid }`,
      `process.stdout.write(JSON.stringify({ jsonrpc: "2.0", method: "pids", params: pids }) + "\\n", () => { require("node:fs").closeSync(1); setInterval(() => {}, 1 << 30) })`
    ].join("\n")
    const transport = new StdioTransport({ command: process.execPath, args: ["-e", script], env: {}, cwd: process.cwd() })
    let pids: { server: number; started: number } | undefined
    let closed = 0
    transport.onmessage = (message) => {
      pids = (message as unknown as { params: { server: number; started: number } }).params
    }
    transport.onclose = () => closed++
    // However the test ends (a timeout included), nothing it started outlives it.
    onTestFinished(() => {
      for (const pid of [pids?.server, pids?.started]) if (pid !== undefined && alive(pid)) process.kill(pid, "SIGKILL")
    })
    await transport.start()
    await until(() => closed > 0)
    expect(pids).toEqual({ server: expect.any(Number), started: expect.any(Number) })
    await until(() => !alive(pids!.server) && !alive(pids!.started))
    await transport.close()
    expect(closed).toBe(1)
  })
})

describe("StdioTransport: a server under its guardian", () => {
  // The server is started by the group's guardian (GroupGuardian), not by the agent: a command not
  // found still fails start() as the agent's own spawn did.
  it("a command not found fails start with spawn's ENOENT", async () => {
    const transport = new StdioTransport({ command: "effect-agent-no-such-command", args: [], env: {}, cwd: process.cwd() })
    transport.onerror = () => {}
    await expect(transport.start()).rejects.toMatchObject({ message: "spawn effect-agent-no-such-command ENOENT", code: "ENOENT" })
    await transport.close()
  })

  // The guardian is a node process too: a server's NODE_OPTIONS (an `--inspect`, a `--require`) is the server's alone.
  it("the server gets its NODE_OPTIONS, the guardian does not run under them", async () => {
    const folder = mkdtempSync(join(tmpdir(), "effect-agent-node-options-"))
    onTestFinished(() => rmSync(folder, { recursive: true, force: true }))
    // Each process that runs under the options writes its pid to `loaded`.
    const preload = join(folder, "preload.cjs")
    writeFileSync(preload, `require("node:fs").appendFileSync(${JSON.stringify(join(folder, "loaded"))}, process.pid + "\\n")`)
    const script = `process.stdout.write(JSON.stringify({ jsonrpc: "2.0", method: "pid", params: { pid: process.pid, passed: process.env.EFFECT_AGENT_SERVER_NODE_OPTIONS ?? null } }) + "\\n")`
    const transport = new StdioTransport({ command: process.execPath, args: ["-e", script], env: { NODE_OPTIONS: `--require ${preload}` }, cwd: process.cwd() })
    let said: { pid: number; passed: string | null } | undefined
    transport.onmessage = (message) => {
      said = (message as unknown as { params: { pid: number; passed: string | null } }).params
    }
    await transport.start()
    await until(() => said !== undefined)
    await transport.close()
    expect(said!.passed).toBeNull()
    expect(readFileSync(join(folder, "loaded"), "utf8")).toBe(`${said!.pid}\n`)
  })
})

describe("StdioTransport: a server's group once gone", () => {
  // Before, close() signalled `-pid` whenever `kill(-pid, 0)` answered, even long after the server
  // had exited and its group was gone (a crash early in a `serve` session): by then the pid could
  // lead a new group — one of the agent's own detached shell commands — and got SIGTERM, then SIGKILL.
  it("a server that exited and left nothing running is never signalled again, even if its pid comes to lead another group", async () => {
    const transport = new StdioTransport({ command: process.execPath, args: ["-e", ""], env: {}, cwd: process.cwd() })
    let closed = 0
    transport.onclose = () => closed++
    await transport.start()
    // Closed and exited: the end of its stdout may come before the exit of its group's leader (the guardian).
    await until(() => closed > 0 && (transport as unknown as { child: ChildProcess }).child.exitCode !== null)
    // From here `kill(-pid, 0)` answers as for a live group: the pid was reused.
    const sent: Array<string | number | undefined> = []
    const kill = vi.spyOn(process, "kill").mockImplementation((pid, signal) => {
      if (pid >= 0) throw new Error("only groups are signalled")
      sent.push(signal)
      return true
    })
    try {
      await transport.close()
    } finally {
      kill.mockRestore()
    }
    expect(sent.filter((signal) => signal !== 0)).toEqual([])
  })
})
