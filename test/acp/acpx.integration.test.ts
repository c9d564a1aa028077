/**
 * Interop with a third-party ACP client: `acpx` (a headless client on its own copy of the ACP SDK)
 * drives `effect-agent acp` as a subprocess, non-interactively (`--format json`, HOME in a temp dir).
 */
import { execFile } from "node:child_process"
import { createHash } from "node:crypto"
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { binPath } from "../cli/subprocess.js"
import { ownedByTest } from "../processes.js"
import { logOf } from "./client.js"

const acpxCli = join(dirname(createRequire(import.meta.url).resolve("acpx/package.json")), "dist/cli.js")

const dir = mkdtempSync(join(tmpdir(), "effect-agent-acpx-"))
// acpx's queue owner may still be writing its session file as the last test ends: retried, as `rm -rf` would be.
afterAll(() => rmSync(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 }))

/**
 * acpx puts its queue's sockets in `/tmp/acpx-<first 10 hex of sha256(HOME)>` (its
 * `queueSocketBaseDir`), not in the temp folder: each test's HOME is new, so each run left a folder
 * there. Removed with the test's other files.
 */
const homes: Array<string> = []
afterAll(() => {
  for (const home of homes) rmSync(join("/tmp", `acpx-${createHash("sha256").update(home).digest("hex").slice(0, 10)}`), { recursive: true, force: true })
})

let count = 0
const workspace = (script: unknown) => {
  const root = join(dir, `t${++count}`)
  const cwd = join(root, "work")
  const home = join(root, "home")
  mkdirSync(cwd, { recursive: true })
  mkdirSync(home, { recursive: true })
  homes.push(home)
  const scriptFile = join(root, "script.json")
  writeFileSync(scriptFile, JSON.stringify(script))
  const storage = ["--data-dir", join(root, "data")]
  const agent = [process.execPath, binPath, "acp", "--script", scriptFile, ...storage].map((part) => JSON.stringify(part)).join(" ")
  return { cwd, home, storage, agent }
}

interface Message {
  readonly id?: number | string | null
  readonly method?: string
  readonly params?: Record<string, unknown>
  readonly result?: Record<string, unknown>
}

/** Runs acpx to the end; its stdout with `--format json` is the JSON-RPC traffic, one message a line. */
const acpx = (args: ReadonlyArray<string>, options: { readonly home: string; readonly cwd: string }) =>
  new Promise<{ readonly code: number | null; readonly messages: Array<Message>; readonly stderr: string }>((resolve) => {
    const env: Record<string, string | undefined> = { ...process.env, HOME: options.home, NODE_OPTIONS: "" }
    delete env.ANTHROPIC_API_KEY
    delete env.OPENAI_API_KEY
    ownedByTest(execFile(process.execPath, [acpxCli, ...args], { cwd: options.cwd, env, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      const messages = stdout.split("\n").filter((line) => line.startsWith("{")).map((line) => JSON.parse(line) as Message)
      resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : null, messages, stderr })
    }))
  })

const updates = (messages: ReadonlyArray<Message>) =>
  messages.filter((m) => m.method === "session/update").map((m) => m.params!.update as Record<string, unknown>)

const agentText = (messages: ReadonlyArray<Message>) =>
  updates(messages).filter((u) => u.sessionUpdate === "agent_message_chunk").map((u) => (u.content as { text: string }).text)

const promptResult = (messages: ReadonlyArray<Message>) => {
  const request = messages.find((m) => m.method === "session/prompt")
  return messages.find((m) => m.method === undefined && m.id === request?.id && m.result !== undefined)?.result
}

const writeScript = {
  responses: [
    { chunks: ["Writing."], toolCalls: [{ tool: "write_file", args: { path: "notes.txt", content: "v1\n" } }] },
    { chunks: ["Done."] }
  ]
}

describe("acpx drives effect-agent acp", () => {
  it("exec: a streamed answer and end_turn", async () => {
    const { agent, cwd, home, storage } = workspace({ responses: [{ chunks: ["Hello", " from effect-agent."] }] })
    const run = await acpx(["--agent", agent, "--cwd", cwd, "--format", "json", "exec", "say hello"], { home, cwd })
    expect(run.code, run.stderr).toBe(0)
    expect(agentText(run.messages)).toEqual(["Hello", " from effect-agent."])
    expect(promptResult(run.messages)).toEqual({ stopReason: "end_turn" })
    const sessionId = run.messages.find((m) => m.result?.sessionId !== undefined)!.result!.sessionId as string
    expect((await logOf(sessionId, storage)).at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
  })

  it("exec --approve-all: the permission request is answered allow and the file is written", async () => {
    const { agent, cwd, home } = workspace(writeScript)
    const run = await acpx(["--agent", agent, "--cwd", cwd, "--approve-all", "--format", "json", "exec", "write notes"], { home, cwd })
    expect(run.code, run.stderr).toBe(0)
    expect(run.messages.filter((m) => m.method === "session/request_permission")).toHaveLength(1)
    expect(updates(run.messages).filter((u) => u.toolCallId === "call_1").map((u) => u.status)).toEqual(["pending", "in_progress", "completed"])
    expect(readFileSync(join(cwd, "notes.txt"), "utf8")).toBe("v1\n")
    expect(promptResult(run.messages)).toEqual({ stopReason: "end_turn" })
  })

  it("exec --deny-all: the call is rejected, nothing is written, the turn still ends end_turn", async () => {
    const { agent, cwd, home } = workspace(writeScript)
    const run = await acpx(["--agent", agent, "--cwd", cwd, "--deny-all", "--format", "json", "exec", "write notes"], { home, cwd })
    expect(updates(run.messages).filter((u) => u.toolCallId === "call_1").map((u) => u.status)).toEqual(["pending", "failed"])
    expect(existsSync(join(cwd, "notes.txt"))).toBe(false)
    expect(promptResult(run.messages)).toEqual({ stopReason: "end_turn" })
  })

  it("a persistent session: acpx creates it, then prompts it from a new agent process through session/load", async () => {
    const { agent, cwd, home, storage } = workspace({ responses: [] })
    const created = await acpx(["--agent", agent, "--cwd", cwd, "--format", "json", "sessions", "new"], { home, cwd })
    expect(created.code, created.stderr).toBe(0)
    // A short idle time, so acpx's background owner (and with it the agent) goes away on its own.
    const prompted = await acpx(["--agent", agent, "--cwd", cwd, "--ttl", "1", "--format", "json", "prompt", "remember me"], { home, cwd })
    expect(prompted.code, prompted.stderr).toBe(0)
    const load = prompted.messages.find((m) => m.method === "session/load")
    expect(load?.params).toMatchObject({ cwd })
    expect(agentText(prompted.messages).join("")).toBe("Echo: remember me")
    const log = await logOf(load!.params!.sessionId as string, storage)
    expect(log[0]).toMatchObject({ type: "session.created", payload: { cwd, client: "acp" } })
    expect(log.filter((e) => e.type === "user.message").map((e) => e.payload.content)).toEqual(["remember me"])
  })
})
