/**
 * The shell examples of docs/cli.md that a user pastes whole, run as pasted: in `sh` (dash on
 * Debian and Ubuntu) and `bash`, and `zsh` where the machine has it, with `effect-agent` the built
 * CLI. The `--script` example wrote its JSON with `echo '…"one\n"…'`: bash's echo keeps the `\n`,
 * but dash's and zsh's (macOS's default shell) turn it into a line break inside a JSON string, and
 * the run failed "not valid JSON".
 */
import { spawn, spawnSync } from "node:child_process"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { blocksOf } from "../docCommands.js"
import { ownedByTest } from "../processes.js"
import { cliOnPath, folders, isolatedConfigDir } from "./subprocess.js"

/** The `sh` block of the guide that holds `marker`, its lines unindented. */
const shellBlock = (marker: string): string => {
  const block = blocksOf("docs/cli.md").find((candidate) => candidate.lang === "sh" && candidate.text.includes(marker))
  if (block === undefined) throw new Error(`docs/cli.md: no sh block holding ${marker}`)
  return block.text
}

const { folder } = folders("doc-examples")

const runIn = (shell: string, script: string, cwd: string) =>
  new Promise<{ code: number | null; stdout: string; stderr: string }>((done) => {
    const env: Record<string, string | undefined> = {
      ...process.env,
      PATH: `${cliOnPath()}:${process.env.PATH ?? ""}`,
      EFFECT_AGENT_CONFIG_DIR: isolatedConfigDir(),
      NODE_OPTIONS: ""
    }
    for (const key of ["ANTHROPIC_API_KEY", "OPENAI_API_KEY"]) delete env[key]
    const child = ownedByTest(spawn(shell, ["-c", script], { cwd, env, stdio: ["ignore", "pipe", "pipe"] }))
    let stdout = ""
    let stderr = ""
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => void (stdout += chunk))
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => void (stderr += chunk))
    child.on("close", (code) => done({ code, stdout, stderr }))
  })

const shells = ["sh", "bash", "zsh"].filter((shell) => spawnSync(shell, ["-c", "true"], { stdio: "ignore" }).status === 0)

describe("docs/cli.md's shell examples, pasted into a shell", () => {
  it.each(shells)("the --script example writes a.txt through a scripted tool call (%s)", async (shell) => {
    const cwd = folder(shell)
    const result = await runIn(shell, shellBlock("script.json"), cwd)
    expect(result, result.stderr).toMatchObject({ code: 0 })
    expect(result.stdout).toContain("Wrote a.txt")
    expect(readFileSync(join(cwd, "a.txt"), "utf8")).toBe("one\n")
  }, 120_000)
})
