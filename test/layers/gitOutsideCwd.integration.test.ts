/**
 * Git reads files of its repository by name, and the repository's root can be above the session's
 * cwd (a monorepo's package as the workspace). `git show HEAD:secret` reads `<root>/secret` — git
 * reads `<rev>:<path>` from the root unless the path starts `./` or `../` — and `HEAD:../secret`,
 * `:secret` (the index), `git diff -- :/secret` and `git log -- ':(top)secret'` (pathspec magic
 * from the root) do too. The shell's path check read each of these as a name inside cwd, so with
 * `git show *` allowed, or "always" on `git status` (`shell:git:read`), they read files outside cwd
 * that `read_file ../secret` asks about. They now ask as a file outside cwd does; `git status`,
 * `git log` and `git diff` naming nothing outside are as they were.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import { execFileSync } from "node:child_process"
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll } from "vitest"
import type { RememberedPermission } from "../../src/domain/SessionState.js"
import { SessionEngine } from "../../src/engine/SessionEngine.js"
import * as MemoryEventStore from "../../src/layers/MemoryEventStore.js"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import * as WorkspaceTools from "../../src/layers/WorkspaceTools.js"
import { collect, engineLayer, expectWellFormedLog } from "../helpers.js"

const root = realpathSync(mkdtempSync(join(tmpdir(), "effect-agent-git-outside-")))
afterAll(() => rmSync(root, { recursive: true, force: true }))
const cwd = join(root, "packages", "app")
mkdirSync(cwd, { recursive: true })
writeFileSync(join(root, "secret"), "top secret\n")
writeFileSync(join(cwd, "a.txt"), "a\n")
const git = (args: ReadonlyArray<string>, at = root) =>
  execFileSync("git", ["-c", "user.email=t@example.com", "-c", "user.name=t", "-c", "commit.gpgsign=false", ...args], { cwd: at, stdio: "pipe" })
git(["init", "-q"])
git(["add", "."])
git(["commit", "-qm", "one"])

const tools = Effect.runSync(WorkspaceTools.make().pipe(Effect.provide(NodeContext.layer)))
const decide = async (command: string, rules: ReadonlyArray<PermissionPolicy.Rule>, remembered: ReadonlyArray<RememberedPermission> = [], at = cwd) => {
  const call = await Effect.runPromise(tools.prepare({ toolCallId: "c1", tool: "shell", args: { command } }, at))
  return PermissionPolicy.decide({ rules }, { sessionId: "s", cwd: at, call, remembered })
}
const allowGit: ReadonlyArray<PermissionPolicy.Rule> = [{ name: "git", tool: "shell", command: "git *", decision: "allow" }]
const gitReads: ReadonlyArray<RememberedPermission> = [{ scope: "shell:git:read", decision: "allow", sequence: 1 }]

describe("a git command naming a file outside cwd asks, from a subfolder of the repository", () => {
  for (const command of [
    "git show HEAD:secret", "git show HEAD:../../secret", "git show HEAD:", "git show :secret", "git show :0:secret", "git show HEAD~0:secret",
    "git cat-file -p HEAD:secret", "git cat-file blob HEAD:../../secret", "git diff HEAD -- :/secret", "git diff HEAD:secret HEAD:packages/app/a.txt",
    "git log -p -- ':(top)secret'", "git log -p -- :/", "git grep top HEAD:", "git grep top -- :/", "git ls-tree HEAD:", "git archive HEAD:",
    "git -C . show HEAD:secret", "git --no-pager show HEAD:secret", "git checkout HEAD -- :/secret", "git restore -s HEAD :/secret",
    "git log -p -- ../../secret", "git blame ../../secret", "git show 'HEAD^{/[o]ne}:secret'", "git show 'HEAD@{1 minute ago}:secret'",
    "git show 'HEAD^{/a:b}:secret'", "git log -L 1,1:../../secret", "git log -L:top:../../secret", "git blame -L 1,1 -- ../../secret"
  ]) {
    it(`${command} asks`, async () => {
      expect(await decide(command, allowGit)).toMatchObject({ decision: "ask", policy: "outside-cwd" })
      expect(await decide(command, [], gitReads)).toMatchObject({ decision: "ask", policy: "outside-cwd" })
    })
  }

  it("what stays inside cwd is as before", async () => {
    for (const command of [
      "git status", "git log", "git log -p", "git diff", "git diff HEAD", "git show HEAD:packages/app/a.txt", "git show HEAD:./a.txt", "git show :./a.txt",
      "git log --format=%H:%s", "git diff -- ':(glob)*.txt'", "git commit -m 'fix: a thing'", "git push origin HEAD:main",
      "git fetch origin main:main", "git clone git@example.com:x/y.git", "git remote add o https://example.com/x.git"
    ]) {
      expect((await decide(command, allowGit)).policy, command).not.toBe("outside-cwd")
    }
    for (const command of ["git status", "git log -p", "git show HEAD:./a.txt", "git show HEAD:packages/app/a.txt", "git diff HEAD -- a.txt"]) {
      expect(await decide(command, [], gitReads), command).toMatchObject({ decision: "allow" })
    }
  })

  it("at the repository's root, its files are inside cwd", async () => {
    expect(await decide("git show HEAD:secret", allowGit, [], root)).toEqual({ decision: "allow", policy: "git" })
    expect(await decide("git diff -- :/secret", allowGit, [], root)).toEqual({ decision: "allow", policy: "git" })
  })
})

describe("through the engine", () => {
  it.scoped("git show HEAD:secret from a package folder is asked about, and read nowhere when denied", () =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine
      const { sessionId } = yield* engine.createSession({ cwd, client: "test" })
      const events = yield* collect(engine.runTurn({ sessionId, userMessage: "show it" }).pipe(
        Stream.tap((event) =>
          event.type === "permission.resolved" && event.payload.decision === "ask"
            ? engine.resolvePermission({ sessionId, toolCallId: event.payload.toolCallId, decision: "deny", remember: false })
            : Effect.void
        )
      ))
      const policy = events.filter((e) => e.type === "permission.resolved" && e.payload.actor === "policy")
      expect(policy.map((e) => e.payload)).toEqual([expect.objectContaining({ toolCallId: "call_1", decision: "ask", policy: "outside-cwd" })])
      const requested = events.find((e) => e.type === "permission.requested")!
      expect(JSON.stringify(requested.payload)).toContain(join(root, "secret"))
      expect(events.some((e) => e.type === "tool.started")).toBe(false)
      expect(JSON.stringify(events)).not.toContain("top secret")
      expectWellFormedLog(yield* collect(engine.replaySession({ sessionId })))
    }).pipe(Effect.provide(
      engineLayer(MemoryEventStore.layer, { responses: [{ toolCalls: [{ tool: "shell", args: { command: "git show HEAD:secret" } }] }, { chunks: ["ok"] }] }).pipe(
        Layer.provideMerge(WorkspaceTools.layer().pipe(Layer.provide(NodeContext.layer))),
        Layer.provideMerge(PermissionPolicy.layer({ rules: allowGit }))
      )
    )))
})
