/**
 * Runs the built CLI (`node dist/cli/bin.js`, built by test/globalSetup.ts) as a real subprocess, for tests.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process"
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { randomUUID } from "node:crypto"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { afterAll } from "vitest"
import type { AgentEvent } from "../../src/index.js"
import { ownedByTest } from "../processes.js"
import { hostTmp } from "../tmp.js"

const root = resolve(import.meta.dirname, "../..")
/** The built executable, as the package's `bin` names it (`EFFECT_AGENT_TEST_BIN`: another build, e.g. an older one, to see a test fail on it). */
export const binPath = process.env.EFFECT_AGENT_TEST_BIN ?? resolve(root, "dist/cli/bin.js")

/** The suite's compile cache folder (see `start`): in the machine's temp folder, kept from run to run (one folder, reused). */
export const testCodeCacheDir = join(hostTmp(), `effect-agent-test-code-cache-${process.getuid?.() ?? "user"}`)

let configDir: string | undefined
/**
 * The user's config folder the CLI runs with unless a test gives one (`EFFECT_AGENT_CONFIG_DIR`): an
 * empty folder of this test file's, so the machine's own settings and trusted files never change a run.
 */
export const isolatedConfigDir = (): string => {
  if (configDir === undefined) {
    // In the run's temp folder (test/tmpSetup.ts), removed with it: an `afterAll` registered here,
    // inside the first test that asks, is never run by vitest (thousands of these folders were left).
    configDir = mkdtempSync(join(tmpdir(), "effect-agent-config-"))
  }
  return configDir
}

/** What a finished CLI run printed and how it exited. */
export interface Finished {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  readonly stdout: string
  readonly stderr: string
}

/** A running CLI process. */
export interface Running {
  readonly child: ChildProcess
  /** Resolves once stdout has printed text matching `pattern`. */
  readonly waitForStdout: (pattern: RegExp) => Promise<void>
  /** Resolves once stderr has printed text matching `pattern`. */
  readonly waitForStderr: (pattern: RegExp) => Promise<void>
  readonly done: Promise<Finished>
}

let unshareFlags: ReadonlyArray<string> | null | undefined
let bootIdFile: string | undefined
/**
 * Another machine's boot id, in a file bound over `/proc/sys/kernel/random/boot_id` for a run "on another
 * machine": a holder of another host name that records this boot and pid namespace is judged by its pid
 * (a container, `unshare --uts` alone: the same machine), so another host name alone no longer makes one.
 */
const otherBootIdFile = (): string => {
  if (bootIdFile === undefined) {
    bootIdFile = join(mkdtempSync(join(tmpdir(), "effect-agent-boot-")), "boot_id")
    writeFileSync(bootIdFile, `${randomUUID()}\n`)
  }
  return bootIdFile
}
/** The shell that makes a run another machine's: `$0` the host name, `$1` the boot id file, then the command. */
const asOtherMachine = "hostname \"$0\" && mount --bind \"$1\" /proc/sys/kernel/random/boot_id && shift && exec \"$@\""
/** How this machine can run a process as another one — another host name and boot id (`unshare --uts --mount`, as root or in a user namespace) — if it can. */
export const otherHostFlags = (): ReadonlyArray<string> | undefined => {
  if (unshareFlags === undefined) {
    unshareFlags = [["--uts", "--mount"], ["--user", "--map-root-user", "--uts", "--mount"]].find((flags) =>
      spawnSync("unshare", [...flags, "sh", "-c", asOtherMachine, "probe", otherBootIdFile(), "true"], { stdio: "ignore" }).status === 0
    ) ?? null
  }
  return unshareFlags ?? undefined
}

/**
 * Starts `effect-agent <args>` in `cwd`, with API keys removed from its environment. With `hostname`
 * it runs as if on another machine, in a UTS namespace of its own with that host name and another boot id (see
 * `otherHostFlags`; it throws where the machine cannot).
 */
