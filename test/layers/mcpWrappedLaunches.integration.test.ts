/**
 * Review 65a: files a trusted project's server runs that trust did not bind — changed (or made) after
 * trust, the server still started and ran them: a python module through `env`/`uv run` or after a
 * cluster (`-Bm`, `-mx`), a Makefile of `make -C`, a package node preloads by name, a launcher's bin
 * behind `env`/`corepack`, a joined `-Cdir`. And an `env` whose loader variables (`PYTHONPATH`,
 * `NODE_PATH`, …) point into the project: refused, since what they load cannot be bound.
 */
import { afterAll, describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as McpConfig from "../../src/layers/mcp/McpConfig.js"
import * as McpSettings from "../../src/layers/mcp/McpSettings.js"
import { outsideTmp } from "../tmp.js"
import { run, trustedProjects } from "./mcpTrustedProject.js"

const root = realpathSync(mkdtempSync(join(outsideTmp(), "review65a-")))
afterAll(() => rmSync(root, { recursive: true, force: true }))
const trusted = trustedProjects(root)

describe("review65a: files a trusted server runs through wrappers and options", () => {
  it("control: python3 -m tools.server, changing tools/server.py untrusts it", async () => {
    const at = await trusted({ command: "python3", args: ["-m", "tools.server"] }, { "tools/server.py": "1\n", "tools/__init__.py": "" })
    writeFileSync(join(at.cwd, "tools/server.py"), "2\n")
    expect(await at.starts()).toBe(false)
  })
  for (const [server, file, seed] of [
    [{ command: "env", args: ["python3", "-m", "tools.server"] }, "tools/server.py", { "tools/__init__.py": "" }],
    [{ command: "uv", args: ["run", "python", "-m", "tools.server"] }, "tools/server.py", { "tools/__init__.py": "" }],
    [{ command: "uv", args: ["run", "-m", "tools.server"] }, "tools/server.py", { "tools/__init__.py": "" }],
    [{ command: "poetry", args: ["run", "python3", "-Bm", "tools.server"] }, "tools/server.py", { "tools/__init__.py": "" }],
    [{ command: "python3", args: ["-mtools.server"] }, "tools/server.py", { "tools/__init__.py": "" }],
    [{ command: "python3", args: ["-Bm", "tools.server"] }, "tools/server.py", { "tools/__init__.py": "" }],
    [{ command: "python3", args: ["-um", "tools.server"] }, "tools/server.py", { "tools/__init__.py": "" }],
    [{ command: "make", args: ["-C", "tools", "mcp"] }, "tools/Makefile", {}],
    [{ command: "make", args: ["--directory=tools", "mcp"] }, "tools/Makefile", {}],
    [{ command: "make", args: ["-Ctools", "mcp"] }, "tools/Makefile", {}],
    [{ command: "sh", args: ["-c", "make -C tools mcp"] }, "tools/Makefile", {}],
    [{ command: "node", args: ["-r", "hook", "server.js"] }, "node_modules/hook/index.js", { "server.js": "1\n" }],
    [{ command: "node", args: ["--import=@scope/hook", "server.js"] }, "node_modules/@scope/hook/index.js", { "server.js": "1\n" }],
    [{ command: "node", args: ["server.js"], env: { NODE_OPTIONS: "--require hook" } }, "node_modules/hook/index.js", { "server.js": "1\n" }],
    [{ command: "node", args: ["server.js"], env: { NODE_OPTIONS: "--import=hook" } }, "node_modules/hook/index.js", { "server.js": "1\n" }],
    [{ command: "node", args: ["-r", "hook", "server.js"] }, "node_modules/hook/lib/main.js", { "server.js": "1\n", "node_modules/hook/package.json": "{\"exports\": {\".\": {\"require\": \"./lib/main.js\"}}}" }],
    [{ command: "pnpm", args: ["-Ctools", "exec", "mcp-server"] }, "tools/node_modules/.bin/mcp-server", { "tools/package.json": "{}" }],
    [{ command: "poetry", args: ["-Ctools", "run", "mcp-server"] }, "tools/.venv/bin/mcp-server", { "tools/pyproject.toml": "" }],
    [{ command: "env", args: ["pnpm", "exec", "mcp-server"] }, "node_modules/.bin/mcp-server", {}],
    [{ command: "env", args: ["FOO=1", "pnpm", "exec", "mcp-server"] }, "node_modules/.bin/mcp-server", {}],
    [{ command: "corepack", args: ["pnpm", "exec", "mcp-server"] }, "node_modules/.bin/mcp-server", {}],
    [{ command: "env", args: ["npx", "mcp-server"] }, "node_modules/.bin/mcp-server", {}]
  ] as const) {
    it(`${server.command} ${server.args.join(" ")}${"env" in server ? " " + JSON.stringify(server.env) : ""}: changing ${file} untrusts it`, async () => {
      const at = await trusted(server, { [file]: "#!/bin/sh\necho ok\n", ...seed })
      writeFileSync(join(at.cwd, file), "#!/bin/sh\ntouch /tmp/pwned\n")
      expect(await at.starts()).toBe(false)
    })
  }
})

describe("review65a: loader variables naming the project's folders", () => {
  let count = 0
  const inspect = async (server: Record<string, unknown>) => {
    const at = join(root, "loaders", `case-${++count}`)
    mkdirSync(join(at, "repo", "pylib"), { recursive: true })
    mkdirSync(join(at, "config"))
    writeFileSync(join(at, "repo", "server.py"), "print(1)\n")
    writeFileSync(join(at, "repo", ".mcp.json"), JSON.stringify({ mcpServers: { x: server } }))
    return { repo: join(at, "repo"), inspected: await run(Effect.either(McpSettings.inspect(join(at, "repo"), join(at, "config")))) }
  }
  for (const [variable, value] of [
    ["PYTHONPATH", "pylib"],
    ["PYTHONPATH", "."],
    ["PYTHONPATH", "/opt/lib:"],
    ["PYTHONHOME", "./venv"],
    ["NODE_PATH", "lib"],
    ["LD_PRELOAD", "./hook.so"],
    ["LD_LIBRARY_PATH", "/usr/lib:lib"],
    ["PERL5LIB", "lib"],
    ["RUBYLIB", "lib"]
  ] as const) {
    it(`${variable}=${JSON.stringify(value)}: trust refuses the server, naming the variable`, async () => {
      const { inspected } = await inspect({ command: "python3", args: ["server.py"], env: { [variable]: value } })
      expect(Either.isLeft(inspected) && inspected.left.message).toContain(`its server "x" sets ${variable} to a folder or file of the project`)
    })
  }
  it("an absolute path into the project is refused too; one outside it is not, and the summary shows it", async () => {
    const { inspected } = await inspect({ command: "python3", args: ["server.py"], env: { PYTHONPATH: join(root, "loaders", `case-${count + 1}`, "repo", "pylib") } })
    expect(Either.isLeft(inspected) && inspected.left.message).toContain(`sets PYTHONPATH to a folder or file of the project`)
    const outside = await inspect({ command: "python3", args: ["server.py"], env: { PYTHONPATH: "/opt/lib", LD_PRELOAD: "libfast.so", API_KEY: "sk-live-abcdef123456" } })
    expect(Either.isRight(outside.inspected)).toBe(true)
    expect(McpConfig.describe("x", { command: "python3", args: ["server.py"], env: { PYTHONPATH: "/opt/lib", API_KEY: "sk-live-abcdef123456" } }))
      .toBe(`x: runs "python3 server.py" with PYTHONPATH="/opt/lib", API_KEY set`)
  })
})
