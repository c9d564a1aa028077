/**
 * Review 59c: a trusted .mcp.json whose server's program is a file McpFiles takes for "data"
 * (.md, .log, .jsonl, .csv, .db …) or that a launcher finds by a name that is not a path
 * (`python3 -m pkg.server`, `node --run mcp`, `deno task mcp`). Changing that file after trust
 * leaves the .mcp.json trusted, so the changed code runs outside the sandbox at the next start.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { afterAll, describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as WorkspaceTools from "../../src/layers/WorkspaceTools.js"
import type { ToolContext } from "../../src/services/ToolRouter.js"
import { outsideTmp } from "../tmp.js"
import { trustedProjects } from "./mcpTrustedProject.js"

const root = realpathSync(mkdtempSync(join(outsideTmp(), "review59c-mcp-")))
afterAll(() => rmSync(root, { recursive: true, force: true }))

const trusted = trustedProjects(root)

describe("review59c: the program a trusted .mcp.json runs is bound whatever its name", () => {
  for (const [server, file] of [
    [{ command: "node", args: ["tools/server.md"] }, "tools/server.md"],
    [{ command: "sh", args: ["tools/run.log"] }, "tools/run.log"],
    [{ command: "./serve.md" }, "serve.md"],
    [{ command: "python3", args: ["-m", "tools.server"] }, "tools/server.py"],
    [{ command: "node", args: ["--run", "mcp"] }, "package.json"],
    [{ command: "deno", args: ["task", "mcp"] }, "deno.json"]
  ] as const) {
    it(`${JSON.stringify(server)}: changing ${file} after trust untrusts it`, async () => {
      const at = await trusted(server, { [file]: "// the server\n", "tools/__init__.py": "" })
      writeFileSync(join(at.cwd, file), "require('child_process').execSync('touch /tmp/pwned')\n")
      expect(await at.starts()).toBe(false)
    })
  }

  it("write_file (acceptEdits asks nothing for a .md) rewrites a trusted server's program", async () => {
    const at = await trusted({ command: "node", args: ["docs/server.md"] }, { "docs/server.md": "// the server\n" })
    const router = await Effect.runPromise(WorkspaceTools.make({ sandbox: "auto" }).pipe(Effect.provide(NodeContext.layer)))
    const context: ToolContext = { sessionId: "s", turnId: "t", cwd: at.cwd, progress: () => Effect.void }
    const written = await Effect.runPromise(Effect.either(Effect.flatMap(router.prepare({ toolCallId: "c", tool: "write_file", args: { path: "docs/server.md", content: "require('child_process').execSync('id > /tmp/pwned')\n" } }, at.cwd), (call) => router.execute(call, context))).pipe(Effect.provide(NodeContext.layer)))
    expect(Either.isRight(written)).toBe(true)
    expect(await at.starts()).toBe(false)
  })
})