export const start = (
  args: ReadonlyArray<string>,
  options: {
    readonly cwd?: string
    readonly env?: Record<string, string>
    readonly hostname?: string
    /** A command the CLI runs under (`setpriv …`, `unshare … sh -c '…; exec "$@"'`): it must exec node, so the child's pid is the CLI's. */
    readonly prefix?: ReadonlyArray<string>
  } = {}
): Running => {
  const env: Record<string, string | undefined> = {
    ...process.env,
    EFFECT_AGENT_CONFIG_DIR: isolatedConfigDir(),
    // The compile cache (src/cli/CodeCache.ts) of the suite's runs, not the user's: one folder for
    // every test file, which their processes share as concurrent users' do.
    EFFECT_AGENT_CODE_CACHE_DIR: testCodeCacheDir,
    ...options.env
  }
  for (const key of ["ANTHROPIC_API_KEY", "OPENAI_API_KEY"]) if (options.env?.[key] === undefined) delete env[key]
  const unshare = options.hostname === undefined ? undefined : otherHostFlags()
  if (options.hostname !== undefined && unshare === undefined) throw new Error("this machine cannot run a process under another host name")
  const command = unshare === undefined
    ? [...(options.prefix ?? []), process.execPath, binPath, ...args]
    // `unshare` execs the shell, which execs node: the child's pid is the CLI's.
    : ["unshare", ...unshare, "sh", "-c", asOtherMachine, options.hostname!, otherBootIdFile(), process.execPath, binPath, ...args]
  // Killed when the test ends, if it has not exited by then (test/processes.ts).
  const child = ownedByTest(spawn(command[0]!, command.slice(1), {
    cwd: options.cwd ?? root,
    env: { ...env, NODE_OPTIONS: "" },
    stdio: ["pipe", "pipe", "pipe"]
  }))
  let stdout = ""
  let stderr = ""
  const waiters: Array<{ stream: "out" | "err"; pattern: RegExp; resolve: () => void }> = []
  const check = () => {
    for (const waiter of waiters.splice(0)) {
      if (waiter.pattern.test(waiter.stream === "out" ? stdout : stderr)) waiter.resolve()
      else waiters.push(waiter)
    }
  }
  child.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
    stdout += chunk
    check()
  })
  child.stderr!.setEncoding("utf8").on("data", (chunk: string) => {
    stderr += chunk
    check()
  })
  const done = new Promise<Finished>((resolveDone) => {
    child.on("close", (code, signal) => resolveDone({ code, signal, stdout, stderr }))
  })
  const waitFor = (stream: "out" | "err") => (pattern: RegExp) =>
    pattern.test(stream === "out" ? stdout : stderr)
      ? Promise.resolve()
      : Promise.race([
        new Promise<void>((resolveWait) => waiters.push({ stream, pattern, resolve: resolveWait })),
        done.then((finished) => {
          throw new Error(`the CLI exited before printing ${pattern}: ${JSON.stringify(finished)}`)
        })
      ])
  return { child, done, waitForStdout: waitFor("out"), waitForStderr: waitFor("err") }
}

/**
 * Runs `effect-agent <args>` in `cwd` with stdin closed; a run still going after a minute is killed
 * (SIGKILL: a process blocked in `open(2)` ignores SIGTERM), so a hang fails a test rather than
 * holding the suite.
 */
export const runOrKill = async (args: ReadonlyArray<string>, cwd: string): Promise<Finished> => {
  const running = start(args, { cwd })
  running.child.stdin!.end()
  const timer = setTimeout(() => running.child.kill("SIGKILL"), 60_000)
  try {
    return await running.done
  } finally {
    clearTimeout(timer)
  }
}

/** Runs `effect-agent <args>` to the end. */
export const run = (args: ReadonlyArray<string>, options: { readonly cwd?: string; readonly env?: Record<string, string> } = {}) =>
  start(args, options).done

/** The events a `--json` command printed, one per line. */
export const eventsOf = (stdout: string): Array<AgentEvent.AgentEvent> =>
  stdout.trim().split("\n").map((line) => JSON.parse(line) as AgentEvent.AgentEvent)

/** A session's stored events by the CLI's `replay --json` over `storage` (`--data-dir <dir>`, `--store …`); a failed replay throws with its stderr. */
export const replayLog = async (sessionId: string, storage: ReadonlyArray<string>): Promise<Array<AgentEvent.AgentEvent>> => {
  const replayed = await run(["replay", sessionId, "--json", ...storage])
  if (replayed.code !== 0) throw new Error(`replay failed: ${replayed.stderr}`)
  return eventsOf(replayed.stdout)
}

/** The session id a command named on stderr (`session <id>`). */
export const sessionIdIn = (stderr: string): string | undefined => /session (sess_\S+)/.exec(stderr)?.[1]

/**
 * A scratch folder for one test file's CLI runs (removed after the file), its JSONL data folder,
 * and `replay`: a session's stored events as the CLI prints them.
 */
export const scratch = (name: string) => {
  const dir = mkdtempSync(join(tmpdir(), `effect-agent-${name}-`))
  const dataDir = join(dir, "data")
  afterAll(() => rmSync(dir, { recursive: true, force: true }))
  const replay = async (sessionId: string) => eventsOf((await run(["replay", sessionId, "--json", "--data-dir", dataDir])).stdout)
  return { dir, dataDir, replay }
}

/** `effect-agent <args>` in `cwd` to its end, its stdin closed at once (no API key: the echo model unless a script answers). */
export const runClosed = (cwd: string, args: ReadonlyArray<string>, env: Record<string, string> = {}) => {
  const running = start(args, { cwd, env })
  running.child.stdin!.end()
  return running.done
}

/** A test file's scratch folder (removed after the file), and a fresh folder in it for each call of `folder`. */
export const folders = (name: string) => {
  const dir = mkdtempSync(join(tmpdir(), `effect-agent-${name}-`))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))
  let made = 0
  const folder = (label: string) => {
    const path = join(dir, `${label}-${++made}`)
    mkdirSync(path, { recursive: true })
    return path
  }
  return { dir, folder }
}

let binFolder: string | undefined
/**
 * A folder holding `effect-agent`, the built CLI as an installed package's bin would be: put it first
 * on a shell's `PATH` to run a documented command line as it is written. Made once per test file,
 * in the run's temp folder.
 */
export const cliOnPath = (): string => {
  if (binFolder === undefined) {
    binFolder = mkdtempSync(join(tmpdir(), "effect-agent-bin-"))
    const bin = join(binFolder, "effect-agent")
    writeFileSync(bin, `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(binPath)} "$@"\n`)
    chmodSync(bin, 0o755)
  }
  return binFolder
}
