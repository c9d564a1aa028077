/**
 * `sessions` ends its process as soon as its program has finished (cli/PromptExit.ts), not when
 * Node's loop runs dry: what it printed must all be there. Its stdout here is a shell's pipe, as in
 * `effect-agent sessions | less`: the listing is larger than a pipe holds (64 KiB), and Node writes
 * the rest as the reader empties it, so a process that exited once the program finished, without
 * waiting for the write, would cut the listing at the pipe's size.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { run, start } from "./subprocess.js"

const dir = mkdtempSync(join(tmpdir(), "effect-agent-prompt-exit-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** Enough sessions that the listing is several times a pipe's 64 KiB. */
const copies = 2_000

describe("sessions ends at once", () => {
  it("writes the whole listing to a pipe before it exits", { timeout: 120_000 }, async () => {
    const cwd = join(dir, "work")
    const dataDir = join(dir, "data")
    mkdirSync(cwd, { recursive: true })
    const script = join(dir, "done.json")
    writeFileSync(script, JSON.stringify({ responses: [{ chunks: ["Hello."] }] }))
    const finished = await run(["run", "hello", "--data-dir", dataDir, "--script", script], { cwd })
    expect(finished.code, finished.stderr).toBe(0)
    // The finished session's log copied under other ids.
    const template = readdirSync(join(dataDir, "sessions")).find((name) => name.endsWith(".jsonl"))!.slice(0, -".jsonl".length)
    const text = readFileSync(join(dataDir, "sessions", `${template}.jsonl`), "utf8")
    const ids = Array.from({ length: copies }, (_, i) => `sess_copy${String(i).padStart(5, "0")}`)
    for (const id of ids) writeFileSync(join(dataDir, "sessions", `${id}.jsonl`), text.replaceAll(template, id))

    // Through a pipe of the shell's (the exit code the CLI's); twice: the first listing builds the index, the second reads it.
    const piped = ["bash", "-c", "set -o pipefail; \"$@\" | cat", "bash"]
    for (const _ of [1, 2]) {
      const listed = await start(["sessions", "--data-dir", dataDir], { prefix: piped }).done
      expect(listed.code, listed.stderr).toBe(0)
      expect(Buffer.byteLength(listed.stdout)).toBeGreaterThan(3 * 64 * 1024)
      expect(listed.stdout.endsWith("\n")).toBe(true)
      const lines = listed.stdout.slice(0, -1).split("\n")
      expect(lines).toHaveLength(copies + 1)
      expect(new Set(lines.map((line) => line.split("  ")[0]))).toEqual(new Set([template, ...ids]))
    }
  })

  // `pending` over a JSONL index of thousands of sessions ended, before, when the loop ran dry, after a
  // scavenge V8 had scheduled as a task (row 12, docs/benchmarks.md "perf61start"). Whether the process
  // ended by `process.exit` (PromptExit) is seen by a preload that wraps it; no clock is read.
  it("pending ends at once too, its line on stderr whole", { timeout: 120_000 }, async () => {
    const dataDir = join(dir, "pending")
    const cwd = join(dir, "pending-work")
    mkdirSync(cwd, { recursive: true })
    const finished = await run(["run", "hello", "--data-dir", dataDir, "--provider", "fake"], { cwd })
    expect(finished.code, finished.stderr).toBe(0)
    const preload = join(dir, "exit-marker.cjs")
    writeFileSync(preload, "const exit = process.exit.bind(process)\nprocess.exit = (code) => { require('node:fs').writeSync(2, `[process.exit ${code}]\\n`); return exit(code) }\n")
    // Under a shell's pipe, with the preload: NODE_OPTIONS for the CLI alone (the suite's runs clear it).
    const withPreload = ["bash", "-c", "set -o pipefail; NODE_OPTIONS=\"--require $0\" \"$@\" 2>&1 | cat", preload]
    for (const command of ["pending", "sessions"]) {
      const listed = await start([command, "--data-dir", dataDir], { prefix: withPreload }).done
      expect(listed.code, listed.stdout).toBe(0)
      expect(listed.stdout, command).toMatch(/\[process\.exit 0\]\n$/)
      if (command === "pending") expect(listed.stdout).toBe("No tool calls are waiting for approval.\n[process.exit 0]\n")
    }
  })
})
