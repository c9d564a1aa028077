/**
 * Drives test/layers/fullDiskChild.ts (no vitest here: scripts/probe-full-disk.ts uses it too). The
 * child runs `prefix` (a shell that sets a limit, then execs it) or bare; after its first turn
 * `fill()` runs, after its second (the one that meets the full disk) `free(pid)`, then it runs two
 * more turns. Resolves with the four turns' outcomes as the child printed them.
 */
import { spawn } from "node:child_process"
import { createRequire } from "node:module"
import { resolve } from "node:path"
import { pathToFileURL } from "node:url"

const tsx = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href
const childScript = resolve(import.meta.dirname, "fullDiskChild.ts")

export interface Steps {
  readonly prefix?: ReadonlyArray<string>
  readonly fill?: () => void
  readonly free: (pid: number) => void
  /** Called with the child as it starts (a test has it killed should the test fail). */
  readonly started?: (child: ReturnType<typeof spawn>) => void
}

export const driveFullDisk = (kind: "jsonl" | "sqlite", dataDir: string, steps: Steps) =>
  new Promise<ReadonlyArray<unknown>>((done, fail) => {
    const command = [...(steps.prefix ?? []), process.execPath, "--import", tsx, childScript, kind, dataDir]
    const child = spawn(command[0]!, command.slice(1), { stdio: ["pipe", "pipe", "pipe"] })
    steps.started?.(child)
    const turns: Array<unknown> = []
    let buffer = ""
    let stderr = ""
    child.stderr.on("data", (chunk) => (stderr += chunk))
    child.stdout.on("data", (chunk) => {
      buffer += chunk
      for (let end = buffer.indexOf("\n"); end >= 0; end = buffer.indexOf("\n")) {
        const line = buffer.slice(0, end)
        buffer = buffer.slice(end + 1)
        // The engine's log lines (a warning when it closes the turn left open) share stdout.
        if (!line.startsWith("{")) continue
        turns.push(JSON.parse(line))
        if (turns.length === 1) steps.fill?.()
        if (turns.length === 2) steps.free(child.pid!)
        if (turns.length < 4) child.stdin.write("next\n")
        else child.stdin.end()
      }
    })
    child.once("exit", (code) => code === 0 ? done(turns) : fail(new Error(`${kind}: exit ${code}: ${stderr}`)))
  })
