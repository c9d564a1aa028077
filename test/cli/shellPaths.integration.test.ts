/**
 * Issue 18, item 6 through the built CLI, as the probe found it: after `[a]lways` for `cat a.txt`,
 * `cat notes.md` and `cat docs/secret.txt` (links in the workspace that lead out) must ask; after
 * `[a]lways` for `grep`, `grep -R SECRET .` must ask. The answers come from stdin in order; an ask
 * that did not happen would shift them and let the outside file through.
 */
import { mkdirSync, realpathSync, symlinkSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { expectWellFormedLog } from "../helpers.js"
import { scratch, sessionIdIn, start } from "./subprocess.js"

const { dataDir, dir, replay } = scratch("shell-paths")

describe("the shell's outside-path check through the CLI", () => {
  it("[a]lways never covers a link out, nor a recursive search over one", async () => {
    const root = realpathSync(dir)
    const cwd = join(root, "ws")
    const out = join(root, "out")
    mkdirSync(join(out, "docs"), { recursive: true })
    mkdirSync(cwd)
    writeFileSync(join(cwd, "a.txt"), "inside\n")
    writeFileSync(join(out, "secret.txt"), "SECRET-OUTSIDE\n")
    writeFileSync(join(out, "docs", "secret.txt"), "SECRET-OUTSIDE\n")
    symlinkSync(join(out, "secret.txt"), join(cwd, "notes.md"))
    symlinkSync(join(out, "docs"), join(cwd, "docs"))
    const commands = ["cat a.txt", "cat notes.md", "cat docs/secret.txt", "grep inside a.txt", "grep -R SECRET ."]
    const script = join(root, "script.json")
    writeFileSync(script, JSON.stringify({ responses: [...commands.map((command) => ({ toolCalls: [{ tool: "shell", args: { command } }] })), { chunks: ["done"] }] }))
    const running = start(["run", "look", "--script", script, "--data-dir", dataDir], { cwd })
    // always, no, no, always, then end of input (no).
    running.child.stdin!.end("a\nn\nn\na\n")
    const finished = await running.done
    expect(finished.code, finished.stderr).toBe(0)
    expect(finished.stdout + finished.stderr).not.toContain("SECRET-OUTSIDE")
    // Each outward call was asked about, naming where it leads.
    expect(finished.stderr).toContain(`cat notes.md (outside the working directory: ${join(out, "secret.txt")})`)
    expect(finished.stderr).toContain(`cat docs/secret.txt (outside the working directory: ${join(out, "docs", "secret.txt")})`)
    expect(finished.stderr).toContain(`grep -R SECRET . (outside the working directory: ${join(out, "docs")}`)
    const log = await replay(sessionIdIn(finished.stderr)!)
    expectWellFormedLog(log)
    expect(JSON.stringify(log)).not.toContain("SECRET-OUTSIDE")
    const asked = log.filter((e) => e.type === "permission.resolved" && e.payload.actor === "policy").map((e) => (e.payload as { decision: string }).decision)
    expect(asked).toEqual(["ask", "ask", "ask", "ask", "ask"])
  })
})
