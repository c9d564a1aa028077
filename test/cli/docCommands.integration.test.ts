/**
 * Every command README.md and docs/*.md show a user, run as written against the built CLI: the lines
 * of each `sh` block and each `$ ` transcript (test/docCommands.ts reads them), in `sh`, in a fresh
 * folder (its own data dir and config folder) per block, with `effect-agent` on the PATH and
 * `npm run agent --` as the `node dist/cli/bin.js` it runs. Each line must exit as the docs say (0
 * unless a plan below says otherwise) and print and write what they say. A block no plan names
 * fails: a new command in the docs gets a plan, or a commented entry in `cannotRunHere`.
 *
 * Placeholders are filled the way a reader would: `<id>` the session the block started (or its
 * setup did), `<sequence>` the end of that session's first turn, `[--flag …]` given. Then the
 * static half: every `--help` against docs/cli.md, and every flag a doc gives a command (in a block,
 * inline, or "(on `run`, `chat` …)") on that command's `--help`.
 */
import { spawn, spawnSync } from "node:child_process"
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  asInstalled,
  type Block,
  blocksOf,
  commandBlocks,
  commandLines,
  flagsOf,
  inlineSpans,
  invocations,
  pages,
  read,
  root
} from "../docCommands.js"
import * as WireServer from "../layers/WireServer.js"
import { ownedByTest } from "../processes.js"
import { binPath, cliOnPath, folders, run, sessionIdIn, testCodeCacheDir } from "./subprocess.js"

const { folder } = folders("doc-commands")

interface Outcome {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** A block's folder, environment and what its lines have shown so far. */
interface Context {
  readonly cwd: string
  readonly env: Record<string, string>
  sessionId?: string | undefined
  /** Texts of the block replaced before it runs (a port, a token, `…`), in order. */
  readonly replace: Array<readonly [string, string]>
}

/**
 * `line` in `sh` in `cwd`, stdin at its end (as `</dev/null`). With `until`, once stdout or stderr
 * matches it, the line's process group gets SIGINT — Ctrl+C at a terminal — and the line ends.
 */
const shell = (line: string, context: Context, until?: RegExp) =>
  new Promise<Outcome>((done) => {
    const child = ownedByTest(
      spawn("sh", ["-c", line], { cwd: context.cwd, env: context.env, detached: true, stdio: ["ignore", "pipe", "pipe"] }),
      { detached: true }
    )
    let stdout = ""
    let stderr = ""
    let interrupted = false
    const seen = () => {
      if (until !== undefined && !interrupted && until.test(stdout + stderr)) {
        interrupted = true
        process.kill(-child.pid!, "SIGINT")
      }
    }
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      stdout += chunk
      seen()
    })
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk
      seen()
    })
    child.on("close", (code, signal) => done({ code: code ?? (signal === "SIGINT" ? 130 : null), stdout, stderr }))
  })

