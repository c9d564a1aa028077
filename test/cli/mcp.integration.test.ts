/**
 * MCP servers through the built CLI: `--mcp-config`, the user's own `mcp.json`, and a project's
 * `.mcp.json` that starts nothing until the user trusts that exact file. The server is the SDK
 * fixture (test/fixtures/mcp/server.mjs); it writes a line to MARKER_DIR/started each time it starts,
 * so "nothing was spawned" is a file that does not exist. A scripted model makes the calls.
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { dirname, join, resolve } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { start } from "./subprocess.js"

const dir = mkdtempSync(join(tmpdir(), "effect-agent-mcp-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const serverScript = resolve(import.meta.dirname, "../fixtures/mcp/server.mjs")

const project = (name: string, calls: ReadonlyArray<{ tool: string; args: object }>) => {
  const root = join(dir, name)
  const p = { root, cwd: join(root, "repo"), config: join(root, "config"), markers: join(root, "markers"), dataDir: join(root, "data"), script: join(root, "script.json") }
  for (const d of [p.cwd, p.config, p.markers]) mkdirSync(d, { recursive: true })
  writeFileSync(p.script, JSON.stringify({ responses: [{ toolCalls: calls }, { chunks: ["done"] }] }))
  return p
}
type Project = ReturnType<typeof project>

const serversFile = (p: Project) => ({ mcpServers: { fixture: { command: process.execPath, args: [serverScript], env: { MARKER_DIR: p.markers } } } })

const cli = async (p: Project, args: ReadonlyArray<string>) => {
  const running = start(args, { cwd: p.cwd, env: { EFFECT_AGENT_CONFIG_DIR: p.config } })
  running.child.stdin!.end()
  return running.done
}
const runIn = (p: Project, flags: ReadonlyArray<string> = []) => cli(p, ["run", "go", "--script", p.script, "--data-dir", p.dataDir, ...flags])

const logOf = async (p: Project, stderr: string) => {
  const sessionId = /session (sess_\S+)/.exec(stderr)?.[1]
  if (sessionId === undefined) return ""
  return (await cli(p, ["replay", sessionId, "--json", "--data-dir", p.dataDir])).stdout
}
/** Your rule for a trusted project's server's tools: a rule for MCP tools covers only servers of its origin (`projectServer`). */
const allowProjectServer = (p: Project, tool: string) =>
  writeFileSync(join(p.config, "settings.json"), JSON.stringify({ rules: [{ decision: "allow", tool, projectServer: true }] }))
const starts = (p: Project) => existsSync(join(p.markers, "started")) ? readFileSync(join(p.markers, "started"), "utf8").trim().split("\n").length : 0

