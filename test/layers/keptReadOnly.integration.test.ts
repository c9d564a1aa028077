/**
 * Red team round 6: what the file tools may write that later runs outside the sandbox. The command
 * sandbox keeps the home folder's start-up files, dot folders and folders on PATH read-only when the
 * session's cwd holds the home folder, and git's hooks folders (`core.hooksPath`, husky's `.husky/`)
 * read-only in any workspace; `write_file`/`edit_file` go through the policy instead, which must
 * protect the same paths (ask in every asking mode, "always" never covers it, readOnly denies,
 * bypass passes). Calls are prepared by the real workspace tools in a real tree.
 */
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { execFileSync } from "node:child_process"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest"
import * as Effect from "effect/Effect"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import * as RunsLater from "../../src/layers/workspace/RunsLater.js"
import * as WorkspaceTools from "../../src/layers/WorkspaceTools.js"
import type { PreparedCall } from "../../src/services/ToolRouter.js"

const root = NodeFs.realpathSync(NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "effect-agent-kept-read-only-")))
afterAll(() => NodeFs.rmSync(root, { recursive: true, force: true }))

const tools = Effect.runSync(WorkspaceTools.make().pipe(Effect.provide(NodeContext.layer)))
const prepare = (cwd: string, tool: string, path: string): Promise<PreparedCall> =>
  Effect.runPromise(tools.prepare({
    toolCallId: "c1",
    tool,
    args: (tool === "write_file" ? { path, content: "touch /x\n" } : { path, oldString: "a", newString: "b" }) as never
  }, cwd))
const decide = (cwd: string, options: PermissionPolicy.Options, call: PreparedCall, remembered: Array<{ scope: string; decision: "allow"; sequence: number }> = []) =>
  PermissionPolicy.decide(options, { sessionId: "s", cwd, call, remembered })

/** Every asking mode asks, "always" does not cover it, readOnly denies, bypass passes. */
const expectProtected = async (cwd: string, tool: string, path: string) => {
  const call = await prepare(cwd, tool, path)
  for (const mode of ["default", "acceptEdits"] as const) {
    expect(decide(cwd, { mode }, call), `${mode} ${tool} ${path}`).toEqual({ decision: "ask", policy: "protected-path" })
    expect(decide(cwd, { mode }, call, [{ scope: call.scope, decision: "allow", sequence: 1 }]), `always ${tool} ${path}`).toEqual({ decision: "ask", policy: "protected-path" })
    expect(decide(cwd, { mode, rules: [{ name: "mine", decision: "allow", tool }] }, call), `rule ${tool} ${path}`).toEqual({ decision: "ask", policy: "protected-path" })
  }
  expect(decide(cwd, { mode: "readOnly" }, call)).toMatchObject({ decision: "deny" })
  expect(decide(cwd, { mode: "bypass" }, call)).toMatchObject({ decision: "allow" })
}
const expectEditable = async (cwd: string, tool: string, path: string) => {
  expect(decide(cwd, { mode: "acceptEdits" }, await prepare(cwd, tool, path)), `${tool} ${path}`).toEqual({ decision: "allow", policy: "accept-edits/edit" })
}