const newContext = (label: string): Context => {
  const cwd = folder(label)
  const env: Record<string, string> = {}
  for (const [key, value] of Object.entries(process.env)) if (value !== undefined) env[key] = value
  for (const key of ["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "EFFECT_AGENT_TOKEN"]) delete env[key]
  Object.assign(env, {
    PATH: `${cliOnPath()}:${process.env.PATH ?? ""}`,
    EFFECT_AGENT_CONFIG_DIR: mkdtempSync(join(tmpdir(), "effect-agent-config-")),
    EFFECT_AGENT_CODE_CACHE_DIR: testCodeCacheDir,
    NODE_OPTIONS: ""
  })
  return { cwd, env, replace: [] }
}

/** The sequence of the first `turn.completed` of the context's session (its JSONL log in the default data dir). */
const firstTurnEnd = (context: Context): string => {
  const log = readFileSync(join(context.cwd, ".effect-agent", "sessions", `${context.sessionId}.jsonl`), "utf8")
  const end = log.split("\n").filter((line) => line !== "").map((line) => JSON.parse(line)).find((event) => event.type === "turn.completed")
  return String(end.sequence)
}

/** A documented line as the reader types it: placeholders filled, optional flags given. */
const filled = (line: string, context: Context): string => {
  let text = asInstalled(line).replace(/\[(--[^\]]*)\]/g, "$1")
  for (const [from, to] of context.replace) text = text.split(from).join(to)
  if (text.includes("<id>")) {
    if (context.sessionId === undefined) throw new Error(`no session for <id> yet: ${line}`)
    text = text.replace(/<id>/g, context.sessionId)
  }
  if (text.includes("<sequence>")) text = text.replace(/<sequence>/g, firstTurnEnd(context))
  // At a terminal jq writes each result as it comes; into a pipe (the test's) it would keep them
  // until it ends, and a `watch … | jq` is only ended by Ctrl+C once its output shows.
  return text.replace(/\| jq /g, "| jq --unbuffered ")
}

/** The documented shape of a transcript's output line: `…` any text. */
const shapeOf = (line: string, context: Context): RegExp => {
  let text = line
  for (const [from, to] of context.replace) text = text.split(from).join(to)
  return new RegExp(`^${text.split("…").map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join(".*")}$`, "m")
}

/** What one line must do; a line no entry names must exit 0. */
interface LineExpectation {
  /** A text of the line, as the docs write it: which line this is. */
  readonly line: string
  readonly code?: number
  readonly stdout?: RegExp
  readonly stderr?: RegExp
  /** A long-running command: Ctrl+C once its output matches this. */
  readonly until?: RegExp
  /** More checks, once the line has run. */
  readonly then?: (outcome: Outcome, context: Context) => void
}

interface Plan {
  readonly page: string
  /** A text of the block: which block this plan is for. */
  readonly holds: string
  /** Files, sessions, servers and replacements the block needs, in its folder. */
  readonly setup?: (context: Context) => Promise<void> | void
  /** Lines this machine cannot run, by a text of theirs, and why. */
  readonly skip?: ReadonlyArray<readonly [string, string]>
  /** Run as one script: its lines share shell variables. */
  readonly whole?: LineExpectation
  readonly lines?: ReadonlyArray<LineExpectation>
  /** Checks once the block has run (a server stopped, a file written). */
  readonly after?: (context: Context) => Promise<void> | void
}

/** A session in `context.cwd`, started by a real run of the CLI (so it is the user's). */
const startSession = async (context: Context, message: string, args: ReadonlyArray<string> = []) => {
  const started = await run(["run", message, ...args], { cwd: context.cwd, env: context.env })
  expect(started.code, started.stderr).toBe(0)
  context.sessionId = sessionIdIn(started.stderr)
}

const json = (text: string) => JSON.parse(text) as any

/** What a serve started by `serve` printed: its port and token. */
const serveBanner = /listening on http:\/\/127\.0\.0\.1:(\d+)[\s\S]*token: (\S+)[\s\S]*viewer \(this URL works once/

// Blocks that cannot run in a test, whole or some of their lines: each says why. Their flags are
// still checked against `--help` below.
const cannotRunHere: ReadonlyArray<readonly [page: string, holds: string, why: string]> = [
  // `npm pack` and installing the tarball with its peers from the registry: test/package does both, offline.
  ["README.md", "npm pack", "test/package packs this repository and installs the tarball"],
  ["docs/embedding.md", "npm pack", "test/package packs this repository and installs the tarball"],
  // `npm link` installs into the machine's global npm folder; `~/src/…` are the reader's folders.
  ["README.md", "npm link", "changes the machine's global npm folder (test/package runs the packed bin)"],
  // Packages from the registry.
  ["docs/embedding.md", "@effect/opentelemetry", "installs from the npm registry"],
  ["docs/testing.md", "npm install -D vitest", "installs from the npm registry"],
  // This repository's own suite: running it here would run this test again. `staticRepositoryCommands`
  // checks the scripts, files, test names and projects these lines name.
  ["docs/testing.md", "npm run test:unit", "runs this test suite"],
  // A cluster needs PostgreSQL, several runners and (in two blocks) machines' addresses, a firewall
  // or a CA: test/cluster runs runners; the flags are checked against serve --help.
  ["docs/scaling.md", "--host 10.0.0.2", "a cluster of two machines on PostgreSQL"],
  ["docs/scaling.md", "--port 4478", "runners on PostgreSQL"],
  ["docs/scaling.md", "export EFFECT_AGENT_TOKEN=…\neffect-agent serve", "a runner on PostgreSQL at 10.0.0.1"],
  ["docs/scaling.md", "iptables", "changes the machine's firewall; a runner on PostgreSQL"],
  ["docs/scaling.md", "openssl ecparam", "a runner on PostgreSQL at 10.0.0.1 (test/cluster/runnerTls covers the certificates)"]
]

const servers = new WeakMap<Context, WireServer.WireServer>()
const serves = new WeakMap<Context, Serving>()

interface Serving {
  readonly port: string
  readonly token: string
  /** SIGTERM, then its exit code. */
  readonly stop: () => Promise<number | null>
}

/** `effect-agent serve --port 0` in the context's folder, once it listens. */
const serving = (context: Context) =>
  new Promise<Serving>((ready, failed) => {
    const child = ownedByTest(spawn(process.execPath, [binPath, "serve", "--port", "0"], { cwd: context.cwd, env: context.env, stdio: ["ignore", "ignore", "pipe"] }))
    const exited = new Promise<number | null>((done) => child.on("close", (code) => done(code)))
    let stderr = ""
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk
      const banner = serveBanner.exec(stderr)
      if (banner !== null) ready({ port: banner[1]!, token: banner[2]!, stop: () => (child.kill("SIGTERM"), exited) })
    })
    void exited.then(() => failed(new Error(`serve exited before it listened: ${stderr}`)))
  })

