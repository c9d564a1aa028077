/**
 * An interpreter option trust does not know may take the next word as its value
 * (`node --stack-size 4000 tools/server.md`, `python3 -Q new server.md`): read as a switch, that
 * value was taken for the script and the real script — a data-like name — was left unbound, so code
 * put there after `trust` ran with the project still trusted. The word after an unknown option's
 * next word is bound too; a known switch (`python3 -u`) keeps the data after the script unbound.
 */
import { describe, expect, it } from "vitest"
import * as McpFiles from "../../src/layers/mcp/McpFiles.js"

const named = (server: { command: string; args?: Array<string> }) => McpFiles.namedPaths("/work/project", { x: server })

describe("an interpreter's unknown option before its script", () => {
  it("binds the script after the option's possible value", () => {
    expect(named({ command: "node", args: ["--stack-size", "4000", "tools/server.md"] })).toContain("tools/server.md")
    expect(named({ command: "python3", args: ["-Q", "new", "server.md"] })).toContain("server.md")
    expect(named({ command: "bash", args: ["-O", "extglob", "run.log"] })).toContain("run.log")
    expect(named({ command: "sh", args: ["-c", "node --max-old-space-size 64 tools/server.txt"] })).toContain("tools/server.txt")
  })

  it("keeps a known switch's data after the script unbound", () => {
    expect(named({ command: "python3", args: ["-u", "server.md", "data.md"] })).not.toContain("data.md")
    expect(named({ command: "node", args: ["--enable-source-maps", "server.js", "notes.md"] })).not.toContain("notes.md")
    expect(named({ command: "node", args: ["--inspect", "server.js", "notes.md"] })).not.toContain("notes.md")
  })
})
