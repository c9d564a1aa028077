/**
 * Red team 13: a `.mcp.json` naming more paths than trust covers is refused — but only after every
 * path it names was resolved, with the nine names a launcher tries for each: a 1 MiB file of 140,000
 * words made 1.7 million paths, 5 seconds of the event loop and 200 MB at `trust`, and at each
 * session's start in a clone whose earlier `.mcp.json` was trusted. The count now stops past the limit.
 */
import { describe, expect, it } from "vitest"
import * as McpFiles from "../../src/layers/mcp/McpFiles.js"

describe("McpFiles.namedPaths stops once a file names more than trust covers", () => {
  it("50,000 words give the limit and at most one word's names more", () => {
    const words = Array.from({ length: 50_000 }, (_, i) => `w${i}`).join(" ")
    const named = McpFiles.namedPaths("/work/project", { x: { command: "node", args: [words] } })
    expect(named.length).toBeGreaterThan(McpFiles.limits.names)
    expect(named.length).toBeLessThanOrEqual(McpFiles.limits.names + 10)
  })

  it("within the limit, every name and a launcher's names for it", () => {
    // `node` is a name in the project too: a file of that name there is what a launcher would find.
    const named = McpFiles.namedPaths("/work/project", { x: { command: "node", args: ["tools/mcp"] } })
    expect(named).toEqual([..."node tools/mcp".split(" ").flatMap((n) => [n, ...[".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", ".py", ".sh", ".json"].map((s) => n + s)])].sort())
  })

  it("an interpreter's script is bound whatever its name; its data after it is not (review 59c)", () => {
    const named = (server: { command: string; args?: Array<string> }) => McpFiles.namedPaths("/work/project", { x: server })
    expect(named({ command: "python3", args: ["-u", "server.md", "--db", "./x.db"] })).toContain("server.md")
    expect(named({ command: "python3", args: ["-u", "server.md", "--db", "./x.db"] })).not.toContain("x.db")
    expect(named({ command: "node", args: ["--require", "./hook.md", "tools/server.md"] })).toEqual(expect.arrayContaining(["hook.md", "tools/server.md"]))
    expect(named({ command: "sh", args: ["-c", "node tools/server.log --out run.log"] })).toContain("tools/server.log")
    expect(named({ command: "sh", args: ["-c", "node tools/server.log --out run.log"] })).not.toContain("run.log")
    expect(named({ command: "/usr/bin/python3", args: ["-m", "a.b"] })).toEqual(expect.arrayContaining(["a/__init__.py", "a/b.py", "a/b/__init__.py", "a/b/__main__.py"]))
  })
})