/** 4477, serve's default, may be taken on a machine running other suites: the block's serve gets any free port. */
const onAnyFreePort = (from: string, to: string) => (context: Context) => void context.replace.push([from, to])

/** `serve` in the foreground, ended by Ctrl+C once it listens: exit 130 (docs/cli.md). */
const servedUntilCtrlC: LineExpectation = { line: "serve", until: serveBanner, code: 130 }

const plans: ReadonlyArray<Plan> = [
  {
    page: "README.md",
    holds: "npm ci && npm run agent",
    skip: [["npm test", "runs this test suite"]],
    setup: (context) => {
      // The checkout is installed already: `npm ci` would reinstall it from the registry.
      context.replace.push(["npm ci && ", ""])
    },
    lines: [{ line: "Hello, agent", stdout: /^Echo: Hello, agent\n$/ }]
  },
  {
    page: "README.md",
    holds: "sessions --search repository",
    lines: [
      { line: "replay <id>", stdout: /> Explain this repository\n[\s\S]*> And the tests\?/ },
      { line: "sessions --search repository", stdout: /sess_\S+ .* 2 turns .*Explain this repository\n$/ }
    ]
  },
  { page: "README.md", holds: "npm run agent -- chat", lines: [{ line: "chat", stdout: /^$/ }] },
  {
    page: "README.md",
    holds: "npm run agent -- serve",
    setup: onAnyFreePort("effect-agent serve", "effect-agent serve --port 0"),
    lines: [servedUntilCtrlC]
  },
  {
    page: "README.md",
    holds: "--subagents --max-cost 0.50",
    lines: [{ line: "--subagents", stdout: /^Echo: Audit src\/ and docs\/ in parallel\n$/ }]
  },
  {
    page: "README.md",
    holds: "rewind <id> --to 12",
    // A session whose first turn ends at 12 (the echo model answers word by word) and whose second
    // writes notes.md: the rewind the README shows takes it back.
    setup: async (context) => {
      await startSession(context, "one two three four five six")
      writeFileSync(join(context.cwd, "..", "notes-script.json"), JSON.stringify({
        responses: [{ toolCalls: [{ tool: "write_file", args: { path: "docs/notes.md", content: "x\n" } }] }, { chunks: ["Wrote it"] }]
      }))
      mkdirSync(join(context.cwd, "docs"))
      const second = await run(["run", "Write the notes", "--session", context.sessionId!, "--script", "../notes-script.json", "--allow", "write_file"], {
        cwd: context.cwd,
        env: context.env
      })
      expect(second.code, second.stderr).toBe(0)
    },
    lines: [
      { line: "jq", stdout: /^\[12,"turn\.completed"\]$/m },
      {
        line: "rewind",
        stdout: /removed\s+docs\/notes\.md/,
        then: (_, context) => expect(existsSync(join(context.cwd, "docs", "notes.md"))).toBe(false)
      }
    ]
  },
  {
    page: "docs/cli.md",
    holds: "export-script <id> > cassette.json",
    setup: (context) => {
      copyFileSync(join(root, "fixtures/images/photo.png"), join(context.cwd, "shot.png"))
      context.replace.push(["<n>", "10"])
    },
    lines: [
      { line: "--image shot.png", stdout: /^Echo: What is wrong here\?\n\[image image\/png/ },
      {
        line: "--json > events.jsonl",
        then: (_, context) => {
          const events = readFileSync(join(context.cwd, "events.jsonl"), "utf8").trim().split("\n").map(json)
          expect(events.map((event) => event.type)).toContain("turn.completed")
        }
      },
      { line: "sessions rename", stdout: /^sess_\S+ {2}Parser refactor\n$/ },
      { line: "watch <id>  ", until: /Echo: And the tests\?/, code: 130, stdout: /^> Explain this repository\n/ },
      { line: "watch <id> --json | jq .type", until: /"turn\.completed"/, code: 130, stdout: /^"session\.created"\n/ },
      { line: "--follow-up", stdout: /Echo: Then this/ },
      { line: "fork <id>", stdout: /^sess_\S+\n$/ },
      { line: "rewind <id>", stdout: /^rewound sess_\S+ to #\d+/ },
      // `<n>`: a budget small enough that there is something to summarise (the rewind above left one turn).
      { line: "compact <id>", stdout: /Echo summary/ },
      {
        line: "export-script <id> > cassette.json",
        then: (_, context) => expect(json(readFileSync(join(context.cwd, "cassette.json"), "utf8")).responses.length).toBeGreaterThan(0)
      },
      { line: "repair <id>", stdout: /^Nothing to repair/ }
    ]
  },
  {
    page: "docs/cli.md",
    holds: "claude-sonnet-5-5",
    // The vendors' recorded streams stand in for them (test/layers/WireServer.ts): ANTHROPIC_BASE_URL
    // and OPENAI_BASE_URL point at it, and the Ollama line's address is its. `…` is a key: pasted as
    // it is, the CLI refuses it (docs/cli.md says so).
    setup: async (context) => {
      const server = await WireServer.start()
      afterAll(() => server.close())
      server.respond(WireServer.recording("anthropic", "text"), WireServer.recording("openai", "text"), WireServer.recording("openai", "text"))
      Object.assign(context.env, { ANTHROPIC_BASE_URL: server.url, OPENAI_BASE_URL: `${server.url}/v1` })
      context.replace.push(["_API_KEY=…", "_API_KEY=sk-docs-test"], ["http://localhost:11434", server.url])
      servers.set(context, server)
    },
    lines: [
      { line: "claude-sonnet-5-5", stderr: /answering with anthropic claude-sonnet-5-5/ },
      { line: "gpt-4.1-mini", stderr: /answering with openai gpt-4\.1-mini/ },
      { line: "llama3.1", stderr: /answering with openai llama3\.1 at http:\/\/127\.0\.0\.1:\d+\/v1/ }
    ],
    after: (context) => {
      const models = servers.get(context)!.received.map((request) => request.body?.model)
      expect(models).toEqual(["claude-sonnet-5-5", "gpt-4.1-mini", "llama3.1"])
    }
  },
  { page: "docs/cli.md", holds: "--deny 'shell:git push*'" },
  {
    page: "docs/cli.md",
    holds: "effect-agent trust --yes ",
    setup: (context) => {
      mkdirSync(join(context.cwd, ".effect-agent"))
      writeFileSync(join(context.cwd, ".effect-agent", "settings.json"), JSON.stringify({ mode: "acceptEdits" }))
    },
    lines: [
      // Without a terminal it shows the summary and trusts nothing (docs/settings.md).
      { line: "effect-agent trust  ", code: 1, stdout: /^sha256 [0-9a-f]{64}$/m },
      { line: "--yes", stderr: /trusted .*settings\.json/ },
      { line: "--list", stdout: /^trusted {2}\S+settings\.json {2}sha256:/ },
      { line: "--revoke", stderr: /no longer trusted/ }
    ]
  },
  {
    page: "docs/cli.md",
    holds: "adopt --all --yes",
    // A session another user's config folder recorded: a log that came with a repository.
    setup: async (context) => {
      const theirs = await run(["run", "hello"], { cwd: context.cwd, env: { ...context.env, EFFECT_AGENT_CONFIG_DIR: folder("their-config") } })
      expect(theirs.code, theirs.stderr).toBe(0)
      context.sessionId = sessionIdIn(theirs.stderr)
    },
    lines: [
      // Without a terminal it shows the session and adopts nothing.
      { line: "adopt <id>", code: 1, stdout: /^ {2}cwd {7}\S+/m },
      { line: "--all --yes", stderr: /adopted sess_/ }
    ]
  },
  {
    page: "docs/cli.md",
    holds: "--mcp-config mcp.json",
    // mcp.json names a server `github`: the suite's MCP fixture, not GitHub's (which needs a network).
    setup: (context) =>
      writeFileSync(
        join(context.cwd, "mcp.json"),
        JSON.stringify({ mcpServers: { github: { command: process.execPath, args: [resolve(root, "test/fixtures/mcp/server.mjs")] } } })
      ),
    lines: [{ line: "Triage issue 42", stderr: /⚙ MCP server github: \d+ tools/ }]
  },
  {
    page: "docs/cli.md",
    holds: "script.json",
    lines: [{
      line: "Write a.txt",
      stdout: /Wrote a\.txt/,
      then: (_, context) => expect(readFileSync(join(context.cwd, "a.txt"), "utf8")).toBe("one\n")
    }]
  },
  {
    page: "docs/scaling.md",
    holds: "touch \"$lock/$n.released\"",
    // A session whose lock another machine's process holds (a generation naming another host),
    // which the snippet marks released: then the next writer takes the lock.
    setup: async (context) => {
      await startSession(context, "hello")
      const lock = join(context.cwd, ".effect-agent", "sessions", `${context.sessionId}.jsonl.lock`)
      const last = Math.max(...readdirSync(lock).flatMap((name) => /^(\d+)\.json$/.exec(name)?.slice(1) ?? []).map(Number))
      const holder = { ...json(readFileSync(join(lock, `${last}.json`), "utf8")), hostname: "runner-gone", pid: 4242, bootId: "another machine's boot id" }
      writeFileSync(join(lock, `${last + 1}.json`), JSON.stringify(holder), { mode: 0o600 })
      const busy = await run(["run", "again", "--session", context.sessionId!], { cwd: context.cwd, env: context.env })
      expect(busy.code).toBe(1)
      expect(busy.stderr).toContain("runner-gone")
      context.replace.push(["sess_…", context.sessionId!])
    },
    whole: { line: "lock=", stdout: /^\{"pid":4242,"hostname":"runner-gone",.*"startedAt":/ },
    after: async (context) => {
      const again = await run(["run", "again", "--session", context.sessionId!], { cwd: context.cwd, env: context.env })
      expect(again.code, again.stderr).toBe(0)
    }
  },
  {
    page: "docs/server.md",
    holds: "serve [--port 4477]",
    setup: onAnyFreePort("4477", "0"),
    lines: [servedUntilCtrlC]
  },
  {
    page: "docs/server.md",
    holds: "$ npm run -s agent -- serve",
    setup: onAnyFreePort("effect-agent serve", "effect-agent serve --port 0"),
    lines: [{
      ...servedUntilCtrlC,
      // The transcript's lines, `…` any text and 4477 the port it got.
      then: (outcome, context) => {
        const port = serveBanner.exec(outcome.stderr)![1]!
        const transcript = blocksOf("docs/server.md").find((block) => block.text.startsWith("$ npm run -s agent -- serve"))!
        for (const line of transcript.text.split("\n").slice(1)) {
          expect(outcome.stderr).toMatch(shapeOf(line, { ...context, replace: [["4477", port], ["3q2-…", "…"]] }))
        }
      }
    }]
  },
  {
    page: "docs/server.md",
    holds: "T=<token>",
    setup: async (context) => {
      const serve = await serving(context)
      context.replace.push(["<token>", serve.token], ["127.0.0.1:4477", `127.0.0.1:${serve.port}`])
      serves.set(context, serve)
    },
    // The last line follows the session live: Ctrl+C once its turn has ended.
    whole: { line: "T=", until: /event: turn\.completed/, code: 130, stdout: /^\{"turnId":"turn_\S+"\}: connected\n[\s\S]*data: \{.*"text":/ },
    // SIGTERM stops it cleanly: exit 0 (docs/cli.md).
    after: async (context) => expect(await serves.get(context)!.stop()).toBe(0)
  },
  {
    page: "docs/settings.md",
    holds: "effect-agent trust ../other --yes",
    // The project of the page's example file, and another one beside it.
    setup: (context) => {
      const example = blocksOf("docs/settings.md").find((block) => block.lang === "json" && block.text.includes(`"name": "tests"`))!
      for (const project of [context.cwd, join(context.cwd, "..", "other")]) {
        mkdirSync(join(project, ".effect-agent"), { recursive: true })
        writeFileSync(join(project, ".effect-agent", "settings.json"), example.text)
      }
    },
    lines: [
      {
        line: "effect-agent trust  ",
        code: 1,
        // The page's screen, but its question: it is asked on a terminal only.
        then: (outcome, context) => {
          const screen = blocksOf("docs/settings.md").find((block) => block.text.startsWith("/home/me/src/app/"))!
          const lines = screen.text.split("\n").filter((line) => line !== "Trust this file? [y/N]:")
          const shape = { ...context, replace: [["/home/me/src/app", context.cwd], ["9c1e…", "…"]] as Array<readonly [string, string]> }
          expect(outcome.stdout.trimEnd().split("\n")).toHaveLength(lines.length)
          for (const line of lines) expect(outcome.stdout).toMatch(shapeOf(line, shape))
        }
      },
      { line: "../other --yes", stderr: /trusted \S+\/other\/\.effect-agent\/settings\.json/ },
      { line: "--list", stdout: /^trusted {2}\S+\/other\/\.effect-agent\/settings\.json {2}sha256:[0-9a-f]+ {2}\d{4}-/ },
      // This project's file was never trusted (../other's was): nothing to revoke, exit 1 (docs/cli.md).
      { line: "--revoke", code: 1, stderr: /was not trusted: nothing to revoke/ }
    ]
  }
]

const planOf = (block: Block) => plans.filter((plan) => plan.page === block.page && block.text.includes(plan.holds))
const skippedBlock = (block: Block) => cannotRunHere.find(([page, holds]) => page === block.page && block.text.includes(holds))
const blocks = commandBlocks()
const programs = new Map<string, boolean>()
const installed = (program: string) => {
  if (!programs.has(program)) programs.set(program, spawnSync("sh", ["-c", `command -v ${program}`], { stdio: "ignore" }).status === 0)
  return programs.get(program)!
}

describe("every command block of the docs", () => {
  it("has a plan here, or a reason it cannot run", () => {
    const unplanned = blocks
      .filter((block) => (planOf(block).length + (skippedBlock(block) === undefined ? 0 : 1)) !== 1)
      .map((block) => `${block.page}:${block.line}: ${block.text.split("\n")[0]}`)
    expect(unplanned).toEqual([])
  })

  it.each(
    blocks.filter((block) => skippedBlock(block) === undefined && planOf(block).length === 1).map((block) => [`${block.page}:${block.line}`, block] as const)
  )("%s runs as written", async (_, block) => {
    const plan = planOf(block)[0]!
    const context = newContext(block.page.replace(/\W/g, "-"))
    await plan.setup?.(context)
    const check = async (text: string, expectation: LineExpectation | undefined) => {
      const missing = ["jq", "curl"].filter((program) => new RegExp(`\\b${program} `).test(text) && !installed(program))
      if (missing.length > 0) return
      const line = filled(text, context)
      const outcome = await shell(line, context, expectation?.until)
      const label = `${block.page}:${block.line}: ${line}\n${outcome.stderr}`
      expect(outcome.code, label).toBe(expectation?.code ?? 0)
      if (expectation?.stdout !== undefined) expect(outcome.stdout, label).toMatch(expectation.stdout)
      if (expectation?.stderr !== undefined) expect(outcome.stderr, label).toMatch(expectation.stderr)
      expectation?.then?.(outcome, context)
      context.sessionId ??= sessionIdIn(outcome.stderr)
    }
    if (plan.whole !== undefined) {
      await check(commandLines(block).join("\n"), plan.whole)
    } else {
      for (const text of commandLines(block)) {
        if (plan.skip?.some(([holds]) => text.includes(holds))) continue
        const named = (plan.lines ?? []).filter((expectation) => text.includes(expectation.line))
        expect(named.length, `${text}: ${named.length} expectations match`).toBeLessThanOrEqual(1)
        await check(text, named[0])
      }
    }
    await plan.after?.(context)
  }, 120_000)
})

/** Flags every command takes without listing them (the root's overview names them). */
const globalFlags = ["-h", "--help", "--version", "--completions", "--log-level", "--wizard"]

/** Each command's `--help` (`""` the root's, `"sessions rename"` a subcommand's), and the flags its usage line names. */
const helps = new Map<string, { readonly text: string; readonly flags: ReadonlyArray<string>; readonly subcommands: ReadonlyArray<string> }>()

const section = (text: string, title: string) => new RegExp(`^${title}\\n\\n([\\s\\S]*?)(?=\\n[A-Z][A-Za-z ]*:?\\n\\n|(?![\\s\\S]))`, "m").exec(text)?.[1] ?? ""

const readHelp = async (command: string) => {
  const { code, stdout } = await run([...command.split(" ").filter((word) => word !== ""), "--help"])
  expect(code, command).toBe(0)
  const usage = section(stdout, "USAGE")
  helps.set(command, {
    text: stdout,
    flags: [...usage.matchAll(/(?<![\w-])(--?[a-z][a-z-]*)/g)].map((match) => match[1]!),
    subcommands: [...section(stdout, "COMMANDS").matchAll(/^ {2}(?:- )?([a-z][a-z-]*)/gm)].map((match) => match[1]!)
  })
}

/** What a documented invocation names that the CLI does not have: an unknown command, or a flag its `--help` does not list. */
const unknownIn = (words: ReadonlyArray<string>): Array<string> => {
  const top = helps.get("")!.subcommands
  const [first, second] = words
  if (first === undefined || first.startsWith("-")) {
    return flagsOf(words).filter((flag) => !globalFlags.includes(flag)).map((flag) => `effect-agent ${flag}`)
  }
  if (!top.includes(first)) return /^[a-z][a-z-]*$/.test(first) ? [`no command ${first}`] : []
  const command = second !== undefined && helps.get(first)!.subcommands.includes(second) ? `${first} ${second}` : first
  const flags = helps.get(command)!.flags
  return flagsOf(words).flatMap((flag) => flag.split("/")).filter((flag) => !flags.includes(flag) && !globalFlags.includes(flag))
    .map((flag) => `${command} has no ${flag}`)
}

describe("the CLI's --help and the docs", () => {
  beforeAll(async () => {
    await readHelp("")
    const commands = helps.get("")!.subcommands
    await Promise.all(commands.map(readHelp))
    await Promise.all(commands.flatMap((command) => helps.get(command)!.subcommands.map((sub) => readHelp(`${command} ${sub}`))))
  }, 120_000)

  it("docs/cli.md names every command, and every flag each command's --help lists", () => {
    const reference = read("docs/cli.md")
    const missing = [...helps].flatMap(([command, help]) => [
      ...(command === "" || new RegExp(`\\b${command}\\b`).test(reference) ? [] : [`command ${command}`]),
      ...help.flags.filter((flag) => flag.startsWith("--") && !new RegExp(`${flag}(?![\\w-])`).test(reference)).map((flag) => `${command || "(root)"} ${flag}`)
    ])
    expect([...new Set(missing)]).toEqual([])
  })

  it("every command and flag a doc shows (a block, an inline command) is the CLI's", () => {
    const bare = new RegExp(`^(?:${helps.get("")!.subcommands.join("|")}) .*--`)
    const shown = [
      ...blocks.flatMap((block) => commandLines(block).map((line) => ({ where: `${block.page}:${block.line}`, line }))),
      ...inlineSpans().map(({ page, span }) => ({ where: page, line: bare.test(span) ? `effect-agent ${span}` : span }))
    ]
    const unknown = shown.flatMap(({ where, line }) => invocations(line).flatMap(unknownIn).map((problem) => `${where}: ${line}: ${problem}`))
    expect([...new Set(unknown)]).toEqual([])
  })

  // "`--network` (on `run`, `chat`, `approve`, `deny`, `serve`, `acp`)", "`run`, `chat` … take `--subagents`".
  it("every \"(on `run`, `chat` …)\" a doc says of a flag holds: each of those commands lists it", () => {
    const claims = pagesProse().flatMap(({ page, prose }) => [
      ...[...prose.matchAll(flagsOnCommands)].map((match) => ({ page, flags: match[1]!, commands: match[2]! })),
      ...[...prose.matchAll(commandsTakeFlags)].map((match) => ({ page, flags: match[2]!, commands: match[1]! }))
    ])
    expect(claims.length).toBeGreaterThan(5)
    const wrong = claims.flatMap(({ page, flags, commands }) =>
      [...commands.matchAll(/`([a-z-]+)`/g)].flatMap(([, command]) =>
        [...flags.matchAll(/`(--[a-z-]+)/g)].flatMap(([, flag]) =>
          helps.get(command!)?.flags.includes(flag!) === true ? [] : [`${page}: ${command} ${flag}`]
        )
      )
    )
    expect(wrong).toEqual([])
  })

  it("every example of a command's --help names its flags", () => {
    const unknown = [...helps].flatMap(([command, { text }]) =>
      [...text.replace(/\n {4}(?=\S)/g, " ").matchAll(/^ {2}\$ (.+)$/gm)].flatMap(([, example]) =>
        invocations(example!).flatMap(unknownIn).map((problem) => `${command || "(root)"} --help: ${example}: ${problem}`)
      )
    )
    expect(unknown).toEqual([])
  })
})

// The lists of such a claim: items in backticks between separators. (A flag is `--name` and maybe a
// value after a space: a pattern that let `[a-z-]+` and `[^`]*` share a name's letters backtracked
// for minutes over a list of ten flags.)
const listOf = (item: string, separator: string) => `(${item}(?:(?:${separator})${item})*)`
const flagItem = "`--[a-z-]+(?: [^`]*)?`"
const commandItem = "`[a-z-]+`"
const flagsOnCommands = new RegExp(`${listOf(flagItem, ",? and |, | / ")}\\s*\\((?:on )?${listOf(commandItem, ", |,? and |/")}\\)`, "g")
const commandsTakeFlags = new RegExp(`${listOf(commandItem, ", |,? and |/")} take ${listOf(flagItem, ",? and |, ")}`, "g")

/** Each page's prose, its lines joined (a claim may wrap), code blocks left out. */
const pagesProse = () => pages.map((page) => ({ page, prose: read(page).replace(/^ *```[\s\S]*?^ *```/gm, "").replace(/\s*\n\s*/g, " ") }))

// Pages whose commands are other projects' (a repository's `npm run mcp`, a rule for `npm run deploy*`).
const aboutOtherProjects = ["docs/security.md", "docs/mcp.md", "docs/settings.md"]

describe("the repository's own commands the docs name", () => {
  const manifest = json(read("package.json"))

  it("npm run agent is the package's bin: node dist/cli/bin.js, and -s keeps npm's banner off stdout", async () => {
    expect(manifest.bin).toEqual({ "effect-agent": "./dist/cli/bin.js" })
    expect(manifest.scripts.agent).toBe("node dist/cli/bin.js")
    const npm = spawnSync("npm", ["run", "-s", "agent", "--", "--version"], { cwd: root, encoding: "utf8", env: { ...process.env, NODE_OPTIONS: "" } })
    expect(npm.status, npm.stderr).toBe(0)
    expect(npm.stdout).toBe(`${manifest.version}\n`)
  }, 120_000)

  // The lines `cannotRunHere` leaves out (this suite, the benchmarks): the scripts, files, test
  // names and projects they name exist.
  it("npm run / npx vitest / npx tsx name scripts, files, tests and projects that exist", () => {
    const lines = [
      ...blocks.flatMap((block) => commandLines(block).map((line) => ({ where: `${block.page}:${block.line}`, line }))),
      ...inlineSpans().map(({ page, span }) => ({ where: page, line: span }))
    ]
    const config = read("vitest.config.ts")
    const missing = lines.filter(({ where }) => !aboutOtherProjects.some((page) => where.startsWith(page))).flatMap(({ where, line }) => {
      const problems: Array<string> = []
      for (const [, script] of line.matchAll(/\bnpm run (?:-s )?([\w:-]+)/g)) if (manifest.scripts[script!] === undefined) problems.push(`no script ${script}`)
      for (const [, file] of line.matchAll(/\bnpx (?:vitest run|tsx) ([\w./-]+\.ts)\b/g)) if (!existsSync(join(root, file!))) problems.push(`no ${file}`)
      for (const [, file, name] of line.matchAll(/\bnpx vitest run ([\w./-]+) -t "([^"]+)"/g)) {
        if (existsSync(join(root, file!)) && !read(file!).includes(name!)) problems.push(`no test "${name}" in ${file}`)
      }
      for (const [, project] of line.matchAll(/--project (\w+)/g)) if (!config.includes(`name: "${project}"`)) problems.push(`no project ${project}`)
      return problems.map((problem) => `${where}: ${line}: ${problem}`)
    })
    expect(missing).toEqual([])
  })
})
