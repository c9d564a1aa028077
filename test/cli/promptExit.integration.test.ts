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
})
