/**
 * A repository that ships its own `.effect-agent/` (the CLI's default data dir is that folder of the
 * current directory): the listing index's files in it are the repository's, not the user's. A link
 * planted in place of `index.journal`, `index.rotation` or `index.json` is never written or read
 * through (the user's files outside stay as they were), and a named pipe there never holds the CLI
 * (opening one blocks the whole process, Ctrl+C and SIGTERM included). Each run is killed if it
 * does not end, so a hang fails the test rather than holding the suite.
 */
import { execFileSync } from "node:child_process"
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { runOrKill } from "./subprocess.js"

const dir = mkdtempSync(join(tmpdir(), "effect-agent-planted-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** A cloned repository with a `.effect-agent/` of its own and a script whose model says hi. */
const repository = (name: string) => {
  const cwd = join(dir, name)
  mkdirSync(join(cwd, ".effect-agent"), { recursive: true })
  const script = join(dir, `${name}.script.json`)
  writeFileSync(script, JSON.stringify({ responses: [{ chunks: ["hi"] }] }))
  return { cwd, script, planted: (file: string) => join(cwd, ".effect-agent", file) }
}

describe("a data dir that came with the repository", () => {
  it("links in place of the index's files are not written through: the files they name stay as they were", async () => {
    const repo = repository("links")
    const victims = ["journal", "rotation", "index"].map((name) => {
      const file = join(dir, `users-${name}.txt`)
      writeFileSync(file, `the user's ${name} file\n`)
      return file
    })
    symlinkSync(victims[0]!, repo.planted("index.journal"))
    symlinkSync(victims[1]!, repo.planted("index.rotation"))
    symlinkSync(victims[2]!, repo.planted("index.json"))
    for (const args of [["run", "hello", "--script", repo.script], ["sessions"], ["run", "again", "--script", repo.script], ["sessions"]]) {
      const done = await runOrKill(args, repo.cwd)
      expect(done.signal, args.join(" ")).toBe(null)
      expect(done.code, `${args.join(" ")}: ${done.stderr}`).toBe(0)
    }
    expect(victims.map((file) => readFileSync(file, "utf8"))).toEqual(["the user's journal file\n", "the user's rotation file\n", "the user's index file\n"])
    // The listing still lists the sessions (read from their logs).
    const listed = await runOrKill(["sessions"], repo.cwd)
    expect(listed.stdout.trim().split("\n")).toHaveLength(2)
  })

  it("a named pipe in place of the journal or the index never holds the CLI", async () => {
    const repo = repository("fifos")
    execFileSync("mkfifo", [repo.planted("index.journal")])
    execFileSync("mkfifo", [repo.planted("index.json")])
    for (const args of [["run", "hello", "--script", repo.script], ["sessions"]]) {
      const done = await runOrKill(args, repo.cwd)
      expect(done.signal, `${args.join(" ")} was killed: it hung`).toBe(null)
      expect(done.code, `${args.join(" ")}: ${done.stderr}`).toBe(0)
    }
    expect(lstatSync(repo.planted("index.journal")).isFIFO()).toBe(true)
    expect(existsSync(join(repo.cwd, ".effect-agent", "sessions"))).toBe(true)
  })

  it("a named pipe in place of the SQLite database or its hot journal is refused; it never holds the CLI", async () => {
    // SQLite opens them blocking on the main thread: Ctrl+C and SIGTERM waited with it (only SIGKILL ended it).
    for (const file of ["effect-agent.sqlite", "effect-agent.sqlite-journal"]) {
      const repo = repository(`sqlite-fifo-${file.replace(/\W/g, "-")}`)
      const made = await runOrKill(["run", "hello", "--script", repo.script, "--store", "sqlite"], repo.cwd)
      expect(made.code, made.stderr).toBe(0)
      rmSync(repo.planted(file), { force: true })
      execFileSync("mkfifo", [repo.planted(file)])
      for (const args of [["sessions", "--store", "sqlite"], ["run", "hello", "--script", repo.script, "--store", "sqlite"]]) {
        const done = await runOrKill(args, repo.cwd)
        expect(done.signal, `${file}: ${args.join(" ")} was killed: it hung`).toBe(null)
        expect(done.code, `${file}: ${args.join(" ")}`).not.toBe(0)
        expect(done.stderr).toContain(`${file} is not a regular file`)
      }
      expect(lstatSync(repo.planted(file)).isFIFO()).toBe(true)
    }
  })

  it("a named pipe or an endless device in a log's place is listed as damaged, and the listing ends", async () => {
    const repo = repository("logs")
    const first = await runOrKill(["run", "hello", "--script", repo.script], repo.cwd)
    expect(first.code, first.stderr).toBe(0)
    mkdirSync(repo.planted("sessions"), { recursive: true })
    execFileSync("mkfifo", [repo.planted("sessions/sess_01M8W3QN8TTW24BHQC0Q1TEJN5.jsonl")])
    symlinkSync("/dev/zero", repo.planted("sessions/sess_01M8W3QN8TTW24BHQC0Q1TEJN6.jsonl"))
    for (const args of [["sessions"], ["sessions"], ["replay", "sess_01M8W3QN8TTW24BHQC0Q1TEJN5"], ["replay", "sess_01M8W3QN8TTW24BHQC0Q1TEJN6"]]) {
      const done = await runOrKill(args, repo.cwd)
      expect(done.signal, `${args.join(" ")} was killed: it hung`).toBe(null)
      if (args[0] === "sessions") {
        // The user's own session is listed; the two planted names are reported, not read.
        expect(done.stdout.trim().split("\n"), done.stderr).toHaveLength(1)
        expect(done.stderr).toContain("not a regular file")
        expect(done.stderr).toContain("a link, not a log")
      } else {
        expect(done.code).not.toBe(0)
        // The pipe is opened without blocking and found not to be a file; the link is not followed.
        expect(done.stderr).toContain(args[1]!.endsWith("N5") ? "not a regular file" : "a link, not a log")
      }
    }
  })

  it("a data dir that is a link, or whose sessions/ or blobs/ folder or database file is one, is refused: nothing is written where it points", async () => {
    for (const [name, plant] of [
      ["linked-dir", (cwd: string, outside: string) => {
        rmSync(join(cwd, ".effect-agent"), { recursive: true })
        symlinkSync(outside, join(cwd, ".effect-agent"))
      }],
      ["linked-sessions", (cwd: string, outside: string) => symlinkSync(outside, join(cwd, ".effect-agent", "sessions"))],
      ["linked-blobs", (cwd: string, outside: string) => symlinkSync(outside, join(cwd, ".effect-agent", "blobs"))],
      ["linked-sqlite", (cwd: string, outside: string) => symlinkSync(join(outside, "other.sqlite"), join(cwd, ".effect-agent", "effect-agent.sqlite"))]
    ] as const) {
      const repo = repository(name)
      // Another project's data dir, or a folder of the user's: the link's target.
      const outside = join(dir, `${name}-outside`)
      mkdirSync(outside)
      plant(repo.cwd, outside)
      for (const args of [["run", "hello", "--script", repo.script], ["run", "hello", "--script", repo.script, "--store", "sqlite"], ["sessions"]]) {
        const done = await runOrKill(args, repo.cwd)
        expect(done.code, `${name}: ${args.join(" ")} ran`).not.toBe(0)
        expect(done.stderr, name).toContain("is a link")
      }
      expect(readdirSync(outside), name).toEqual([])
    }
  })
})
