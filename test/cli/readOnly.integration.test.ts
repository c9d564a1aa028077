/**
 * A data dir the CLI cannot write (issue 18, "Also"): the read commands (`sessions`, `replay`,
 * `pending`, `watch`, `export-script`) open the store read-only and work; `run` says in one line
 * that the store is read-only or not writable (`permission_denied`), exit 1 — never `ENOENT`.
 *
 * Read-only for real on this machine, whoever runs the suite: as root, `chmod` stops nothing, so
 * the CLI runs as another user (`setpriv`, the data dir given to `nobody` and made read-only) and
 * under a read-only bind mount (`unshare --user --mount`: `EROFS`, as a read-only disk or a
 * container's read-only volume says); as anyone else, after `chmod -R a-w`, and under the mount
 * too where user namespaces are allowed. Each way first proves that a write really fails.
 */
import { execFileSync, spawnSync } from "node:child_process"
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { run, start } from "./subprocess.js"

const root = mkdtempSync(join(tmpdir(), "effect-agent-readonly-"))
// Every user may pass through (mkdtemp makes it 0700); what is read-only is decided per data dir.
chmod(root, 0o755)
afterAll(() => {
  execFileSync("chmod", ["-R", "u+w", root])
  rmSync(root, { recursive: true, force: true })
})

function chmod(path: string, mode: number) {
  chmodSync(path, mode)
}

/** Each test runs the CLI up to a dozen times: a safety net for a busy machine, not a timing assumption. */
const timeout = 180_000
const nobody = 65534
const isRoot = process.getuid?.() === 0
const userNamespaces = spawnSync("unshare", ["--user", "--map-root-user", "--mount", "true"], { stdio: "ignore" }).status === 0

/** A way to run the CLI where `dataDir` cannot be written. */
interface ReadOnlyWay {
  readonly name: string
  /** Makes `dataDir` read-only for the CLI, after the setup wrote it; answers the command prefix to run the CLI under. */
  readonly lock: (dataDir: string) => ReadonlyArray<string>
}

const anotherUser: ReadOnlyWay = {
  name: "as another user (setpriv), the data dir read-only to its owner",
  lock: (dataDir) => {
    execFileSync("chown", ["-R", `${nobody}:${nobody}`, dataDir])
    execFileSync("chmod", ["-R", "a-w,u+r,u+X", dataDir])
    return ["setpriv", `--reuid=${nobody}`, `--regid=${nobody}`, "--clear-groups", "--"]
  }
}

const readOnlyMount: ReadOnlyWay = {
  name: "under a read-only bind mount (EROFS)",
  lock: (dataDir) => [
    "unshare",
    // In a user namespace of its own where the machine allows one; root can make a mount namespace without.
    ...(userNamespaces ? ["--user", "--map-root-user"] : []),
    "--mount",
    "sh",
    "-c",
    'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" "$0" && exec "$@"',
    dataDir
  ]
}

const chmodded: ReadOnlyWay = {
  name: "after chmod -R a-w",
  lock: (dataDir) => {
    execFileSync("chmod", ["-R", "a-w", dataDir])
    return []
  }
}

const ways = [isRoot ? anotherUser : chmodded, ...(userNamespaces || isRoot ? [readOnlyMount] : [])]

let count = 0
/** A project to run in, a data dir with one finished session of each store, written by this user; then locked. */
const prepared = async (way: ReadOnlyWay) => {
  const dir = join(root, `w${++count}`)
  const cwd = join(dir, "work")
  mkdirSync(cwd, { recursive: true })
  const script = join(dir, "script.json")
  writeFileSync(script, JSON.stringify({ responses: [{ chunks: ["hello", " from the log"] }, { chunks: ["again"] }] }))
  const home = join(dir, "home")
  mkdirSync(home)
  const sqlite = join(dir, "sqlite")
  const jsonl = join(dir, "jsonl")
  const empty = join(dir, "empty")
  mkdirSync(empty)
  for (const storage of [["--store", "sqlite", "--data-dir", sqlite], ["--data-dir", jsonl]]) {
    const made = await run(["run", "--script", script, ...storage, "hello"], { cwd })
    expect(made.code, made.stderr).toBe(0)
  }
  const sessionId = readdirSync(join(jsonl, "sessions")).find((f) => f.endsWith(".jsonl"))!.replace(".jsonl", "")
  const sqliteId = /^(sess_\S+)/m.exec((await run(["sessions", "--store", "sqlite", "--data-dir", sqlite])).stdout)![1]!
  for (const path of [dir, cwd, home]) chmod(path, 0o777)
  chmod(script, 0o644)
  const prefixes = { sqlite: way.lock(sqlite), jsonl: way.lock(jsonl), empty: way.lock(empty) }
  return { cwd, script, home, sqlite, jsonl, empty, sessionId, sqliteId, prefixes }
}

