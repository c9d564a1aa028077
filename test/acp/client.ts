/**
 * Drives `effect-agent acp` as a real subprocess (the built CLI) with the ACP SDK's own client over
 * its stdin/stdout, for tests. Everything is awaited on events (an update, a request, an exit), never
 * on time.
 */
import * as acp from "@agentclientprotocol/sdk"
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Readable, Writable } from "node:stream"
import { afterAll } from "vitest"
import { binPath, isolatedConfigDir, replayLog } from "../cli/subprocess.js"
import { ownedByTest } from "../processes.js"

/** A permission request the agent sent, and how the test answers it. */
export interface Asked {
  readonly params: acp.RequestPermissionRequest
  readonly signal: AbortSignal
}

export interface Agent {
  readonly child: ChildProcessWithoutNullStreams
  readonly connection: acp.ClientConnection
  readonly agent: acp.ClientContext
  /** Every `session/update` received, in order. */
  readonly updates: Array<acp.SessionNotification>
  /** Every permission request received, in order. */
  readonly asked: Array<Asked>
  /** Resolves once an update satisfying `predicate` has arrived (or at once if one has). */
  readonly waitForUpdate: (predicate: (update: acp.SessionUpdate) => boolean) => Promise<acp.SessionUpdate>
  /** Resolves once `n` permission requests have arrived. */
  readonly waitForAsked: (n: number) => Promise<Asked>
  readonly stderr: () => string
  readonly exited: Promise<{ readonly code: number | null; readonly signal: NodeJS.Signals | null }>
  readonly initialize: () => Promise<acp.InitializeResponse>
}

/** How the client answers permission requests (default: it never answers until cancelled). */
export type Answerer = (asked: Asked) => Promise<acp.RequestPermissionResponse>

const never: Answerer = ({ signal }) =>
  new Promise((resolve) => signal.addEventListener("abort", () => resolve({ outcome: { outcome: "cancelled" } }), { once: true }))

/** Answers every request with the option `optionId`. */
export const choose = (optionId: string): Answerer => () => Promise.resolve({ outcome: { outcome: "selected", optionId } })

/** Starts `effect-agent acp <args>` and connects the SDK's client to it. */
export const startAgent = (args: ReadonlyArray<string>, options: { readonly cwd: string; readonly answer?: Answerer }): Agent => {
  const env: Record<string, string | undefined> = { ...process.env, NODE_OPTIONS: "", EFFECT_AGENT_CONFIG_DIR: isolatedConfigDir() }
  delete env.ANTHROPIC_API_KEY
  delete env.OPENAI_API_KEY
  const child = ownedByTest(spawn(process.execPath, [binPath, "acp", ...args], { cwd: options.cwd, env, stdio: ["pipe", "pipe", "pipe"] }))
  let stderr = ""
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk))
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on("close", (code, signal) => resolve({ code, signal }))
  )
  // The test may kill the agent or close its pipes: the client's writes then fail, which is expected.
  child.stdin.on("error", () => {})

  const updates: Array<acp.SessionNotification> = []
  const asked: Array<Asked> = []
  const listeners = new Set<() => void>()
  const changed = () => {
    for (const listener of [...listeners]) listener()
  }
  const waitUntil = <A>(probe: () => A | undefined, what: string): Promise<A> =>
    new Promise<A>((resolve, reject) => {
      const check = () => {
        const found = probe()
        if (found === undefined) return
        listeners.delete(check)
        resolve(found)
      }
      listeners.add(check)
      check()
      void exited.then(() => {
        if (!listeners.has(check)) return
        listeners.delete(check)
        reject(new Error(`the agent exited before ${what}; stderr: ${stderr}`))
      })
    })

  const answer = options.answer ?? never
  const app = acp.client({ name: "effect-agent-test" })
    .onNotification(acp.methods.client.session.update, ({ params }) => {
      updates.push(params)
      changed()
    })
    .onRequest(acp.methods.client.session.requestPermission, ({ params, signal }) => {
      const entry = { params, signal }
      asked.push(entry)
      changed()
      return answer(entry)
    })
  const connection = app.connect(acp.ndJsonStream(
    Writable.toWeb(child.stdin) as WritableStream<Uint8Array>,
    Readable.toWeb(child.stdout) as unknown as ReadableStream<Uint8Array>
  ))
  return {
    child,
    connection,
    agent: connection.agent,
    updates,
    asked,
    waitForUpdate: (predicate) => waitUntil(() => updates.map((n) => n.update).find(predicate), "the awaited update"),
    waitForAsked: (n) => waitUntil(() => asked[n - 1], `permission request ${n}`),
    stderr: () => stderr,
    exited,
    initialize: () =>
      connection.agent.request(acp.methods.agent.initialize, {
        protocolVersion: acp.PROTOCOL_VERSION,
        clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false }
      })
  }
}

/** The texts of the `agent_message_chunk` updates (or `user_message_chunk` with `kind`). */
export const chunks = (updates: ReadonlyArray<acp.SessionNotification>, kind: "agent_message_chunk" | "user_message_chunk" = "agent_message_chunk") =>
  updates.flatMap(({ update }) => update.sessionUpdate === kind && update.content.type === "text" ? [update.content.text] : [])

/** A session's stored events, by the CLI's `replay --json` over `storage`. */
export const logOf = replayLog

/** A process a test starts: killed after the test file if a failing test left it running. */
interface Killable {
  readonly child: { readonly kill: (signal: NodeJS.Signals) => unknown }
}

/**
 * A test file's scratch for ACP runs: a folder (removed after the file), the agents the file starts
 * (killed after it, should a failing test leave one running), and a project per test.
 */
export const acpScratch = (name: string) => {
  const dir = mkdtempSync(join(tmpdir(), `effect-agent-${name}-`))
  const running: Array<Killable> = []
  afterAll(() => {
    for (const agent of running) agent.child.kill("SIGKILL")
    rmSync(dir, { recursive: true, force: true })
  })
  let count = 0
  /** A project: its working folder `work`, and beside it a store and a script file of `script`; in `folder` or a fresh one. */
  const project = (script: unknown, folder = `t${++count}`) => {
    const root = join(dir, folder)
    const cwd = join(root, "work")
    mkdirSync(cwd, { recursive: true })
    const scriptFile = join(root, "script.json")
    writeFileSync(scriptFile, JSON.stringify(script))
    const storage = ["--data-dir", join(root, "data")]
    return { root, cwd, storage, scriptFile }
  }
  /** `process`, killed after the file if still running. */
  const track = <A extends Killable>(process: A): A => {
    running.push(process)
    return process
  }
  /** `effect-agent acp <args>` with the SDK's client (`startAgent`), killed after the file if still running. */
  const launch = (args: ReadonlyArray<string>, options: Parameters<typeof startAgent>[1]) => track(startAgent(args, options))
  return { dir, project, track, launch }
}
