/**
 * Gives a vitest run one temp folder of its own, removed when the run ends, so that the suite leaves
 * nothing in the machine's temp folder (it left thousands of `effect-agent-*` folders there: helpers
 * that made a folder per test and never removed it, CLI processes killed before their cleanup).
 *
 * Global setup runs in vitest's main process before any worker starts, and the pool forks its
 * workers with the main process's environment as it is then (vitest 3: `createPool` copies
 * `process.env` when tests start): setting `TMPDIR` here makes `os.tmpdir()` in every worker, and in
 * every CLI process a test starts with the inherited environment, answer the run's folder.
 *
 * - `TMPDIR`: `<tmp>/effect-agent-test-run-<pid>-…`.
 * - `EFFECT_AGENT_TEST_OUTSIDE_TMP`: a second folder, under `/var/tmp`, for the tests whose files must
 *   not be under `/tmp` (a sandboxed command gets a private `/tmp` and would not see them); see
 *   `outsideTmp` in test/tmp.ts.
 * - `EFFECT_AGENT_TEST_HOST_TMP`: the machine's temp folder, for what is meant to outlive a run (the
 *   CLI's compile cache, one folder reused by every run).
 * - `XDG_STATE_HOME`: `<TMPDIR>/state`, where taking a JSONL lock records the machine's boot (the
 *   user's state folder otherwise).
 *
 * Both projects list this file first; the main process runs it once per project, so the folders are
 * made by the first and removed by the last teardown (a count kept on `globalThis`). A run that was
 * killed never tears down: the next run removes the folders of runs whose process is gone.
 */
import { chmodSync, mkdtempSync, readdirSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

const prefix = "effect-agent-test-run-"
const outsideBase = "/var/tmp"

interface RunFolders {
  users: number
  readonly dirs: ReadonlyArray<string>
  readonly saved: Readonly<Record<string, string | undefined>>
}

const key = Symbol.for("effect-agent.test.tmpSetup")
const state = globalThis as { [key]?: RunFolders }

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    // EPERM: it exists, as another user's.
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
}

/** Removes the folders that runs whose process is gone (killed, crashed) left in `base`. */
const removeAbandoned = (base: string) => {
  let names: Array<string>
  try {
    names = readdirSync(base)
  } catch {
    return
  }
  for (const name of names) {
    if (!name.startsWith(prefix)) continue
    const pid = Number(name.slice(prefix.length).split("-")[0])
    if (Number.isSafeInteger(pid) && pid > 0 && pid !== process.pid && !alive(pid)) {
      rmSync(join(base, name), { recursive: true, force: true })
    }
  }
}

const names = ["TMPDIR", "EFFECT_AGENT_TEST_OUTSIDE_TMP", "EFFECT_AGENT_TEST_HOST_TMP", "XDG_STATE_HOME"] as const

export default function setup() {
  const existing = state[key]
  if (existing !== undefined) {
    existing.users++
  } else {
    const host = tmpdir()
    removeAbandoned(host)
    removeAbandoned(outsideBase)
    const inside = mkdtempSync(join(host, `${prefix}${process.pid}-`))
    const outside = mkdtempSync(join(outsideBase, `${prefix}${process.pid}-`))
    // As root, tests run processes as other users — the test PostgreSQL as the OS user postgres
    // (test/postgresSetup.ts), the CLI as nobody (test/cli/sandbox): they must pass through the
    // run's folders to theirs, and the CLI makes its own temp files in `TMPDIR`, so that one is
    // what /tmp is (anyone writes, only the owner removes).
    if (process.getuid?.() === 0) {
      chmodSync(inside, 0o1777)
      chmodSync(outside, 0o711)
    }
    const saved = Object.fromEntries(names.map((name) => [name, process.env[name]]))
    state[key] = { users: 1, dirs: [inside, outside], saved }
    process.env.TMPDIR = inside
    process.env.EFFECT_AGENT_TEST_OUTSIDE_TMP = outside
    process.env.EFFECT_AGENT_TEST_HOST_TMP = host
    // The JSONL lock's boot records (src/layers/writer/Boots.ts) go to the run's folder, not the home's.
    process.env.XDG_STATE_HOME = join(inside, "state")
  }
  return () => {
    const run = state[key]
    if (run === undefined || --run.users > 0) return
    delete state[key]
    for (const name of names) {
      const value = run.saved[name]
      if (value === undefined) delete process.env[name]
      else process.env[name] = value
    }
    for (const dir of run.dirs) rmSync(dir, { recursive: true, force: true })
  }
}
