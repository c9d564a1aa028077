/**
 * The CLI's shell tool, as a real process: its keys are out of a command's reach (even through
 * /proc), a command does not outlive the CLI when it is killed with SIGKILL, and (issue 18, item 7)
 * an approved command cannot write outside the workspace, read the user's keys or use the network
 * unless `--network` says so — as the user who runs the CLI, root or not.
 */
import { spawn } from "node:child_process"
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from "node:fs"
import { createServer } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Effect from "effect/Effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { AgentEvent } from "../../src/index.js"
import * as Sandbox from "../../src/layers/workspace/Sandbox.js"
import { holders } from "../fifo.js"
import { outsideTmp } from "../tmp.js"
import { binPath, run, start } from "./subprocess.js"
import { ownedByTest } from "../processes.js"

const dir = mkdtempSync(join(tmpdir(), "effect-agent-cli-sandbox-"))
/** Markers of the commands a test started: whatever still runs with one is killed after the file. */
const markers: Array<string> = []
afterAll(() => {
  for (const pid of markers.flatMap(sleepsRunning)) {
    try {
      process.kill(pid, "SIGKILL")
    } catch {
      // gone, as it should be
    }
  }
  rmSync(dir, { recursive: true, force: true })
})

const writeScript = (name: string, script: unknown) => {
  const file = join(dir, name)
  writeFileSync(file, JSON.stringify(script))
  return file
}

/** Every file under `root`, as text. */
const allText = (root: string): string =>
  readdirSync(root).map((name) => {
    const file = join(root, name)
    return statSync(file).isDirectory() ? allText(file) : readFileSync(file, "latin1")
  }).join("\n")

/** Pids of live `sleep` processes whose argument is `marker`. */
const sleepsRunning = (marker: string) =>
  readdirSync("/proc").filter((n) => /^\d+$/.test(n)).map(Number).filter((pid) => {
    try {
      const [program, argument] = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0")
      return program!.split("/").at(-1) === "sleep" && argument === marker &&
        !readFileSync(`/proc/${pid}/stat`, "utf8").split(") ").at(-1)!.startsWith("Z")
    } catch {
      return false
    }
  })

describe("the CLI's shell tool", () => {
  it("the agent's keys are not readable by a command: not in its environment, not through /proc/$PPID/environ, not in the log", async () => {
    const cwd = join(dir, "probe")
    mkdirSync(cwd)
    const dataDir = join(dir, "data-probe")
    const secrets = {
      ANTHROPIC_API_KEY: `sk-test-secret-${process.pid}`,
      GITHUB_TOKEN: `ghp-test-secret-${process.pid}`,
      AWS_SECRET_ACCESS_KEY: `aws-test-secret-${process.pid}`
    }
    const probes = [
      `sh -c 'tr "\\0" "\\n" < /proc/$PPID/environ'`,
      `sh -c 'for f in /proc/[0-9]*/environ; do echo "$f"; tr "\\0" "\\n" < "$f"; done'`,
      "env"
    ]
    const finished = await run(["run", "probe", "--mode", "bypass", "--data-dir", dataDir, "--script", writeScript("probe.json", {
      responses: [{ toolCalls: probes.map((command) => ({ tool: "shell", args: { command } })) }, { chunks: ["done"] }]
    })], { cwd, env: secrets })
    expect(finished.code).toBe(0)
    const sessionId = /session (\S+)/.exec(finished.stderr)?.[1]
    const log = (await run(["replay", sessionId!, "--json", "--data-dir", dataDir])).stdout.trim().split("\n").map((l) => JSON.parse(l) as AgentEvent.AgentEvent)
    // The probes ran: three results, one of them the command's own environment.
    // Calls of one response run concurrently and complete in any order: the env probe is found by its call id.
    const completed = log.flatMap((e) => (e.type === "tool.completed" ? [e.payload] : []))
    expect(completed).toHaveLength(3)
    expect(completed.find((c) => c.toolCallId === "call_3")?.result).toContain("PATH=")
    for (const secret of Object.values(secrets)) {
      expect(finished.stdout).not.toContain(secret)
      expect(finished.stderr).not.toContain(secret)
      expect(JSON.stringify(log)).not.toContain(secret)
      expect(allText(dataDir)).not.toContain(secret)
    }
  })

  it("SIGKILL the CLI while a shell command runs: no child is left running", async () => {
    const cwd = join(dir, "kill")
    mkdirSync(cwd)
    const marker = `31.${process.pid}${Date.now() % 100000}`
    // The command holds a pipe while it runs (test/fifo.ts): the kernel says when it started and when it is gone.
    const command = holders(join(cwd, "held"))
    markers.push(marker)
    const running = start(["run", "wait", "--mode", "bypass", "--data-dir", join(dir, "data-kill"), "--script", writeScript("kill.json", {
      responses: [{ toolCalls: [{ tool: "shell", args: { command: `sh -c 'exec sleep ${marker} >held'` } }] }]
    })], { cwd })
    await command.opened
    running.child.kill("SIGKILL")
    await running.done
    await command.closed
    expect(sleepsRunning(marker)).toEqual([])
  })
})

