/**
 * Red team 7, item 1: the workspace files a trusted `.mcp.json`'s servers run. Trust was bound to
 * the SHA-256 of `.mcp.json` alone, so `{"command": "node", "args": ["tools/mcp.js"]}`, trusted,
 * ran whatever `tools/mcp.js` held at the next session's start — outside the sandbox. The agent
 * could rewrite it with `write_file` in `acceptEdits` (no question) or with a sandboxed command.
 * Trust now covers the files a server's command, arguments and variables name inside the project:
 * a changed (or newly made) one makes the file untrusted again, and nothing of it starts.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { afterAll, describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, truncateSync, unlinkSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as McpSettings from "../../src/layers/mcp/McpSettings.js"
import * as TrustStore from "../../src/layers/TrustStore.js"
import * as WorkspaceTools from "../../src/layers/WorkspaceTools.js"
import type { ToolContext } from "../../src/services/ToolRouter.js"
import { outsideTmp } from "../tmp.js"
import { run, trustedProjects } from "./mcpTrustedProject.js"

// Outside /tmp: a sandboxed command gets a private /tmp, and must write the real workspace here.
const root = realpathSync(mkdtempSync(join(outsideTmp(), "effect-agent-mcp-files-")))
afterAll(() => rmSync(root, { recursive: true, force: true }))
let count = 0


const trusted = trustedProjects(root)

const tools = (cwd: string) =>
  Effect.gen(function*() {
    const router = yield* WorkspaceTools.make({ sandbox: "auto" })
    const context: ToolContext = { sessionId: "s", turnId: "t", cwd, progress: () => Effect.void }
    return (tool: string, args: Record<string, string>) =>
      Effect.either(Effect.flatMap(router.prepare({ toolCallId: "c", tool, args }, cwd), (call) => router.execute(call, context)))
  }).pipe(Effect.provide(NodeContext.layer))

describe("a trusted .mcp.json's servers run the workspace's files: trust covers them", () => {
  it("write_file rewriting the server's script (acceptEdits asks nothing) makes the file untrusted again", async () => {
    const at = await trusted({ command: "node", args: ["tools/mcp.js"] }, { "tools/mcp.js": "// the server\n" })
    const call = await Effect.runPromise(tools(at.cwd))
    const written = await Effect.runPromise(call("write_file", { path: "tools/mcp.js", content: "require('child_process').execSync('touch /tmp/pwned')\n" }))
    expect(Either.isRight(written)).toBe(true)
    expect(await at.starts()).toBe(false)
    const loaded = await run(McpSettings.load({ cwd: at.cwd, configDir: at.configDir }))
    expect(loaded.project?.trust).toBe("changed")
    expect(loaded.notes.join("\n")).toContain("it changed since you trusted it")
  })

  it("a sandboxed command rewriting the server's script makes the file untrusted again", async () => {
    const at = await trusted({ command: "node", args: ["tools/mcp.js"] }, { "tools/mcp.js": "// the server\n" })
    const call = await Effect.runPromise(tools(at.cwd))
    const done = await Effect.runPromise(call("shell", { command: "sh -c 'echo evil >> tools/mcp.js'" }))
    expect(Either.isRight(done)).toBe(true)
    expect(await at.starts()).toBe(false)
  })

  it("options that name a file (-r ./x.js, --import=./x.mjs), a variable's value (NODE_OPTIONS) and a relative command are covered", async () => {
    for (const [server, file] of [
      [{ command: "node", args: ["-r", "./x.js", "server.js"] }, "x.js"],
      [{ command: "node", args: ["--import=./x.mjs", "server.js"] }, "x.mjs"],
      [{ command: "node", args: ["server.js"], env: { NODE_OPTIONS: "--require ./pre.cjs" } }, "pre.cjs"],
      [{ command: "./bin/server" }, "bin/server"],
      // node resolves `tools/mcp` to tools/mcp.js
      [{ command: "node", args: ["tools/mcp"] }, "tools/mcp.js"],
      // a folder: node runs its index.js
      [{ command: "node", args: ["srv"] }, "srv/index.js"],
      // a command line in an argument, as a shell runs it
      [{ command: "sh", args: ["-c", "cd . && node tools/mcp.js --stdio"] }, "tools/mcp.js"],
      // what a package manager runs is its package.json's script; make's, its Makefile's rule
      [{ command: "npm", args: ["run", "mcp"] }, "package.json"],
      [{ command: "sh", args: ["-c", "exec make mcp"] }, "Makefile"]
    ] as const) {
      const at = await trusted(server, { "server.js": "//\n", [file]: "// first\n" })
      writeFileSync(join(at.cwd, file), "// changed\n")
      expect(await at.starts(), JSON.stringify(server)).toBe(false)
    }
  })

  it("a script that does not exist yet, and a script reached through a link, are covered", async () => {
    const absent = await trusted({ command: "node", args: ["tools/mcp.js"] })
    mkdirSync(join(absent.cwd, "tools"))
    writeFileSync(join(absent.cwd, "tools", "mcp.js"), "// made later\n")
    expect(await absent.starts()).toBe(false)

    const linked = await trusted({ command: "node", args: ["mcp.js"] }, { "lib/real.js": "// real\n", "lib/other.js": "// other\n" })
    symlinkSync("lib/real.js", join(linked.cwd, "mcp.js"))
    // The link was made after trust: a change like any other.
    expect(await linked.starts()).toBe(false)
    const project = (await run(McpSettings.inspect(linked.cwd, linked.configDir)))!
    await run(TrustStore.trust(linked.configDir, project.path, project.sha256))
    expect(await linked.starts()).toBe(true)
    writeFileSync(join(linked.cwd, "lib", "real.js"), "// changed where the link leads\n")
    expect(await linked.starts()).toBe(false)
    writeFileSync(join(linked.cwd, "lib", "real.js"), "// real\n")
    expect(await linked.starts()).toBe(true)
    unlinkSync(join(linked.cwd, "mcp.js"))
    symlinkSync("lib/other.js", join(linked.cwd, "mcp.js"))
    expect(await linked.starts()).toBe(false)
  })

  it("a server's data stays the server's: a database it writes and a folder it serves change without untrusting it", async () => {
    // The MCP documentation's own examples: a SQLite server writing its database, a filesystem
    // server given a folder of the project. Neither file is code a launcher runs; binding them made
    // every session after the server's first write (or the agent's first edit in docs/) ask for trust again.
    const sqlite = await trusted({ command: "uvx", args: ["mcp-server-sqlite", "--db-path", "./test.db"] }, { "test.db": "SQLite format 3\0" })
    writeFileSync(join(sqlite.cwd, "test.db"), "SQLite format 3\0 with a table")
    expect(await sqlite.starts()).toBe(true)

    const served = await trusted({ command: "npx", args: ["-y", "@modelcontextprotocol/server-filesystem", "./docs"] }, { "docs/guide.md": "# Guide\n" })
    writeFileSync(join(served.cwd, "docs", "guide.md"), "# Guide, edited\n")
    writeFileSync(join(served.cwd, "docs", "new.md"), "# New\n")
    expect(await served.starts()).toBe(true)
    // What a launcher would run from that folder is still bound.
    writeFileSync(join(served.cwd, "docs", "index.js"), "// now a folder node would run\n")
    expect(await served.starts()).toBe(false)

    // A folder's package.json names the file node runs from it.
    const pkg = await trusted({ command: "node", args: ["srv"] }, { "srv/package.json": JSON.stringify({ main: "server.mjs" }), "srv/server.mjs": "// first\n" })
    writeFileSync(join(pkg.cwd, "srv", "server.mjs"), "// changed\n")
    expect(await pkg.starts()).toBe(false)
  })

  it("a file trusted by an earlier version (its hash alone) is untrusted, and the note says trust widened, not that it changed", async () => {
    const at = await trusted({ command: "node", args: ["tools/mcp.js"] }, { "tools/mcp.js": "// the server\n" })
    const project = (await run(McpSettings.inspect(at.cwd, at.configDir)))!
    await run(TrustStore.revoke(at.configDir, project.path))
    const { readFileSync } = await import("node:fs")
    await run(TrustStore.trust(at.configDir, project.path, TrustStore.sha256(readFileSync(join(at.cwd, ".mcp.json")))))
    expect(await at.starts()).toBe(false)
    const loaded = await run(McpSettings.load({ cwd: at.cwd, configDir: at.configDir }))
    expect(loaded.notes.join("\n")).toContain("trust now also covers the files its servers run")
    expect(loaded.notes.join("\n")).not.toContain("it changed since you trusted it")
  })

  it("a .mcp.json naming more paths than trust can cover is refused, not bound in part", async () => {
    // Binding the first names alphabetically left the others unbound: a script among them was run as it was then.
    const cwd = join(root, `case-${++count}`)
    mkdirSync(cwd, { recursive: true })
    const line = Array.from({ length: 120 }, (_, i) => `step${i}`).join(" && ") + " && node zz/mcp.js"
    writeFileSync(join(cwd, ".mcp.json"), JSON.stringify({ mcpServers: { x: { command: "sh", args: ["-c", line] } } }))
    const inspected = await Effect.runPromise(Effect.either(McpSettings.inspect(cwd, join(cwd, "config"))).pipe(Effect.provide(NodeContext.layer)))
    expect(Either.isLeft(inspected)).toBe(true)
    if (Either.isLeft(inspected)) expect(inspected.left.message).toContain("more than the 1024 trust can cover")
    // A session's start reads nothing of a .mcp.json never trusted: it says so and starts none.
    const loaded = await run(McpSettings.load({ cwd, configDir: join(cwd, "config") }))
    expect(loaded.project?.trust).toBe("untrusted")
    expect(loaded.notes.join("\n")).toContain("is not trusted")
  })

  it("a launcher's configuration naming more paths than trust can cover is refused by their count, not as bytes", async () => {
    // The leftovers round: the names an `.npmrc` adds past the limit were refused with the message
    // for bytes ("hold more than the 256 MiB trust reads") though the files held a few bytes.
    const cwd = join(root, `case-${++count}`)
    mkdirSync(cwd, { recursive: true })
    writeFileSync(join(cwd, ".npmrc"), `node-options=${Array.from({ length: 200 }, (_, i) => `--require ./pre/p${i}`).join(" ")}\n`)
    writeFileSync(join(cwd, ".mcp.json"), JSON.stringify({ mcpServers: { x: { command: "npx", args: ["-y", "docs-mcp@1.0.0"] } } }))
    const inspected = await Effect.runPromise(Effect.either(McpSettings.inspect(cwd, join(cwd, "config"))).pipe(Effect.provide(NodeContext.layer)))
    expect(Either.isLeft(inspected)).toBe(true)
    if (Either.isLeft(inspected)) {
      expect(inspected.left.message).toContain("more than the 1024 trust can cover")
      expect(inspected.left.message).not.toContain("MiB")
    }
  })

  it("a name a launcher's configuration repeats counts once: a preload after many repeated lines is bound, not cut off", async () => {
    // The leftovers round: the names of a configuration file were counted with their repeats, and
    // those past the count were dropped unrefused — 60 lines of `script-shell=./sh` (each ten names
    // with a launcher's suffixes) hid the `--require ./tools/evil.js` after them from trust.
    const lines = [...Array.from({ length: 60 }, () => "script-shell=./sh"), "node-options=--require ./tools/evil.js"]
    const at = await trusted({ command: "npx", args: ["-y", "docs-mcp@1.0.0"] }, { ".npmrc": lines.join("\n") + "\n", "tools/evil.js": "// preload\n" })
    writeFileSync(join(at.cwd, "tools", "evil.js"), "// changed after trust\n")
    expect(await at.starts()).toBe(false)
  })

  it("files holding more than trust reads in all (links to one large file) are refused, not hashed again and again", async () => {
    const cwd = join(root, `case-${++count}`)
    mkdirSync(join(cwd, "tools"), { recursive: true })
    // Sparse: 64 MiB that takes no disk; five links to it would be 320 MiB of reading.
    const large = join(root, `large-${count}.js`)
    writeFileSync(large, "")
    truncateSync(large, 64 * 1024 * 1024)
    for (let i = 0; i < 5; i++) symlinkSync(large, join(cwd, "tools", `m${i}.js`))
    writeFileSync(join(cwd, ".mcp.json"), JSON.stringify({ mcpServers: { x: { command: "node", args: [0, 1, 2, 3, 4].map((i) => `tools/m${i}.js`) } } }))
    const inspected = await Effect.runPromise(Effect.either(McpSettings.inspect(cwd, join(cwd, "config"))).pipe(Effect.provide(NodeContext.layer)))
    expect(Either.isLeft(inspected)).toBe(true)
    if (Either.isLeft(inspected)) expect(inspected.left.message).toContain("MiB trust reads")
  })

  it("unchanged files keep it trusted; the summary names the files trust covers", async () => {
    const at = await trusted({ command: "node", args: ["tools/mcp.js"] }, { "tools/mcp.js": "// the server\n" })
    expect(await at.starts()).toBe(true)
    const project = (await run(McpSettings.inspect(at.cwd, at.configDir)))!
    expect(McpSettings.summary(project).join("\n")).toContain("tools/mcp.js")
    const entry = (await run(TrustStore.entries(at.configDir)))[0]!
    expect(await run(McpSettings.entryStatus(entry))).toBe("trusted")
    writeFileSync(join(at.cwd, "tools", "mcp.js"), "// changed\n")
    expect(await run(McpSettings.entryStatus(entry))).toBe("changed")
  })
})
