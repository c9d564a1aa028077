import * as NodeContext from "@effect/platform-node/NodeContext"
import { expect, layer } from "@effect/vitest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { existsSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as McpConnection from "../../src/layers/mcp/McpConnection.js"
import { tempDir } from "../helpers.js"

const fixture = (name: string) => new URL(`../fixtures/mcp/${name}`, import.meta.url).pathname
const connection = (cwd: string, server: { command: string; args: Array<string>; env?: Record<string, string> }) =>
  McpConnection.make({ name: "x", server, cwd, prefix: [], connectTimeout: Duration.seconds(60), callTimeout: Duration.seconds(60) })

layer(NodeContext.layer)("review64a: python -m forms that startsFromFolder misses", (it) => {
  for (const [command, args] of [
    ["python3", ["-W", "ignore", "-m", "mcp63fixture"]],
    ["python3", ["-X", "utf8", "-m", "mcp63fixture"]],
    ["python3", ["-Bm", "mcp63fixture"]],
    ["/usr/bin/env", ["python3", "-m", "mcp63fixture"]]
  ] as const) {
    it.scoped(`${command} ${args.join(" ")}: json.py at the root is not imported`, () =>
      Effect.gen(function*() {
        const cwd = yield* tempDir
        const marker = join(cwd, "shadow-ran")
        writeFileSync(join(cwd, "json.py"), `open(${JSON.stringify(marker)}, "w").write("ran")\nraise SystemExit(3)\n`)
        const conn = yield* connection(cwd, { command, args: [...args], env: { PYTHONPATH: fixture("py") } })
        yield* Effect.either(conn.listTools)
        yield* conn.close
        expect(existsSync(marker)).toBe(false)
      }), 120_000)
  }
})

// mend65trust item 2: `env -i` (`-`, `--ignore-environment`, `-u PYTHONSAFEPATH`) cleared the
// PYTHONSAFEPATH the server was given, and python put the project first on `sys.path` again.
layer(NodeContext.layer)("mend65trust: env clearing PYTHONSAFEPATH", (it) => {
  const py = fixture("py")
  for (const args of [
    ["-i", "PATH=/usr/bin:/bin", `PYTHONPATH=${py}`, "python3", "-m", "mcp63fixture"],
    ["-", "PATH=/usr/bin:/bin", `PYTHONPATH=${py}`, "python3", "-m", "mcp63fixture"],
    ["--ignore-environment", `PYTHONPATH=${py}`, "/usr/bin/python3", "-m", "mcp63fixture"],
    ["-u", "PYTHONSAFEPATH", "python3", "-m", "mcp63fixture"],
    ["--unset=PYTHONSAFEPATH", "python3", "-m", "mcp63fixture"],
    ["-uPYTHONSAFEPATH", "-i", `PYTHONPATH=${py}`, "/usr/bin/python3", "-m", "mcp63fixture"]
  ]) {
    it.scoped(`env ${args.join(" ")}: json.py at the root is not imported`, () =>
      Effect.gen(function*() {
        const cwd = yield* tempDir
        const marker = join(cwd, "shadow-ran")
        writeFileSync(join(cwd, "json.py"), `open(${JSON.stringify(marker)}, "w").write("ran")\nraise SystemExit(3)\n`)
        const conn = yield* connection(cwd, { command: "/usr/bin/env", args, env: { PYTHONPATH: py, PATH: "/usr/bin:/bin" } })
        const listed = yield* Effect.either(conn.listTools)
        yield* conn.close
        expect(existsSync(marker)).toBe(false)
        // The server itself ran: python found its module, not the shadow.
        expect(listed._tag).toBe("Right")
      }), 120_000)
  }
})
