/**
 * Project instructions through the built CLI: `run` reads the repository's AGENTS.md and the user's
 * own `<config dir>/AGENTS.md`, records them in `context.built`; `--no-instructions` and
 * `"instructions": false` in the user's settings leave them out.
 */
import { mkdirSync, mkdtempSync, realpathSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import * as Flags from "../../src/cli/Flags.js"
import { run, scratch, sessionIdIn } from "./subprocess.js"

const { dataDir, dir, replay } = scratch("instructions")

/** A repository with an AGENTS.md at its root and cwd one folder down; a config folder with the user's AGENTS.md. */
const setup = (settings?: object) => {
  const repo = realpathSync(mkdtempSync(join(dir, "repo-")))
  mkdirSync(join(repo, ".git"))
  mkdirSync(join(repo, "app"))
  writeFileSync(join(repo, "AGENTS.md"), "Use tabs.\n")
  const config = mkdtempSync(join(dir, "config-"))
  writeFileSync(join(config, "AGENTS.md"), "Answer in French.\n")
  if (settings !== undefined) writeFileSync(join(config, "settings.json"), JSON.stringify(settings))
  return { cwd: join(repo, "app"), env: { EFFECT_AGENT_CONFIG_DIR: config } }
}

const instructionsOf = async (args: ReadonlyArray<string>, options: { readonly cwd: string; readonly env: Record<string, string> }) => {
  const result = await run(["run", "hello", ...args, "--data-dir", dataDir], options)
  expect(result.code).toBe(0)
  const events = await replay(sessionIdIn(result.stderr)!)
  const built = events.find((e) => e.type === "context.built")
  expect(built).toBeDefined()
  return built!.type === "context.built" ? built!.payload.instructions : undefined
}

describe("effect-agent run with instructions files", () => {
  it("records the user's file and the repository's in context.built", async () => {
    const instructions = await instructionsOf([], setup())
    expect(instructions?.map((i) => [i.name, i.source, i.path])).toEqual([
      ["instructions:user", "user-file", "<config>/AGENTS.md"],
      ["instructions:../AGENTS.md", "project", "../AGENTS.md"]
    ])
  })

  it("--no-instructions leaves them out", async () => {
    expect(await instructionsOf(["--no-instructions"], setup())).toBeUndefined()
  })

  it("\"instructions\": false in the user's settings leaves them out; an unknown value is a one-line error", async () => {
    expect(await instructionsOf([], setup({ instructions: false }))).toBeUndefined()
    const bad = await run(["run", "hello", "--data-dir", dataDir], setup({ instructions: "no" }))
    expect(bad.code).toBe(1)
    expect(bad.stderr).toMatch(/settings\.json: instructions: Expected boolean/)
  })
})

describe("the composer's options from the flag and the user's settings", () => {
  it("on unless the flag or the settings say otherwise; the user's file is <config dir>/AGENTS.md", () => {
    expect(Flags.composerOptions(false, undefined, "/c")).toEqual({ projectInstructions: { userFile: "/c/AGENTS.md" } })
    expect(Flags.composerOptions(false, { instructions: true }, "/c")).toEqual({ projectInstructions: { userFile: "/c/AGENTS.md" } })
    expect(Flags.composerOptions(true, undefined, "/c")).toEqual({ projectInstructions: false })
    expect(Flags.composerOptions(false, { instructions: false }, "/c")).toEqual({ projectInstructions: false })
  })
})
