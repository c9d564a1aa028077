/**
 * reach45: a server's names for its tools are its text, as its descriptions are. A real McpServer
 * (test/fixtures/mcp/lying.mjs) names tools after the key its configuration gives it and with an
 * escape sequence, a bidi override and a newline. Before, descriptions and schemas had the key
 * hidden but names did not: `whoami-<key>` is all letters, digits and `-`, so it was offered as
 * `mcp__lying__whoami-<key>` — in every model request, in `mcp.tools_listed`, in `mcp list` — and
 * a left-out tool's note named it whole. Now a name has the server's secrets hidden before it is
 * sanitised; the call still reaches the tool by the server's own name.
 */
import { mkdtempSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { expect, layer } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as McpTools from "../../src/layers/McpTools.js"
import { start } from "../cli/subprocess.js"
import { tempDir } from "../helpers.js"

const secret = "sk-live-0123456789abcdef"
const lying = { command: process.execPath, args: [new URL("../fixtures/mcp/lying.mjs", import.meta.url).pathname], env: { API_TOKEN: secret } }

layer(NodeContext.layer)("a server that lies in its tools' names", (it) => {
  it.scoped("its key is hidden in the names offered, recorded and told of; control characters are _; the call reaches the server's own name", () =>
    Effect.gen(function*() {
      const cwd = yield* tempDir
      const notes: Array<string> = []
      const tools = yield* McpTools.make({ servers: { lying }, cwd, onToolLeftOut: (note) => Effect.sync(() => notes.push(note)) })
      const names = tools.router.definitions.map((d) => d.name)
      expect(names).toEqual(["mcp__lying__whoami-_redacted_", "mcp__lying__echo__2J__rm_-rf"])
      for (const name of names) expect(name).toMatch(/^[a-zA-Z0-9_-]{1,64}$/)
      // What the model is offered, what the log records, what is told of and listed.
      const seen = JSON.stringify([tools.router.definitions, tools.router.sources?.(), tools.listings(), notes])
      expect(seen).not.toContain(secret)
      expect(notes).toEqual([expect.stringMatching(/^MCP server "lying": its tool "bad-\[redacted\]" is left out: its input schema is not a valid JSON Schema/)])
      expect(tools.listings()[0]!.leftOut).toEqual([{ tool: "bad-[redacted]", reason: expect.any(String) }])
      const prepared = yield* tools.router.prepare({ toolCallId: "c1", tool: "mcp__lying__whoami-_redacted_", args: {} }, cwd)
      const output = yield* tools.router.execute(prepared, {} as never)
      // The server's own name reached it; its answer, which holds the key, is redacted as results are.
      expect(output.result).toBe("called \"whoami-[redacted]\"")
    }))

  it.scoped("`mcp list` shows neither the key nor the control characters", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      const config = join(root, "mcp.json")
      writeFileSync(config, JSON.stringify({ mcpServers: { lying } }))
      const running = start(["mcp", "list", "--mcp-config", config], { cwd: root, env: { EFFECT_AGENT_CONFIG_DIR: mkdtempSync(join(root, "config-")) } })
      running.child.stdin!.end()
      const done = yield* Effect.promise(() => running.done)
      expect(done.code, done.stderr).toBe(0)
      expect(done.stdout + done.stderr).not.toContain(secret)
      expect(done.stdout).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f\u202e]/)
      const lines = done.stdout.trim().split("\n")
      expect(lines).toContainEqual(expect.stringMatching(/^ {2}mcp__lying__whoami-_redacted_ {2}~\d+ tokens$/))
      expect(lines).toContainEqual(expect.stringMatching(/^ {2}mcp__lying__bad-_redacted_ {2}left out: /))
    }))
})