const detected = await Effect.runPromise(Sandbox.detect)
const branch = detected._tag === "Workspace" ? "[sandbox]" : `[no sandbox here: ${detected._tag}]`

describe(`an approved command through the CLI ${branch}`, () => {
  // Outside /tmp, which every sandboxed command gets a private one of: the paths a command would reach.
  const root = realpathSync(mkdtempSync(join(outsideTmp(), "effect-agent-cli-sandbox-")))
  const KEY = `-----BEGIN FAKE KEY ${process.pid}-----`
  let requests = 0
  const server = createServer((_, response) => {
    requests++
    response.end("reached")
  })
  let url = ""
  beforeAll(async () => {
    await new Promise<void>((done) => server.listen(0, "127.0.0.1", done))
    url = `http://127.0.0.1:${(server.address() as { port: number }).port}/`
  })
  afterAll(async () => {
    await new Promise<void>((done) => server.close(() => done()))
    rmSync(root, { recursive: true, force: true })
  })

  /** A project, a fake home with a key, and a script whose model runs the probes (bypass: every call is allowed). */
  const setup = (name: string, owner?: number) => {
    const base = join(root, name)
    const cwd = join(base, "ws")
    const home = join(base, "home")
    mkdirSync(join(home, ".ssh"), { recursive: true })
    mkdirSync(cwd, { recursive: true })
    writeFileSync(join(home, ".ssh", "id_rsa"), KEY)
    const marker = `/tmp/outside-${name}-${process.pid}`
    const beside = join(base, "beside.txt")
    const fetch = `node -e "fetch('${url}').then(r => r.text()).then(t => console.log('got', t), e => console.log('failed', e.cause?.code ?? e.message))"`
    const probes = [`touch ${marker}`, `touch ${beside}`, `cat ${home}/.ssh/id_rsa`, "sh -c 'cat ~/.ssh/id_rsa'", fetch, "sh -c 'echo made > made.txt'"]
    const script = join(base, "script.json")
    writeFileSync(script, JSON.stringify({ responses: [{ toolCalls: probes.map((command) => ({ tool: "shell", args: { command } })) }, { chunks: ["done"] }] }))
    if (owner !== undefined) {
      // The user's own files: the project and home belong to them; the script is readable.
      for (const path of [base, cwd, home, join(home, ".ssh"), join(home, ".ssh", "id_rsa")]) chownSync(path, owner, owner)
      chmodSync(root, 0o755)
      chmodSync(script, 0o644)
    }
    return { cwd, home, marker, beside, script, dataDir: join(cwd, ".effect-agent"), probes }
  }

  const resultsOf = async (finished: { stderr: string }, dataDir: string, env: Record<string, string> = {}) => {
    const sessionId = /session (\S+)/.exec(finished.stderr)?.[1]
    const log = (await run(["replay", sessionId!, "--json", "--data-dir", dataDir], { env })).stdout.trim().split("\n").map((l) => JSON.parse(l) as AgentEvent.AgentEvent)
    return { log, byCall: (n: number) => log.flatMap((e) => (e.type === "tool.completed" && e.payload.toolCallId === `call_${n}` ? [e.payload.result] : [])).join("") }
  }

  if (detected._tag !== "Workspace") {
    it(`${branch} sandbox "required" is not available here, so the library refuses; the CLI warns and runs commands as plain processes`, async () => {
      const p = setup("fallback")
      const finished = await run(["run", "probe", "--mode", "bypass", "--data-dir", p.dataDir, "--script", p.script], { cwd: p.cwd, env: { HOME: p.home } })
      expect(finished.stderr).toContain("without the workspace sandbox")
    })
    return
  }

  it(`${branch} touch outside, cat ~/.ssh/id_rsa and a fetch to a server on the host's loopback all fail; a write inside works`, async () => {
    const before = requests
    const p = setup("user")
    const finished = await run(["run", "probe", "--mode", "bypass", "--data-dir", p.dataDir, "--script", p.script], { cwd: p.cwd, env: { HOME: p.home } })
    expect(finished.code, finished.stderr).toBe(0)
    const { byCall, log } = await resultsOf(finished, p.dataDir)
    expect(existsSync(p.marker)).toBe(false)
    expect(existsSync(p.beside)).toBe(false)
    expect(byCall(2)).toContain("Read-only file system")
    expect(byCall(3)).toContain("No such file or directory")
    expect(byCall(5)).toContain("failed")
    expect(requests).toBe(before)
    expect(JSON.stringify(log)).not.toContain(KEY)
    expect(finished.stdout).not.toContain(KEY)
    expect(readFileSync(join(p.cwd, "made.txt"), "utf8")).toBe("made\n")
  })

  it(`${branch} --network lets commands reach the network (the user's flag; the keys stay hidden)`, async () => {
    const before = requests
    const p = setup("network")
    const finished = await run(["run", "probe", "--mode", "bypass", "--network", "--data-dir", p.dataDir, "--script", p.script], { cwd: p.cwd, env: { HOME: p.home } })
    expect(finished.code, finished.stderr).toBe(0)
    const { byCall, log } = await resultsOf(finished, p.dataDir)
    expect(byCall(5)).toContain("got reached")
    expect(requests).toBe(before + 1)
    expect(JSON.stringify(log)).not.toContain(KEY)
  })

  it.runIf(process.getuid?.() === 0)(`${branch} as an unprivileged user (nobody, started by root here): the same sandbox, with the user's own uid`, async () => {
    const nobody = 65534
    const p = setup("nobody", nobody)
    const setpriv = Sandbox.which("setpriv", process.env.PATH)!
    const env: Record<string, string | undefined> = { ...process.env, HOME: p.home, NODE_OPTIONS: "" }
    delete env.ANTHROPIC_API_KEY
    delete env.OPENAI_API_KEY
    const finished = await new Promise<{ code: number | null; stdout: string; stderr: string }>((done) => {
      const child = ownedByTest(spawn(
        setpriv,
        ["--reuid", String(nobody), "--regid", String(nobody), "--clear-groups", "--", process.execPath, binPath, "run", "probe", "--mode", "bypass", "--data-dir", p.dataDir, "--script", p.script],
        { cwd: p.cwd, env, stdio: ["ignore", "pipe", "pipe"] }
      ))
      let stdout = ""
      let stderr = ""
      child.stdout.setEncoding("utf8").on("data", (c: string) => (stdout += c))
      child.stderr.setEncoding("utf8").on("data", (c: string) => (stderr += c))
      child.on("close", (code) => done({ code, stdout, stderr }))
    })
    expect(finished.code, finished.stderr).toBe(0)
    expect(finished.stderr).not.toContain("without the workspace sandbox")
    const { byCall, log } = await resultsOf(finished, p.dataDir)
    expect(existsSync(p.marker)).toBe(false)
    expect(existsSync(p.beside)).toBe(false)
    expect(JSON.stringify(log)).not.toContain(KEY)
    expect(byCall(5)).toContain("failed")
    expect(statSync(join(p.cwd, "made.txt")).uid).toBe(nobody)
  })
})
