/**
 * A command's path through its own process's view is not resolved as the agent's. `/proc/self/cwd`
 * resolved here is the agent's cwd: with the agent started in a folder below the session's cwd,
 * `cat /proc/self/cwd/../x` read as `<cwd>/x` (inside, allowed by `cat *`) while the command, whose
 * cwd is the session's, reads a file above it. `/proc/<pid>/…`, `/dev/fd/N` and `/dev/stdin` count
 * as outside the same way.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { mkdtempSync, realpathSync, rmSync, symlinkSync } from "node:fs"
import { dirname, join } from "node:path"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import * as WorkspaceTools from "../../src/layers/WorkspaceTools.js"

// The session's cwd holds the agent's (the test process's) cwd, one folder up.
const cwd = dirname(realpathSync(process.cwd()))
const tools = Effect.runSync(WorkspaceTools.make().pipe(Effect.provide(NodeContext.layer)))
const prepare = (command: string) => Effect.runPromise(tools.prepare({ toolCallId: "c1", tool: "shell", args: { command } }, cwd))
const cat: PermissionPolicy.Rule = { name: "cat", tool: "shell", command: "cat *", decision: "allow" }

describe("a process's own view", () => {
  for (const command of ["cat /proc/self/cwd/../x", "cat /proc/thread-self/cwd/../x", `cat /proc/${process.pid}/cwd/../x`, "cat /dev/fd/0", "cat /dev/stdin", "cat //proc//self/cwd/x", "cat /proc/./self/cwd/../x"]) {
    it(`${JSON.stringify(command)} counts as outside cwd`, async () => {
      const decision = PermissionPolicy.decide({ mode: "default", rules: [cat] }, { sessionId: "s", cwd, call: await prepare(command), remembered: [] })
      expect(decision).toMatchObject({ decision: "ask", policy: "outside-cwd" })
    })
  }
})

// The check is the resolver's, not the words': a link in the workspace leading to `/proc/self` is the
// agent's process just the same.
describe("a link to a process's own view", () => {
  it("a link in cwd to /proc/self counts as outside cwd", async () => {
    const folder = mkdtempSync(join(realpathSync(process.cwd()), ".proc-link-"))
    symlinkSync("/proc/self", join(folder, "p"))
    try {
      const relative = folder.slice(cwd.length + 1)
      const decision = PermissionPolicy.decide({ mode: "default", rules: [cat] }, { sessionId: "s", cwd, call: await prepare(`cat ${relative}/p/cwd/../x`), remembered: [] })
      expect(decision).toMatchObject({ decision: "ask", policy: "outside-cwd" })
    } finally {
      rmSync(folder, { recursive: true, force: true })
    }
  })
})