describe("a session whose cwd holds the home folder: the file tools' writes that run later ask, as the sandbox keeps them read-only", () => {
  const saved = { HOME: process.env.HOME, PATH: process.env.PATH }
  let home = ""
  let n = 0
  beforeEach(() => {
    home = NodePath.join(root, `home${++n}`)
    for (const folder of ["Documents", "projects/app", ".local/bin", ".config/git", ".ssh", "tools/bin", "bin", "dotfiles"]) {
      NodeFs.mkdirSync(NodePath.join(home, folder), { recursive: true })
    }
    NodeFs.writeFileSync(NodePath.join(home, ".bashrc"), "a\n")
    NodeFs.writeFileSync(NodePath.join(home, ".profile"), "a\n")
    NodeFs.writeFileSync(NodePath.join(home, "dotfiles", "zshrc"), "a\n")
    NodeFs.writeFileSync(NodePath.join(home, "Documents", "notes.md"), "a\n")
    // A dot file kept in a folder of dot files (a dotfile manager's layout): the link is what the shell reads.
    NodeFs.symlinkSync(NodePath.join(home, "dotfiles", "zshrc"), NodePath.join(home, ".zshrc"))
    process.env.HOME = home
    process.env.PATH = `${NodePath.join(home, "tools", "bin")}:${saved.PATH}`
  })
  afterEach(() => {
    process.env.HOME = saved.HOME
    process.env.PATH = saved.PATH
  })

  it("start-up files, a new .bash_profile, .gitconfig, dot folders, ~/bin and folders on PATH ask (cwd = home)", async () => {
    for (const tool of ["write_file", "edit_file"]) {
      for (const path of [".bashrc", ".profile", ".zshrc", ".gitconfig", ".config/git/config", ".config/autostart/x.desktop", ".ssh/authorized_keys", ".local/bin/git", "bin/git", "tools/bin/git", "new-top-level-file"]) {
        if (tool === "edit_file" && !NodeFs.existsSync(NodePath.join(home, path))) continue
        await expectProtected(home, tool, path)
      }
    }
    // Written another way: absolute, through `..`, through a link inside a folder of the user's.
    NodeFs.symlinkSync(NodePath.join(home, ".bashrc"), NodePath.join(home, "Documents", "rc"))
    await expectProtected(home, "write_file", NodePath.join(home, ".bashrc"))
    await expectProtected(home, "write_file", "Documents/../.bashrc")
    await expectProtected(home, "write_file", "Documents/rc")
    // Where a start-up file's link leads, named directly.
    await expectProtected(home, "write_file", "dotfiles/zshrc")
  })

  it("the home's other folders stay the session's to edit: Documents, projects", async () => {
    await expectEditable(home, "write_file", "Documents/notes.md")
    await expectEditable(home, "write_file", "projects/app/index.ts")
  })

  it("a cwd above the home folder protects the same paths", async () => {
    const above = NodePath.dirname(home)
    await expectProtected(above, "write_file", NodePath.join(NodePath.basename(home), ".bashrc"))
    await expectEditable(above, "write_file", NodePath.join(NodePath.basename(home), "Documents", "x.md"))
  })

  it("a cwd inside a dot folder of the home (~/.config/nvim) is a workspace like any other", async () => {
    const nvim = NodePath.join(home, ".config", "nvim")
    NodeFs.mkdirSync(nvim, { recursive: true })
    await expectEditable(nvim, "write_file", "init.lua")
  })
})