/** The environment of the user the CLI runs as: its own home and config folder (the test's own config folder is not theirs to read). */
const userEnv = (home: string) => ({ HOME: home, EFFECT_AGENT_CONFIG_DIR: join(home, ".config", "effect-agent") })

/** Runs the CLI under `prefix`, to the end. */
const cli = (prefix: ReadonlyArray<string>, args: ReadonlyArray<string>, cwd: string, home: string) =>
  start(args, { cwd, prefix, env: userEnv(home) }).done

describe.each(ways)("a read-only data dir, $name", (way) => {
  it("is really read-only for the CLI: a write there fails", async () => {
    const { empty, home, prefixes } = await prepared(way)
    const probe = [...prefixes.empty, "sh", "-c", 'touch "$0/probe"', empty]
    const write = spawnSync(probe[0]!, probe.slice(1), { env: { ...process.env, HOME: home }, encoding: "utf8" })
    expect(write.status, write.stderr).not.toBe(0)
    expect(write.stderr).toMatch(/Read-only file system|Permission denied/)
    expect(() => statSync(join(empty, "probe"))).toThrow()
  }, timeout)

  it("SQLite: sessions, replay, pending, watch and export-script read it; run says it is not writable", async () => {
    const { cwd, home, prefixes, script, sqlite, sqliteId } = await prepared(way)
    const storage = ["--store", "sqlite", "--data-dir", sqlite]
    const listed = await cli(prefixes.sqlite, ["sessions", ...storage], cwd, home)
    expect(listed, listed.stderr).toMatchObject({ code: 0, stderr: "" })
    expect(listed.stdout).toContain(sqliteId)
    const replayed = await cli(prefixes.sqlite, ["replay", sqliteId, ...storage], cwd, home)
    expect(replayed, replayed.stderr).toMatchObject({ code: 0, stderr: "" })
    expect(replayed.stdout).toContain("hello from the log")
    const exported = await cli(prefixes.sqlite, ["export-script", sqliteId, ...storage], cwd, home)
    expect(exported.code, exported.stderr).toBe(0)
    expect(JSON.parse(exported.stdout)).toMatchObject({ responses: [{ chunks: ["hello", " from the log"] }] })
    const pending = await cli(prefixes.sqlite, ["pending", ...storage], cwd, home)
    expect(pending, pending.stderr).toMatchObject({ code: 0, stderr: "No tool calls are waiting for approval.\n" })
    const watching = start(["watch", sqliteId, "--json", ...storage], { cwd, prefix: prefixes.sqlite, env: userEnv(home) })
    await watching.waitForStdout(/"turn.completed"/)
    watching.child.kill("SIGINT")
    const watched = await watching.done
    expect(watched.stderr).toBe("")
    expect(watched.stdout.trim().split("\n").map((line) => JSON.parse(line).type)).toContain("model.delta")

    const ran = await cli(prefixes.sqlite, ["run", "--script", script, ...storage, "again"], cwd, home)
    expect(ran.code).toBe(1)
    expectOneLineReadOnly(ran.stderr)
  }, timeout)

  it("JSONL: sessions and replay read it without a warning; run says it is not writable, fresh or not", async () => {
    const { cwd, empty, home, jsonl, prefixes, script, sessionId } = await prepared(way)
    const listed = await cli(prefixes.jsonl, ["sessions", "--data-dir", jsonl], cwd, home)
    expect(listed, listed.stderr).toMatchObject({ code: 0, stderr: "" })
    expect(listed.stdout).toContain(sessionId)
    const replayed = await cli(prefixes.jsonl, ["replay", sessionId, "--data-dir", jsonl], cwd, home)
    expect(replayed, replayed.stderr).toMatchObject({ code: 0, stderr: "" })
    expect(replayed.stdout).toContain("hello from the log")
    for (const [prefix, dataDir] of [[prefixes.jsonl, jsonl], [prefixes.empty, empty]] as const) {
      const ran = await cli(prefix, ["run", "--script", script, "--data-dir", dataDir, "again"], cwd, home)
      expect(ran.code, dataDir).toBe(1)
      expectOneLineReadOnly(ran.stderr)
    }
  }, timeout)
})

/** One line (after the usual note on the model) that says the store cannot be written, and not that a file is missing. */
const expectOneLineReadOnly = (stderr: string) => {
  const lines = stderr.trim().split("\n").filter((line) => !line.includes("no API key set") && !line.includes("scripted"))
  expect(lines, stderr).toHaveLength(1)
  expect(lines[0]).toMatch(/\[permission_denied\]/)
  expect(lines[0]).toMatch(/read-only|permission denied|not writable/i)
  expect(lines[0]).not.toMatch(/ENOENT|no such file/i)
}
