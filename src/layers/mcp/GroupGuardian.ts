/**
 * The small program a stdio MCP server runs under (`node -e program -- command ...args`): the leader
 * of the server's process group, which stops that group once the agent is gone, however it died.
 *
 * Why: the server runs in a process group of its own (StdioTransport), so that closing it stops
 * what a wrapper started (`sh -c 'node server.mjs'`, `npx …`). But a SIGKILLed agent closes nothing:
 * a server that does not end at its stdin's end ran on, the wrapper's grandchildren with it, and
 * in a group of its own a terminal's Ctrl-C no longer reached them either. The guardian holds one
 * end of a socket whose other end only the agent holds (fd 3): when the agent's process ends, the
 * kernel closes its end and the guardian reads the end of it, then stops the group as close() does
 * (SIGTERM, a grace, SIGKILL). Node has no `PR_SET_PDEATHSIG`; a socket's end works on macOS too.
 *
 * The server gets the guardian's stdin, stdout and stderr themselves (the agent's pipes: nothing is
 * copied through the guardian), which the guardian then lets go of, so that the server's closing
 * its stdout is still seen. Signals sent to the group (close()) reach the guardian too: it outlives
 * them and ends when its server does. It tells the agent on the socket whether the server started:
 * `{"spawned":true}`, or `{"error":…,"code":…}` (a command not found is still `spawn x ENOENT`).
 *
 * A server that exits on its own (a crash) ends with what it started: if any other process of the
 * group runs on, the guardian stops them as close() does (SIGTERM, a grace, SIGKILL — the last to
 * the group, itself included) before it ends. Before, it ended with the server at once, and a
 * helper the server's wrapper had started (`sh -c 'helper & node server.mjs'`) ran on with no one to
 * stop it once the agent was gone; one that held the server's stdout kept the agent from seeing
 * the end, and the call in flight waited for its time limit. The group's other processes are read
 * from `/proc` (each process's group is the 5th field of its `stat`), else from `ps`.
 *
 * @since 0.14.0
 * @internal
 */

/** How long the server's group has after SIGTERM, once the agent is gone, before SIGKILL (close()'s grace). */
export const graceMillis = 2000

/** What the guardian says on the socket: the server started, or why it did not. */
export type Said = { readonly spawned: true } | { readonly error: string; readonly code?: string | undefined }

/**
 * Where the server's own `NODE_OPTIONS` rides past the guardian, which is a node process too: an
 * `--inspect` or `--require` meant for the server would otherwise run in the guardian (and take the
 * server's debugger port). The guardian gives it back to the server under its name.
 */
export const serverNodeOptions = "EFFECT_AGENT_SERVER_NODE_OPTIONS"

/** `env` for the guardian: the server's, with its `NODE_OPTIONS` kept for the server alone. */
export const guardianEnv = (env: Readonly<Record<string, string>>): Record<string, string> => {
  const { NODE_OPTIONS, ...rest } = env
  return NODE_OPTIONS === undefined ? rest : { ...rest, [serverNodeOptions]: NODE_OPTIONS }
}

/** How often, while the guardian stops what its exited server left running, it looks at the group again. */
export const pollMillis = 50

/** The guardian, as `node -e` runs it (CommonJS); `process.argv` is `[node, command, ...args]`. */
export const program = `"use strict"
const { execFileSync, spawn } = require("node:child_process")
const { closeSync, openSync, readdirSync, readFileSync } = require("node:fs")
const { Socket } = require("node:net")
const agent = new Socket({ fd: 3, readable: true, writable: true })
const tell = (said, then) => agent.write(JSON.stringify(said) + "\\n", then)
const group = (signal) => { try { process.kill(-process.pid, signal) } catch {} }
// Whether a process of the group but the guardian (and a zombie) runs: from /proc, else ps (whose
// own process, the guardian's child, is left out); either unreadable, as if one did.
const othersRun = () => {
  let names
  try { names = readdirSync("/proc") } catch { names = undefined }
  if (names !== undefined && names.includes("self")) {
    for (const name of names) {
      if (!/^[0-9]+$/.test(name) || Number(name) === process.pid) continue
      let stat
      try { stat = readFileSync("/proc/" + name + "/stat", "latin1") } catch { continue }
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
      if (!/^[ZX]/.test(fields[0]) && Number(fields[2]) === process.pid) return true
    }
    return false
  }
  try {
    const rows = execFileSync("ps", ["-A", "-o", "pid=,ppid=,pgid=,stat="], { encoding: "latin1" }).trim().split("\\n")
    return rows.some((row) => {
      const [pid, ppid, pgid, stat] = row.trim().split(/\\s+/)
      return Number(pgid) === process.pid && Number(pid) !== process.pid && Number(ppid) !== process.pid && !/^[ZX]/.test(String(stat))
    })
  } catch { return true }
}
// The server exited on its own: what it left in the group is stopped before the guardian ends.
const end = (code) => {
  if (!othersRun()) return process.exit(code)
  group("SIGTERM")
  const until = Date.now() + ${graceMillis}
  const look = () => {
    if (agentGone) return
    if (!othersRun()) return process.exit(code)
    if (Date.now() >= until) return group("SIGKILL")
    setTimeout(look, ${pollMillis})
  }
  setTimeout(look, ${pollMillis})
}
let agentGone = false
for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"]) process.on(signal, () => {})
const env = { ...process.env }
if (env.${serverNodeOptions} !== undefined) env.NODE_OPTIONS = env.${serverNodeOptions}
delete env.${serverNodeOptions}
const server = spawn(process.argv[1], process.argv.slice(2), { stdio: "inherit", env })
// The server has its own copies now: the guardian's are let go (each reopened on /dev/null, so no
// later file takes their numbers), or the agent would never see the server's stdout end.
for (const fd of [0, 1, 2]) { closeSync(fd); openSync("/dev/null", fd === 0 ? "r" : "w") }
server.on("spawn", () => tell({ spawned: true }))
server.on("error", (error) => tell({ error: error.message, code: error.code }, () => process.exit(127)))
server.on("exit", (code) => { if (!agentGone) end(code ?? 1) })
agent.on("error", () => {})
agent.on("close", () => {
  agentGone = true
  group("SIGTERM")
  setTimeout(() => group("SIGKILL"), ${graceMillis})
})
agent.resume()
`

/** Reads the guardian's lines as they come: each one it says, parsed (a line that is not its own is skipped). */
export const reader = (onSaid: (said: Said) => void) => {
  let pending = ""
  return (chunk: Buffer): void => {
    pending += chunk.toString("utf8")
    for (let newline = pending.indexOf("\n"); newline !== -1; newline = pending.indexOf("\n")) {
      const line = pending.slice(0, newline)
      pending = pending.slice(newline + 1)
      try {
        onSaid(JSON.parse(line) as Said)
      } catch {
        // not a line of the guardian's
      }
    }
  }
}