describe("git's hooks and editors' settings in any workspace: .husky/, the folder core.hooksPath names, .vscode/, .idea/", () => {
  it("writes into .husky/ (any case) and into the configured hooks folder ask; the rest of the repository does not", async () => {
    const cwd = NodePath.join(root, "repo")
    NodeFs.mkdirSync(NodePath.join(cwd, ".husky", "_"), { recursive: true })
    NodeFs.mkdirSync(NodePath.join(cwd, "tools", "githooks"), { recursive: true })
    execFileSync("git", ["init", "-q"], { cwd })
    execFileSync("git", ["config", "core.hooksPath", "tools/githooks"], { cwd })
    await expectProtected(cwd, "write_file", ".husky/pre-commit")
    await expectProtected(cwd, "write_file", ".HUSKY/pre-commit")
    await expectProtected(cwd, "write_file", "tools/githooks/pre-commit")
    await expectProtected(cwd, "write_file", "tools/./githooks/../githooks/post-checkout")
    await expectEditable(cwd, "write_file", "tools/build.sh")
    // Editors' folders: a task that runs when the folder opens, the interpreter a setting names.
    await expectProtected(cwd, "write_file", ".vscode/tasks.json")
    await expectProtected(cwd, "write_file", "sub/.vscode/settings.json")
    await expectProtected(cwd, "write_file", ".idea/workspace.xml")
  })

  // Review 59c: the other editors' project settings run programs too (Zed's and Helix's language
  // servers and tasks, a dev container's host-side initializeCommand, Neovim's and Vim's exrc).
  it("writes into the other editors' settings ask like .vscode/: .zed/, .helix/, .devcontainer/, .nvim.lua, .exrc", async () => {
    const cwd = NodePath.join(root, "repo-editors")
    NodeFs.mkdirSync(cwd, { recursive: true })
    execFileSync("git", ["init", "-q"], { cwd })
    for (const path of [".zed/settings.json", ".zed/tasks.json", ".helix/languages.toml", ".devcontainer/devcontainer.json", ".devcontainer.json", ".nvim.lua", ".nvimrc", ".exrc", "sub/.Zed/tasks.json"]) {
      await expectProtected(cwd, "write_file", path)
    }
    await expectEditable(cwd, "write_file", "zed/notes.md")
  })

  // Review 52: the other hook managers' installed hooks read these at the user's next commit, outside
  // the sandbox; in acceptEdits the model wrote them without a question, while .husky/ asked.
  it("writes of a git hook manager's config ask like .husky/: pre-commit's, lefthook's, overcommit's, lint-staged's, any case and depth", async () => {
    const cwd = NodePath.join(root, "repo-hook-managers")
    NodeFs.mkdirSync(cwd, { recursive: true })
    execFileSync("git", ["init", "-q"], { cwd })
    for (
      const path of [
        ".pre-commit-config.yaml", ".PRE-COMMIT-CONFIG.YAML", "lefthook.yml", "lefthook.yaml", ".lefthook.yml", "lefthook-local.yml", "lefthook.toml",
        ".config/lefthook.yml", ".lefthook/pre-commit/check.sh", ".lefthook-local/x.sh", ".overcommit.yml", ".git-hooks/pre_commit/x.rb",
        ".lintstagedrc", ".lintstagedrc.json", ".lintstagedrc.mjs", "lint-staged.config.js", "packages/app/.lintstagedrc.yml"
      ]
    ) {
      await expectProtected(cwd, "write_file", path)
    }
    await expectProtected(cwd, "edit_file", ".pre-commit-config.yaml")
    // Names that only look alike stay editable.
    for (const path of ["pre-commit-config.yaml", "docs/lefthook.md", "lefthook.yml.example", "src/lint-staged.ts", "overcommit.yml"]) await expectEditable(cwd, "write_file", path)
  })

  it("a hooks folder that is a link inside the workspace is protected where it leads", async () => {
    const cwd = NodePath.join(root, "repo-linked-hooks")
    NodeFs.mkdirSync(NodePath.join(cwd, "scripts", "hooks"), { recursive: true })
    NodeFs.symlinkSync("scripts/hooks", NodePath.join(cwd, "githooks"))
    execFileSync("git", ["init", "-q"], { cwd })
    execFileSync("git", ["config", "core.hooksPath", "githooks"], { cwd })
    await expectProtected(cwd, "write_file", "githooks/pre-commit")
    await expectProtected(cwd, "write_file", "scripts/hooks/pre-commit")
  })
})

describe("git folders not named .git: the file tools' writes there ask like .git's", () => {
  it("a .git link to .repo, a .git file naming .bare (worktree users' layout)", async () => {
    const linked = NodePath.join(root, "repo-git-link")
    NodeFs.mkdirSync(linked)
    execFileSync("git", ["init", "-q"], { cwd: linked })
    NodeFs.renameSync(NodePath.join(linked, ".git"), NodePath.join(linked, ".repo"))
    NodeFs.symlinkSync(".repo", NodePath.join(linked, ".git"))
    await expectProtected(linked, "write_file", ".repo/config")
    await expectProtected(linked, "write_file", ".repo/hooks/pre-commit")
    const bare = NodePath.join(root, "repo-bare-layout")
    NodeFs.mkdirSync(bare)
    execFileSync("git", ["init", "-q", "--bare", ".bare"], { cwd: bare })
    NodeFs.writeFileSync(NodePath.join(bare, ".git"), "gitdir: ./.bare\n")
    await expectProtected(bare, "write_file", ".bare/config")
    await expectProtected(bare, "write_file", ".bare/hooks/post-checkout")
    await expectEditable(bare, "write_file", "notes.md")
  })
})

describe("reading a git config for what runs programs", () => {
  it("core.hooksPath: the last one wins, in any case, quoted or not; settings that run programs are named", () => {
    expect(RunsLater.hooksPathIn("[core]\n\thooksPath = a\n[Core]\n\tHOOKSPATH = \"b c\" # why\n")).toBe("b c")
    expect(RunsLater.hooksPathIn("[user]\n\thooksPath = a\n")).toBeUndefined()
    expect(RunsLater.programSettingsIn([
      "[core]", "\trepositoryformatversion = 0", "\tfsmonitor = touch x", "[diff \"x\"]", "\ttextconv = cat",
      "[alias]", "\tst = status", "\tboom = !touch x", "[includeIf \"gitdir:/\"]", "\tpath = ../x", "[user]", "\tname = t"
    ].join("\n"))).toEqual(["core.fsmonitor", "diff.textconv", "alias.boom", "includeif.path"])
  })
})
