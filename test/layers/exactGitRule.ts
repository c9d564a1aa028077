/** The red-team git tests' common ground: a hostile `core.fsmonitor`, and the decision for a line under an exact allow rule for it. */
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as Effect from "effect/Effect"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import type { PermissionRequest } from "../../src/services/PermissionEngine.js"
import * as WorkspaceTools from "../../src/layers/WorkspaceTools.js"
import { execFile } from "node:child_process"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { existsSync } from "node:fs"
import { join } from "node:path"
import { promisify } from "node:util"
import { expect } from "@effect/vitest"

/** A config that makes every index refresh run a program: it leaves `fsmonitor-ran` in the folder git works in. */
export const fsmonitor = `[core]\n\tfsmonitor = "touch fsmonitor-ran; false"\n`

const tools = Effect.runSync(WorkspaceTools.make().pipe(Effect.provide(NodeContext.layer)))

/** The call `prepare` makes of `command` in `cwd`. */
export const prepared = (cwd: string, command: string) => Effect.runPromise(tools.prepare({ toolCallId: "c1", tool: "shell", args: { command } }, cwd))

/** The decision for `command` in `cwd` when the user's one rule allows exactly that line (and what "always" remembered). */
export const decide = async (cwd: string, command: string, remembered: PermissionRequest["remembered"] = []) => {
  const call = await prepared(cwd, command)
  return PermissionPolicy.decide({ rules: [{ name: "mine", tool: "shell", command, decision: "allow" }] }, { sessionId: "s", cwd, call, remembered })
}

/** What a line under its exact rule gets when the repository's git asks, and when the rule decides. */
export const asks = { decision: "ask", policy: "repository-git" }
export const mine = { decision: "allow", policy: "mine" }

/**
 * Checks over fresh folders `folder` makes: whether running a line with bash ran the hostile core.fsmonitor in `at`
 * (below cwd; not blocking, so a test's server answers meanwhile), and the exact rule's decision for it.
 */
export const lineChecks = (folder: () => string) => {
  const fires = async (cwd: string, line: string, at: string) => {
    await promisify(execFile)("/bin/bash", ["-c", line], { cwd }).catch(() => undefined)
    return existsSync(join(cwd, at, "fsmonitor-ran"))
  }
  const asks = async (line: string, at = ".", run = true) => {
    if (run) expect(await fires(folder(), line, at), `${line} runs the hostile fsmonitor`).toBe(true)
    expect((await decide(folder(), line)).decision, line).toBe("ask")
  }
  const allows = async (line: string) => expect((await decide(folder(), line)).decision, line).toBe("allow")
  return { fires, asks, allows }
}

/** Runs `use` with the URL of a server whose `/x` is a `.git` file (`Content-Disposition` names it) sending git to d1/d2/d3/ev's repository. */
export const servingGitdir = async (use: (url: string) => Promise<void>) => {
  const server = createServer((request, response) => {
    if (request.url === "/x") response.writeHead(200, { "content-disposition": `attachment; filename=".git"` }).end("gitdir: d1/d2/d3/ev/.git\n")
    else response.writeHead(404).end()
  })
  await new Promise<void>((listening) => server.listen(0, "127.0.0.1", listening))
  try {
    await use(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)
  } finally {
    server.close()
  }
}