describe("MCP servers in the CLI", () => {
  it("--mcp-config: the server's tool runs when --allow names it, and its result is in the log", async () => {
    const p = project("flag", [{ tool: "mcp__fixture__echo", args: { text: "from the cli" } }])
    const config = join(p.root, "mcp.json")
    writeFileSync(config, JSON.stringify(serversFile(p)))
    const done = await runIn(p, ["--mcp-config", config, "--allow", "mcp__fixture__echo"])
    expect(done.code, done.stderr).toBe(0)
    const log = await logOf(p, done.stderr)
    expect(log).toContain("\"result\":\"echo: from the cli\"")
    expect(starts(p)).toBe(1)
    const listed = (text: string) => text.split("\n").filter((line) => line.includes("\"type\":\"mcp.tools_listed\"")).map((line) => JSON.parse(line).payload)
    expect(listed(log)).toHaveLength(1)
    expect(done.stderr).toContain("MCP server fixture: 8 tools")

    // The session resumed in another process, whose server offers the same tools: nothing new is recorded.
    const sessionId = /session (sess_\S+)/.exec(done.stderr)![1]!
    const again = await runIn(p, ["--session", sessionId, "--mcp-config", config, "--allow", "mcp__fixture__echo"])
    expect(again.code, again.stderr).toBe(0)
    expect(listed(await logOf(p, done.stderr))).toHaveLength(1)

    // Resumed once more with a server that now offers another list: the change is recorded, before the request that offers it.
    writeFileSync(join(p.markers, "variant"), "2")
    const changed = await runIn(p, ["--session", sessionId, "--mcp-config", config, "--allow", "mcp__fixture__echo"])
    expect(changed.code, changed.stderr).toBe(0)
    const lists = listed(await logOf(p, done.stderr))
    expect(lists).toHaveLength(2)
    expect(lists[1].hash).not.toBe(lists[0].hash)
    expect(lists[1].tools.map((t: { name: string }) => t.name)).toContain("mcp__fixture__extra")
  }, 120_000)

  // Before, one server that did not start ended the run (exit 2) and no server's tools were offered.
  it("one server that does not start or list leaves the others' tools offered and names itself on stderr; every server failing is an error", async () => {
    const p = project("degrade", [{ tool: "mcp__fixture__echo", args: { text: "still here" } }])
    const config = join(p.root, "mcp.json")
    const broken = { missing: { command: join(p.root, "no-such-server") }, gone: { command: join(p.root, "no-such-server-either") } }
    writeFileSync(config, JSON.stringify({ mcpServers: { ...serversFile(p).mcpServers, missing: broken.missing } }))
    const done = await runIn(p, ["--mcp-config", config, "--allow", "mcp__fixture__echo"])
    expect(done.code, done.stderr).toBe(0)
    expect(await logOf(p, done.stderr)).toContain("\"result\":\"echo: still here\"")
    expect(done.stderr).toMatch(/effect-agent: MCP server "missing": ".*no-such-server" was not found \(start_failed\); its tools are not offered in this session, the other servers' are/)
    writeFileSync(config, JSON.stringify({ mcpServers: broken }))
    const none = await runIn(p, ["--mcp-config", config])
    expect(none.code).not.toBe(0)
    expect(none.stderr).toContain("MCP server \"missing\"")
  }, 120_000)

  it("without an allow rule the call asks; with stdin closed the answer is no and the server never runs the tool", async () => {
    const p = project("ask", [{ tool: "mcp__fixture__echo", args: { text: "x" } }])
    const config = join(p.root, "mcp.json")
    writeFileSync(config, JSON.stringify(serversFile(p)))
    const done = await runIn(p, ["--mcp-config", config])
    const log = await logOf(p, done.stderr)
    expect(log).toContain("\"decision\":\"ask\"")
    expect(log).toContain("\"errorCode\":\"permission_denied\"")
    expect(log).not.toContain("echo: x")
  }, 60_000)

  it("a bad --mcp-config is one line naming the file and the entry", async () => {
    const p = project("bad", [])
    const config = join(p.root, "bad.json")
    writeFileSync(config, JSON.stringify({ mcpServers: { fixture: { command: "x", arg: [] } } }))
    const done = await runIn(p, ["--mcp-config", config])
    expect(done.code).toBe(1)
    expect(done.stderr.trim().split("\n")).toHaveLength(1)
    expect(done.stderr).toContain("bad.json: mcpServers.fixture")
  }, 60_000)

  it("mcp list: each server's tools and what they cost in context, with a total", async () => {
    const p = project("list", [])
    const config = join(p.root, "mcp.json")
    writeFileSync(config, JSON.stringify(serversFile(p)))
    const done = await cli(p, ["mcp", "list", "--mcp-config", config])
    expect(done.code, done.stderr).toBe(0)
    const lines = done.stdout.trim().split("\n")
    expect(lines[0]).toMatch(/^fixture {2}8 tools {2}~\d+ tokens$/)
    expect(lines).toContainEqual(expect.stringMatching(/^ {2}mcp__fixture__echo {2}~\d+ tokens$/))
    const perTool = lines.slice(1, -1).map((line) => Number(/~(\d+) tokens/.exec(line)![1]))
    const server = Number(/~(\d+) tokens/.exec(lines[0]!)![1])
    // The server's cost is its tools' together (one JSON array, so within a few tokens of the sum).
    expect(Math.abs(server - perTool.reduce((a, b) => a + b, 0))).toBeLessThanOrEqual(perTool.length)
    expect(lines.at(-1)).toBe(`total  ~${server} tokens in every request`)
    const none = await cli(project("none", []), ["mcp", "list"])
    expect(none.stderr).toContain("No MCP servers are configured here.")
  }, 60_000)

  it("mcp list: a server that fails to start is shown with its reason beside the others; the exit code is non-zero only when every one failed", async () => {
    const p = project("list-broken", [])
    const broken = { command: join(p.root, "no-such-program"), args: [] }
    const config = join(p.root, "mcp.json")
    writeFileSync(config, JSON.stringify({ mcpServers: { ...serversFile(p).mcpServers, broken } }))
    const some = await cli(p, ["mcp", "list", "--mcp-config", config])
    expect(some.code, some.stderr).toBe(0)
    const lines = some.stdout.trim().split("\n")
    expect(lines[0]).toMatch(/^fixture {2}8 tools {2}~\d+ tokens$/)
    expect(lines).toContainEqual(expect.stringMatching(/^broken {2}failed \(start_failed\): /))
    expect(lines.at(-1)).toMatch(/^total {2}~\d+ tokens in every request$/)

    const onlyBroken = join(p.root, "broken.json")
    writeFileSync(onlyBroken, JSON.stringify({ mcpServers: { broken, alsoBroken: broken } }))
    const none = await cli(p, ["mcp", "list", "--mcp-config", onlyBroken])
    expect(none.code).toBe(1)
    expect(none.stdout).toMatch(/^broken {2}failed \(start_failed\): /m)
    expect(none.stdout).toMatch(/^alsoBroken {2}failed \(start_failed\): /m)
    expect(none.stderr).toContain("no MCP server started (2 failed)")
  }, 60_000)

  // A tool whose input schema no vendor takes made every model request of the session fail (400).
  it("a tool whose input schema is not a JSON Schema is left out: a session says so on stderr, mcp list beside the tools offered", async () => {
    const p = project("list-invalid-schema", [])
    const config = join(p.root, "mcp.json")
    writeFileSync(config, JSON.stringify({ mcpServers: { listing: { command: process.execPath, args: [resolve(import.meta.dirname, "../fixtures/mcp/listing.mjs")] } } }))
    const listed = await cli(p, ["mcp", "list", "--mcp-config", config])
    expect(listed.code, listed.stderr).toBe(0)
    const lines = listed.stdout.trim().split("\n")
    expect(lines[0]).toMatch(/^listing {2}5 tools {2}~\d+ tokens$/)
    expect(lines).toContainEqual(expect.stringMatching(/^ {2}mcp__listing__any {2}left out: its input schema is not a valid JSON Schema \(schema is invalid: /))
    expect(lines).toContainEqual(expect.stringMatching(/^ {2}mcp__listing__missing_ref {2}left out: its input schema is not a valid JSON Schema \(its \$ref "#\/definitions\/missing" leads nowhere in the schema\)$/))
    const run = await runIn(p, ["--mcp-config", config])
    expect(run.code, run.stderr).toBe(0)
    expect(run.stderr).toContain(`effect-agent: MCP server "listing": its tool "any" is left out: its input schema is not a valid JSON Schema (`)
    expect(run.stderr).toMatch(/its tool "missing_ref" is left out: .*; the server's other tools are offered\n/)
  }, 60_000)

  it("mcp list: a hosted server's key in its URL's path is never printed, though the server echoes the path in its error", async () => {
    const p = project("list-path-key", [])
    // Answers every request 404, naming the path it was asked for, as many servers' error pages do.
    const server = createServer((request, response) => response.writeHead(404, { "content-type": "text/plain" }).end(`no route for ${request.url}`))
    await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok))
    try {
      const { port } = server.address() as AddressInfo
      const config = join(p.root, "hosted.json")
      writeFileSync(config, JSON.stringify({ mcpServers: { hosted: { url: `http://127.0.0.1:${port}/u/sk-live-abc123def456/sse` } } }))
      const listed = await cli(p, ["mcp", "list", "--mcp-config", config])
      expect(listed.stdout).toMatch(/^hosted {2}failed \(/m)
      expect(listed.stdout + listed.stderr).not.toContain("abc123def456")
    } finally {
      await new Promise((ok) => server.close(ok))
    }
  }, 60_000)

  it("export-script carries the MCP server's tools and answers: run --script replays the session with no server started", async () => {
    const p = project("cassette", [{ tool: "mcp__fixture__echo", args: { text: "recorded" } }])
    const config = join(p.root, "mcp.json")
    writeFileSync(config, JSON.stringify(serversFile(p)))
    const recorded = await runIn(p, ["--mcp-config", config, "--allow", "mcp__fixture__echo"])
    expect(recorded.code, recorded.stderr).toBe(0)
    expect(starts(p)).toBe(1)
    const sessionId = /session (sess_\S+)/.exec(recorded.stderr)![1]!
    const exported = await cli(p, ["export-script", sessionId, "--data-dir", p.dataDir])
    expect(exported.code, exported.stderr).toBe(0)
    const cassette = join(p.root, "cassette.json")
    writeFileSync(cassette, exported.stdout)
    expect(Object.keys(JSON.parse(exported.stdout).mcp)).toEqual(["fixture"])

    // No --mcp-config, another data dir: the cassette answers for the server.
    const replayDir = join(p.root, "replay")
    const replayed = await cli(p, ["run", "go", "--script", cassette, "--data-dir", replayDir, "--allow", "mcp__fixture__echo"])
    expect(replayed.code, replayed.stderr).toBe(0)
    expect(replayed.stderr).toContain("MCP servers answered from the script's recording (fixture); no server is started.")
    expect(starts(p)).toBe(1)
    const eventsOf = async (dataDir: string, stderr: string) => {
      const id = /session (sess_\S+)/.exec(stderr)![1]!
      const log = (await cli(p, ["replay", id, "--json", "--data-dir", dataDir])).stdout
      return log.trim().split("\n").map((line) => JSON.parse(line)).map((e: { type: string; payload: unknown }) => [e.type, e.payload])
    }
    const original = await eventsOf(p.dataDir, recorded.stderr)
    expect(JSON.stringify(original)).toContain("echo: recorded")
    expect(await eventsOf(replayDir, replayed.stderr)).toEqual(original)
  }, 120_000)

  it("the user's own mcp.json starts its servers", async () => {
    const p = project("user", [{ tool: "mcp__fixture__add", args: { a: 20, b: 22 } }])
    writeFileSync(join(p.config, "mcp.json"), JSON.stringify(serversFile(p)))
    const done = await runIn(p, ["--allow", "mcp__fixture__*"])
    expect(done.code, done.stderr).toBe(0)
    expect(await logOf(p, done.stderr)).toContain("\"result\":\"42\"")
  }, 60_000)

  it("an untrusted .mcp.json starts nothing (no process is spawned); once trusted it does; a changed file is untrusted again", async () => {
    const p = project("project", [{ tool: "mcp__fixture__echo", args: { text: "trusted" } }])
    writeFileSync(join(p.cwd, ".mcp.json"), JSON.stringify(serversFile(p)))
    const untrusted = await runIn(p, ["--allow", "mcp__fixture__*"])
    expect(untrusted.stderr).toContain(".mcp.json is not trusted, so its MCP server (fixture) was not started; review and trust it with: effect-agent trust")
    expect(starts(p)).toBe(0)
    expect(await logOf(p, untrusted.stderr)).toContain("\"errorCode\":\"unknown_tool\"")

    const review = await cli(p, ["trust"])
    expect(review.stdout).toContain(`fixture: runs ${JSON.stringify(`${process.execPath} ${serverScript}`)} with MARKER_DIR set`)
    expect(starts(p)).toBe(0)
    const trusted = await cli(p, ["trust", "--yes"])
    expect(trusted.code, trusted.stderr).toBe(0)
    allowProjectServer(p, "mcp__fixture__*")
    const run = await runIn(p)
    expect(run.code, run.stderr).toBe(0)
    expect(await logOf(p, run.stderr)).toContain("\"result\":\"echo: trusted\"")
    expect(starts(p)).toBe(1)

    // One more server in the file: the whole file is untrusted again, and nothing of it starts.
    writeFileSync(join(p.cwd, ".mcp.json"), JSON.stringify({ mcpServers: { ...serversFile(p).mcpServers, other: { command: process.execPath, args: [serverScript], env: { MARKER_DIR: p.markers } } } }))
    const changed = await runIn(p, ["--allow", "mcp__fixture__*"])
    expect(changed.stderr).toContain("(it changed since you trusted it)")
    expect(starts(p)).toBe(1)
  }, 120_000)
})

describe("a project's MCP server cannot borrow the user's rule for another server", () => {
  // `--allow 'mcp__fixture__*'` is the user's word for the server they named "fixture". A trusted
  // .mcp.json may start servers whose tools still ask; one named "fixture_" had tools named
  // `mcp__fixture___echo`, which that rule's prefix matched, so its calls ran without asking.
  it("a server named like another's plus '_' is refused with one line; nothing starts and its tool never runs under the other's rule", async () => {
    const p = project("prefix", [{ tool: "mcp__fixture___echo", args: { text: "smuggled" } }])
    writeFileSync(join(p.config, "mcp.json"), JSON.stringify(serversFile(p)))
    writeFileSync(join(p.cwd, ".mcp.json"), JSON.stringify({ mcpServers: { fixture_: serversFile(p).mcpServers.fixture } }))
    await cli(p, ["trust", "--yes"])
    const done = await runIn(p, ["--allow", "mcp__fixture__*"])
    // Before: both servers started and the call ran, `permission.resolved {allow, "--allow mcp__fixture__*"}`.
    expect(done.stderr).toContain(".mcp.json: mcpServers.fixture_: a server's name is 1 to 40 letters, digits, _ or - (no __, not ending in _)")
    expect(done.code).toBe(1)
    expect(starts(p)).toBe(0)
    expect(await logOf(p, done.stderr)).not.toContain("echo: smuggled")
  }, 120_000)
})

describe("your own MCP servers do not start in the repository", () => {
  // The docs' own example, `npx -y @modelcontextprotocol/server-github` in your mcp.json, started in
  // the session's cwd: npx runs a package the project has in node_modules/.bin, so a clone that
  // ships one ran its code, as you, outside the sandbox, before any question — without your trusting
  // anything (python -m, a relative PATH entry, uvx's project config do the same).
  it("a server of your mcp.json launched by npx does not run a package the repository ships", async () => {
    const p = project("own-folder", [])
    const pkg = join(p.cwd, "node_modules", "@effect-agent-test", "mcp-server")
    mkdirSync(pkg, { recursive: true })
    mkdirSync(join(p.cwd, "node_modules", ".bin"))
    writeFileSync(join(p.cwd, "package.json"), JSON.stringify({ name: "clone", dependencies: { "@effect-agent-test/mcp-server": "*" } }))
    writeFileSync(join(pkg, "package.json"), JSON.stringify({ name: "@effect-agent-test/mcp-server", version: "1.0.0", bin: { "mcp-server": "index.js" } }))
    writeFileSync(join(pkg, "index.js"), `#!${process.execPath}\nrequire("node:fs").writeFileSync(require("node:path").join(process.env.MARKER_DIR, "repository-code-ran"), "")\n`)
    chmodSync(join(pkg, "index.js"), 0o755)
    symlinkSync("../@effect-agent-test/mcp-server/index.js", join(p.cwd, "node_modules", ".bin", "mcp-server"))
    const npx = join(dirname(process.execPath), "npx")
    // Offline: where the package is not the project's, npx fails at once instead of asking a registry.
    const server = { command: existsSync(npx) ? npx : "npx", args: ["-y", "@effect-agent-test/mcp-server"], env: { MARKER_DIR: p.markers, npm_config_offline: "true" } }
    writeFileSync(join(p.config, "mcp.json"), JSON.stringify({ mcpServers: { gh: server } }))
    const done = await runIn(p)
    expect(existsSync(join(p.markers, "repository-code-ran")), done.stderr).toBe(false)
    expect(done.stderr).toContain("MCP server \"gh\" did not start")
  }, 120_000)

  it("a server of your mcp.json starts in your config folder; one of --mcp-config's in that file's folder; a trusted project's in the project", async () => {
    const p = project("folders", [])
    const script = { responses: [{ toolCalls: [{ tool: "mcp__fixture__env", args: { name: "PWD" } }, { tool: "mcp__flagged__env", args: { name: "PWD" } }, { tool: "mcp__project__env", args: { name: "PWD" } }] }, { chunks: ["done"] }] }
    writeFileSync(p.script, JSON.stringify(script))
    const fixture = serversFile(p).mcpServers.fixture
    writeFileSync(join(p.config, "mcp.json"), JSON.stringify({ mcpServers: { fixture } }))
    const flagFolder = join(p.root, "flag-folder")
    mkdirSync(flagFolder)
    writeFileSync(join(flagFolder, "mcp.json"), JSON.stringify({ mcpServers: { flagged: fixture } }))
    writeFileSync(join(p.cwd, ".mcp.json"), JSON.stringify({ mcpServers: { project: fixture } }))
    await cli(p, ["trust", "--yes"])
    allowProjectServer(p, "mcp__project__*")
    const done = await runIn(p, ["--mcp-config", join(flagFolder, "mcp.json"), "--allow", "mcp__fixture__*", "--allow", "mcp__flagged__*"])
    expect(done.code, done.stderr).toBe(0)
    // The calls run together: their results are matched by call, not by order.
    const completed = (await logOf(p, done.stderr)).split("\n").filter((line) => line.includes("\"type\":\"tool.completed\"")).map((line) => JSON.parse(line).payload)
    expect(Object.fromEntries(completed.map((c: { toolCallId: string; result: string }) => [c.toolCallId, c.result]))).toEqual({
      call_1: `PWD=${p.config}`,
      call_2: `PWD=${flagFolder}`,
      call_3: `PWD=${p.cwd}`
    })
  }, 120_000)
})

describe("your rule for an MCP server does not cover a project's server of the same name", () => {
  // `mcp__fixture__*` in your settings is your word for a server of yours named "fixture". A trusted
  // .mcp.json naming its own server "fixture" got its tools allowed by that rule without asking,
  // while the trust summary said "its tools still ask before they run".
  it("a trusted .mcp.json's server named like one your rule allows: its call asks", async () => {
    const p = project("shadow", [{ tool: "mcp__fixture__echo", args: { text: "borrowed" } }])
    writeFileSync(join(p.config, "settings.json"), JSON.stringify({ rules: [{ decision: "allow", tool: "mcp__fixture__*" }] }))
    writeFileSync(join(p.cwd, ".mcp.json"), JSON.stringify(serversFile(p)))
    expect((await cli(p, ["trust", "--yes"])).code).toBe(0)
    const done = await runIn(p)
    expect(starts(p)).toBe(1)
    const log = await logOf(p, done.stderr)
    // Before: `permission.resolved {allow}` by the user's rule, and the call ran.
    expect(log).not.toContain("echo: borrowed")
    expect(log).toContain("\"type\":\"permission.requested\"")

    // A rule that says it is for the project's server allows it; it does not cover a server of yours named so.
    allowProjectServer(p, "mcp__fixture__*")
    const allowed = await runIn(p)
    expect(await logOf(p, allowed.stderr)).toContain("\"result\":\"echo: borrowed\"")
    writeFileSync(join(p.config, "mcp.json"), JSON.stringify(serversFile(p)))
    const yours = await runIn(p)
    expect(await logOf(p, yours.stderr)).not.toContain("echo: borrowed")
  }, 120_000)
})
