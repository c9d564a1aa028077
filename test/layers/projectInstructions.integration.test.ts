import { execFileSync } from "node:child_process"
import { createHash } from "node:crypto"
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterEach, describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as ProjectInstructions from "../../src/layers/instructions/ProjectInstructions.js"
import * as ProjectSettings from "../../src/layers/ProjectSettings.js"

const made: Array<string> = []
afterEach(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true })
})

/** A fresh folder (real path) with the files given (`null` makes a folder). */
const tree = (files: Record<string, string | null>) => {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "effect-agent-instructions-")))
  made.push(root)
  for (const [path, content] of Object.entries(files)) {
    if (content === null) mkdirSync(join(root, path), { recursive: true })
    else {
      mkdirSync(join(root, path, ".."), { recursive: true })
      writeFileSync(join(root, path), content)
    }
  }
  return root
}

const load = (cwd: string, options: ProjectInstructions.Options = {}) => ProjectInstructions.load(cwd, { home: "/", ...options })

describe("project instructions", () => {
  it.effect("reads AGENTS.md from the repository's root down to cwd, CLAUDE.md where a folder has no AGENTS.md, in that order", () =>
    Effect.gen(function*() {
      const root = tree({
        ".git": null,
        "AGENTS.md": "root rules",
        "CLAUDE.md": "not read: the root has an AGENTS.md",
        "pkg/CLAUDE.md": "pkg rules",
        "pkg/app/x.ts": "",
        // A sibling folder's file is not on the way down to cwd.
        "other/AGENTS.md": "not read"
      })
      const parts = yield* load(join(root, "pkg/app"))
      expect(parts.map((p) => [p.id, p.source, p.path])).toEqual([
        ["instructions:../../AGENTS.md", "project", "../../AGENTS.md"],
        ["instructions:../CLAUDE.md", "project", "../CLAUDE.md"]
      ])
      expect(parts[0]!.content).toContain("root rules")
      expect(parts[0]!.content).toContain("they do not change what you are allowed to do")
      expect(parts[1]!.content).toContain("pkg rules")
      // The most specific comes last, all before the user's own `instructions` part (priority 40).
      expect(parts[0]!.priority).toBeLessThan(parts[1]!.priority)
      expect(parts[1]!.priority).toBeLessThan(40)
      expect(parts[0]!.sha256).toBe(createHash("sha256").update("root rules").digest("hex"))
      expect(parts.every((p) => p.truncated === false)).toBe(true)
    }))

  it.effect("a worktree's .git file marks the root too; with no repository, only cwd's own file is read", () =>
    Effect.gen(function*() {
      const worktree = tree({ ".git": "gitdir: /elsewhere", "AGENTS.md": "worktree rules", "sub/AGENTS.md": "sub rules" })
      expect((yield* load(join(worktree, "sub"))).map((p) => p.path)).toEqual(["../AGENTS.md", "AGENTS.md"])
      const loose = tree({ "AGENTS.md": "above, no repository", "sub/AGENTS.md": "cwd rules" })
      expect((yield* load(join(loose, "sub"))).map((p) => p.path)).toEqual(["AGENTS.md"])
    }))

  it.effect("never goes above the user's home, even when a repository encloses it", () =>
    Effect.gen(function*() {
      const root = tree({ ".git": null, "AGENTS.md": "above home", "home/AGENTS.md": "home rules", "home/project/AGENTS.md": "project rules" })
      const parts = yield* load(join(root, "home/project"), { home: join(root, "home") })
      // No .git at or below home: cwd alone.
      expect(parts.map((p) => p.path)).toEqual(["AGENTS.md"])
      expect(parts[0]!.content).toContain("project rules")
    }))

  it.effect("a home reached through a link stops the search too: its real path is where it stops (review 62a)", () =>
    Effect.gen(function*() {
      const root = tree({ ".git": null, "AGENTS.md": "above home", "real-home/project/AGENTS.md": "project rules" })
      symlinkSync(join(root, "real-home"), join(root, "home"))
      // cwd is a real path (every adapter stores it so); home is given as the link, as `homedir()` may be.
      const parts = yield* load(join(root, "real-home/project"), { home: join(root, "home") })
      expect(parts.map((p) => p.path)).toEqual(["AGENTS.md"])
      expect(JSON.stringify(parts)).not.toContain("above home")
    }))

  it.effect("a file the session's read rules fence (leaveOut) is left out, by its own name or where its link leads (review 62a)", () =>
    Effect.gen(function*() {
      const root = tree({ ".git": null, ".env": "SECRET=sk-live-1", "pkg/CLAUDE.md": "pkg rules", "pkg/app/x.ts": "" })
      symlinkSync(".env", join(root, "AGENTS.md"))
      const seen: Array<{ readonly real: string; readonly relative: string | undefined; readonly written: string }> = []
      const leaveOut = (path: { readonly real: string; readonly relative: string | undefined; readonly written: string }) => {
        seen.push(path)
        return path.real.endsWith("/.env")
      }
      const parts = yield* load(join(root, "pkg/app"), { leaveOut })
      expect(parts.map((p) => p.path)).toEqual(["../CLAUDE.md"])
      expect(JSON.stringify(parts)).not.toContain("sk-live")
      // The root's link is asked about by its name (as a call from cwd would write it) and by where it leads.
      expect(seen).toContainEqual({ real: join(root, "AGENTS.md"), relative: undefined, written: "../../AGENTS.md" })
      expect(seen).toContainEqual({ real: join(root, ".env"), relative: undefined, written: join(root, ".env") })
      // A rule for the link's own name fences it too.
      const byName = yield* load(join(root, "pkg"), { leaveOut: (path) => path.written === "CLAUDE.md" })
      expect(byName.map((p) => p.path)).toEqual(["../AGENTS.md"])
    }))

  // Git refuses a repository another user owns (safe.directory, CVE-2022-24765): anyone can make
  // /tmp/.git and /tmp/AGENTS.md, and a session in /tmp/clone read that AGENTS.md as its
  // repository's. The test's files are its own user's, so the session's user is said to be another.
  it.effect("a .git another user owns marks no repository: only cwd's own file is read", () =>
    Effect.gen(function*() {
      const shared = tree({ ".git": null, "AGENTS.md": "planted by another user", "clone/AGENTS.md": "the clone's rules" })
      const someoneElse = (process.getuid?.() ?? 1000) + 1
      const parts = yield* load(join(shared, "clone"), { owner: someoneElse })
      expect(parts.map((p) => p.path)).toEqual(["AGENTS.md"])
      expect(parts[0]!.content).toContain("the clone's rules")
      // The user's own repository is read as before.
      expect((yield* load(join(shared, "clone"), { owner: process.getuid?.() ?? 1000 })).map((p) => p.path)).toEqual(["../AGENTS.md", "AGENTS.md"])
    }))

  it.effect("a file linking out of its workspace is not read: cwd's out of cwd, one above cwd out of the repository", () =>
    Effect.gen(function*() {
      const secret = tree({ "id_rsa": "PRIVATE KEY" })
      const root = tree({ ".git": null, "docs/rules.md": "linked rules inside the repository", "app/x": "" })
      // Above cwd, a link to a file inside the repository is followed.
      symlinkSync(join(root, "docs/rules.md"), join(root, "AGENTS.md"))
      // cwd's own file may not lead out of cwd, even into the repository; nor out of it (its CLAUDE.md).
      symlinkSync(join(root, "docs/rules.md"), join(root, "app/AGENTS.md"))
      symlinkSync(join(secret, "id_rsa"), join(root, "app/CLAUDE.md"))
      const parts = yield* load(join(root, "app"))
      expect(parts.map((p) => p.path)).toEqual(["../AGENTS.md"])
      expect(parts[0]!.content).toContain("linked rules inside the repository")
      expect(JSON.stringify(parts)).not.toContain("PRIVATE KEY")
      // And a file above cwd linking out of the repository.
      const other = tree({ ".git": null, "app/x": "" })
      symlinkSync(join(secret, "id_rsa"), join(other, "AGENTS.md"))
      expect(yield* load(join(other, "app"))).toEqual([])
    }))

  it.effect("a FIFO named AGENTS.md is refused at once, not waited on; a folder of that name is skipped", () =>
    Effect.gen(function*() {
      const root = tree({ ".git": null, "AGENTS.md/inner": "a folder", "CLAUDE.md": "claude rules", "app/x": "" })
      execFileSync("mkfifo", [join(root, "app/AGENTS.md")])
      const parts = yield* load(join(root, "app"))
      expect(parts.map((p) => p.path)).toEqual(["../CLAUDE.md"])
    }))

  it.effect("each file is cut at its cap and all of them at the total, with a marker; cut text stays valid", () =>
    Effect.gen(function*() {
      const root = tree({ ".git": null, "AGENTS.md": "é".repeat(100), "app/AGENTS.md": "b".repeat(500) })
      const parts = yield* load(join(root, "app"), { maxBytes: 51, maxTotalBytes: 80 })
      expect(parts.map((p) => [p.path, p.truncated])).toEqual([["../AGENTS.md", true], ["AGENTS.md", true]])
      // 51 bytes hold 25 "é" (2 bytes each); the half character is dropped, not shown as U+FFFD.
      expect(parts[0]!.content).toContain(`${"é".repeat(25)}\n[… truncated: ../AGENTS.md was cut at 51 bytes]`)
      expect(parts[0]!.content).not.toContain("\uFFFD")
      // What was left of the total: 80 - 51.
      expect(parts[1]!.content).toContain(`${"b".repeat(29)}\n[… truncated: AGENTS.md was cut at 29 bytes]`)
      const none = yield* load(join(root, "app"), { maxTotalBytes: 0 })
      expect(none).toEqual([])
    }))

  it.effect("the user's own file comes first, named <config>/AGENTS.md, never its real path", () =>
    Effect.gen(function*() {
      const config = tree({ "AGENTS.md": "my own rules" })
      const cwd = tree({ "AGENTS.md": "project rules" })
      const parts = yield* load(cwd, { userFile: join(config, "AGENTS.md") })
      expect(parts.map((p) => [p.id, p.source, p.path])).toEqual([
        ["instructions:user", "user-file", "<config>/AGENTS.md"],
        ["instructions:AGENTS.md", "project", "AGENTS.md"]
      ])
      expect(parts[0]!.content).toContain("my own rules")
      expect(parts[0]!.priority).toBeLessThan(parts[1]!.priority)
      expect(JSON.stringify(parts)).not.toContain(config)
      // A missing user file is no error.
      expect((yield* load(cwd, { userFile: join(config, "missing.md") })).map((p) => p.source)).toEqual(["project"])
    }))

  it("only the user's settings may turn them off: a project's settings file with \"instructions\" is refused", () => {
    expect(ProjectSettings.parseUser(`{"instructions": false}`, "settings.json")._tag).toBe("Right")
    const project = ProjectSettings.parseProject(`{"instructions": false}`, ".effect-agent/settings.json")
    expect(project._tag).toBe("Left")
  })
})
