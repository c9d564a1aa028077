/**
 * Issue 18, item 7: what an approved command can reach. Each call here is executed without asking
 * (as after an approval or an "always"): only the sandbox stands between it and the machine.
 *
 * Where this system cannot build the workspace sandbox (no user namespaces), the tests check the
 * other branch instead — `required` refuses, `auto` warns — and say so in their names. Where it can
 * (checked here independently of `Sandbox.detect`), detection must find it: a capable machine never
 * passes these tests on the fallback branch.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { execFileSync, spawn, spawnSync } from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodeHttp from "node:http"
import * as NodeNet from "node:net"
import * as NodePath from "node:path"
import { afterAll, beforeAll } from "vitest"
import type { Json } from "../../src/domain/Json.js"
import * as Sandbox from "../../src/layers/workspace/Sandbox.js"
import * as WorkspaceTools from "../../src/layers/WorkspaceTools.js"
import type { ToolContext } from "../../src/services/ToolRouter.js"
import { outsideTmp } from "../tmp.js"
import { ownedByTest } from "../processes.js"

const detected = await Effect.runPromise(Sandbox.detect)
/** Whether this machine lets an unprivileged process make user, mount and network namespaces and mount in them. */
const capable = process.platform === "linux" &&
  spawnSync("unshare", ["--user", "--map-root-user", "--mount", "--net", "--pid", "--fork", "sh", "-c", "mount -t tmpfs t /tmp && mount -o remount,bind,ro /"], { stdio: "ignore" }).status === 0
const branch = detected._tag === "Workspace" ? "[sandbox]" : `[no sandbox here: ${detected._tag}]`

/**
 * Outside `/tmp` (which every command gets a private one of), so that what is outside the workspace
 * is really there for a command to try: `outside/` beside the workspace, a fake home with keys.
 */
const root = NodeFs.realpathSync(NodeFs.mkdtempSync(NodePath.join(outsideTmp(), "effect-agent-sandbox-test-")))
const home = NodePath.join(root, "home")
const outside = NodePath.join(root, "outside")
const dataDir = NodePath.join(root, "data")
const KEY = `-----BEGIN FAKE KEY ${process.pid}-----`
NodeFs.mkdirSync(NodePath.join(home, ".ssh"), { recursive: true })
NodeFs.mkdirSync(NodePath.join(home, ".config", "effect-agent"), { recursive: true })
NodeFs.mkdirSync(NodePath.join(home, ".aws"), { recursive: true })
NodeFs.mkdirSync(outside)
NodeFs.mkdirSync(dataDir)
NodeFs.writeFileSync(NodePath.join(home, ".ssh", "id_rsa"), KEY)
NodeFs.writeFileSync(NodePath.join(home, ".aws", "credentials"), KEY)
NodeFs.writeFileSync(NodePath.join(home, ".netrc"), KEY)
NodeFs.writeFileSync(NodePath.join(home, ".config", "effect-agent", "trusted.json"), KEY)
NodeFs.writeFileSync(NodePath.join(dataDir, "session.jsonl"), KEY)
NodeFs.writeFileSync(NodePath.join(outside, "target.txt"), "outside\n")

const savedHome = process.env.HOME
/** A server in the test's own network namespace, counting the requests that reached it. */
let requests = 0
const server = NodeHttp.createServer((_, response) => {
  requests++
  response.end("reached")
})
let url = ""
beforeAll(async () => {
  process.env.HOME = home
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done))
  url = `http://127.0.0.1:${(server.address() as { port: number }).port}/`
})
afterAll(async () => {
  if (savedHome === undefined) delete process.env.HOME
  else process.env.HOME = savedHome
  await new Promise<void>((done) => server.close(() => done()))
  NodeFs.rmSync(root, { recursive: true, force: true })
})

let workspaces = 0
/** A fresh workspace (a git repository with a settings folder) and its tools; every call is run as if approved. */
const workspace = (options: WorkspaceTools.Options = {}) =>
  Effect.gen(function*() {
    const cwd = NodePath.join(root, `ws${++workspaces}`)
    NodeFs.mkdirSync(NodePath.join(cwd, ".effect-agent"), { recursive: true })
    NodeFs.writeFileSync(NodePath.join(cwd, ".effect-agent", "settings.json"), "{}")
    NodeFs.writeFileSync(NodePath.join(cwd, "a.txt"), "inside\n")
    execFileSync("git", ["init", "-q"], { cwd })
    const tools = yield* WorkspaceTools.make({ sandbox: "required", hiddenPaths: [dataDir], ...options })
    const context: ToolContext = { sessionId: "s", turnId: "t", cwd, progress: () => Effect.void }
    const run = (command: string, extra: Record<string, Json> = {}) =>
      Effect.either(Effect.flatMap(tools.prepare({ toolCallId: "c", tool: "shell", args: { command, ...extra } }, cwd), (call) => tools.execute(call, context)))
    /** The command's output (its exit code appended by the tool when not 0). */
    const output = (command: string) =>
      Effect.map(run(command), (result) => Either.isRight(result) ? result.right.result : `[failed: ${result.left.errorCode}] ${result.left.message}`)
    return { cwd, run, output }
  }).pipe(Effect.provide(NodeContext.layer))

describe(`the workspace sandbox ${branch}`, () => {
  it("is found wherever the machine can build it", () => {
    expect(detected._tag === "Workspace", `capable: ${capable}, detected: ${JSON.stringify(detected)}`).toBe(capable)
  })

  if (detected._tag !== "Workspace") {
    it.effect(`${branch} "required" refuses every command, naming why; "auto" runs them after one warning`, () =>
      Effect.gen(function*() {
        const { run } = yield* workspace()
        const refused = yield* run("true")
        expect(Either.isLeft(refused) && refused.left).toMatchObject({ errorCode: "sandbox_unavailable", message: expect.stringContaining(detected.reason) })
        const auto = yield* workspace({ sandbox: "auto" })
        expect(Either.isRight(yield* auto.run("true"))).toBe(true)
      }))
    return
  }

  it.effect(`${branch} an approved write outside the workspace fails: touch /tmp/outside-… lands in a private /tmp, a file beside the workspace and the user's home are read-only`, () =>
    Effect.gen(function*() {
      const { output } = yield* workspace()
      const marker = `/tmp/outside-${process.pid}-${Date.now()}`
      // The command's /tmp is its own (empty, gone with it): the file is made there, never in the real one.
      expect(yield* output(`sh -c 'touch ${marker} && ls -A /tmp'`)).toBe(`${NodePath.basename(marker)}\n`)
      expect(NodeFs.existsSync(marker)).toBe(false)
      expect(yield* output(`touch ${outside}/new.txt`)).toContain("Read-only file system")
      expect(yield* output(`sh -c 'echo pwned > ${outside}/target.txt'`)).toContain("Read-only file system")
      expect(yield* output(`touch ${home}/.bashrc`)).toContain("Read-only file system")
      expect(NodeFs.readdirSync(outside).sort()).toEqual(["target.txt"])
      expect(NodeFs.readFileSync(NodePath.join(outside, "target.txt"), "utf8")).toBe("outside\n")
    }))

  it.effect(`${branch} credentials, effect-agent's config and data folders are hidden: cat ~/.ssh/id_rsa finds nothing`, () =>
    Effect.gen(function*() {
      const { output } = yield* workspace()
      for (const command of [
        `cat ${home}/.ssh/id_rsa`,
        "sh -c 'cat ~/.ssh/id_rsa'",
        `cat ${home}/.aws/credentials`,
        `cat ${home}/.netrc`,
        `cat ${home}/.config/effect-agent/trusted.json`,
        `cat ${dataDir}/session.jsonl`,
        `sh -c 'grep -r BEGIN ${home} ${dataDir}'`
      ]) {
        expect(yield* output(command), command).not.toContain(KEY)
      }
      expect(yield* output(`ls -A ${home}/.ssh`)).toBe("(no output)")
      // Nor can a command put anything there.
      expect(yield* output(`touch ${home}/.ssh/authorized_keys`)).toContain("Read-only file system")
    }))

  it.effect(`${branch} there is no network unless the user turns it on: curl and node's fetch to a server on 127.0.0.1 of the host fail`, () =>
    Effect.gen(function*() {
      const before = requests
      const { output } = yield* workspace()
      const fetchScript = `node -e "fetch('${url}').then(r => r.text()).then(t => console.log('got', t), e => { console.log('failed', e.cause?.code ?? e.message); process.exit(7) })"`
      const fetched = yield* output(fetchScript)
      expect(fetched).toContain("failed")
      expect(fetched).not.toContain("got reached")
      const curl = Sandbox.which("curl", process.env.PATH)
      if (curl !== undefined) expect(yield* output(`curl -sS --max-time 5 ${url}`)).not.toContain("reached")
      expect(requests).toBe(before)
      // With the network on, the same commands reach it.
      const online = yield* workspace({ network: true })
      expect(yield* online.output(fetchScript)).toContain("got reached")
      expect(requests).toBeGreaterThan(before)
    }))

  it.effect(`${branch} loopback works inside: a test suite can serve and connect on 127.0.0.1${Sandbox.which("ip", process.env.PATH) === undefined ? " (no `ip` here: loopback is down, checked as such)" : ""}`, () =>
    Effect.gen(function*() {
      const { output } = yield* workspace()
      const script = "node -e \"const s = require('net').createServer(c => c.end('pong')).listen(0, '127.0.0.1', () => require('net').connect(s.address().port, '127.0.0.1').on('data', d => { console.log(String(d)); s.close() }).on('error', e => { console.log(e.code); s.close() }))\""
      const result = yield* output(script)
      if (detected.programs.ip === undefined) expect(result).not.toContain("pong")
      else expect(result.trim()).toBe("pong")
    }))

  it.effect(`${branch} writes inside cwd and to $TMPDIR work; node starts; git works, its config and hooks stay read-only`, () =>
    Effect.gen(function*() {
      const { cwd, output } = yield* workspace()
      expect(yield* output("sh -c 'echo made > made.txt && echo temp > \"$TMPDIR/t.txt\" && cat \"$TMPDIR/t.txt\" && echo $TMPDIR'")).toBe("temp\n/tmp\n")
      expect(NodeFs.readFileSync(NodePath.join(cwd, "made.txt"), "utf8")).toBe("made\n")
      expect(yield* output("node -e \"console.log(process.version, 1 + 1)\"")).toContain(" 2")
      expect(yield* output("git add a.txt")).toBe("(no output)")
      expect(yield* output("git -c user.name=t -c user.email=t@example.com commit -qm first")).toBe("(no output)")
      expect(yield* output("git status --short")).toBe("?? .effect-agent/\n?? made.txt\n")
      expect(yield* output("git log --format=%s")).toBe("first\n")
      // What would run code on the user's next git command, or change the agent's rules, cannot be written.
      expect(yield* output("git config core.fsmonitor 'touch /x'")).toMatch(/\[exit code [1-9]/)
      expect(yield* output("touch .git/hooks/pre-commit")).toContain("Read-only file system")
      expect(yield* output("sh -c 'echo {} > .effect-agent/settings.json'")).toContain("Read-only file system")
      expect(yield* output("mv .git/config .git/config.old")).toMatch(/\[exit code [1-9]/)
      // Nor put a repository of its own in the place of the real one.
      expect(yield* output("mv .git .git-old")).toMatch(/\[exit code [1-9]/)
      expect(yield* output("mv .git/hooks .git/hooks-old")).toMatch(/\[exit code [1-9]/)
      expect(yield* output("mv .effect-agent .effect-agent-old")).toMatch(/\[exit code [1-9]/)
      expect(NodeFs.existsSync(NodePath.join(cwd, ".git", "HEAD"))).toBe(true)
      expect(NodeFs.readFileSync(NodePath.join(cwd, ".git", "config"), "utf8")).not.toContain("fsmonitor")
      expect(NodeFs.existsSync(NodePath.join(cwd, ".git", "hooks", "pre-commit"))).toBe(false)
    }))

  it.effect(`${branch} a command cannot send git elsewhere for its config and hooks: a .git/commondir it makes is removed, a linked worktree's stays read-only`, () =>
    Effect.gen(function*() {
      const { cwd, output } = yield* workspace()
      execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "x"], { cwd })
      // A linked worktree beside the workspace: its git folder, .git/worktrees/<its name>, is inside the workspace.
      const linked = NodePath.join(root, `linked-${NodePath.basename(cwd)}`)
      execFileSync("git", ["worktree", "add", "-q", linked], { cwd })
      const marker = NodePath.join(outside, `PWNED-${NodePath.basename(cwd)}`)
      // A git folder in the workspace (which a command may write) whose config runs a program.
      execFileSync("cp", ["-r", ".git", "evil"], { cwd })
      NodeFs.rmSync(NodePath.join(cwd, "evil", "worktrees"), { recursive: true })
      NodeFs.writeFileSync(NodePath.join(cwd, "evil", "config"), `[core]\n\trepositoryformatversion = 0\n\tfsmonitor = "touch ${marker}; false"\n`)
      // git reads a git folder's `commondir` for where its config and hooks are: pointed there, the
      // user's next `git status` (outside the sandbox) would run that program.
      const said = yield* output(`sh -c 'echo ../evil > .git/commondir; echo ../../../evil > .git/worktrees/${NodePath.basename(linked)}/commondir'`)
      execFileSync("git", ["status"], { cwd, stdio: "ignore" })
      execFileSync("git", ["status"], { cwd: linked, stdio: "ignore" })
      expect(NodeFs.existsSync(marker), said).toBe(false)
      expect(said).toContain("Read-only file system")
      expect(NodeFs.existsSync(NodePath.join(cwd, ".git", "commondir"))).toBe(false)
      expect(NodeFs.readFileSync(NodePath.join(cwd, ".git", "worktrees", NodePath.basename(linked), "commondir"), "utf8")).toBe("../..\n")
      // The result says what was undone.
      expect(said).toContain(".git/commondir")
      // Git still works in both.
      expect(yield* output("git status --short")).not.toContain("fatal")
      expect(execFileSync("git", ["status", "--short"], { cwd: linked, encoding: "utf8" })).toBe("")
    }))

  it.effect(`${branch} repositories below cwd are pinned like cwd's own: a folder of clones, a bare repository named by .git, an embedded submodule`, () =>
    Effect.gen(function*() {
      const { cwd, output } = yield* workspace()
      const git = (args: ReadonlyArray<string>, at: string) =>
        execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@example.com", ...args], { cwd: at, stdio: "pipe", encoding: "utf8" })
      // A folder of clones (the workspace is one too), a repository cloned inside it and committed as a
      // submodule without .gitmodules (its git folder embedded: `sub/.git`), and the bare-repository
      // layout of worktree users: `.git` is a file naming `.bare`, the worktrees beside it.
      const clone = NodePath.join(cwd, "clones", "one")
      NodeFs.mkdirSync(clone, { recursive: true })
      git(["init", "-q"], clone)
      git(["commit", "-q", "--allow-empty", "-m", "x"], clone)
      const sub = NodePath.join(cwd, "sub")
      NodeFs.mkdirSync(sub)
      git(["init", "-q"], sub)
      git(["commit", "-q", "--allow-empty", "-m", "x"], sub)
      git(["add", "sub"], cwd)
      const layout = NodePath.join(cwd, "layout")
      NodeFs.mkdirSync(layout)
      git(["clone", "-q", "--bare", clone, ".bare"], layout)
      NodeFs.writeFileSync(NodePath.join(layout, ".git"), "gitdir: ./.bare\n")
      git(["worktree", "add", "-q", "main"], layout)
      const marker = NodePath.join(outside, `PWNED-below-${NodePath.basename(cwd)}`)
      // The lines a command appends to each config (written here: the workspace is the command's to write).
      NodeFs.writeFileSync(NodePath.join(cwd, "fsmonitor.conf"), `[core]\n\tfsmonitor = "touch ${marker}; false"\n`)
      const said = yield* output(`sh -c 'for config in clones/one/.git/config sub/.git/config layout/.bare/config; do cat fsmonitor.conf >> $config; done; touch clones/one/.git/hooks/pre-commit; echo "gitdir: ../../clones/one/.git" > layout/main/.git'`)
      for (const at of [clone, cwd, sub, NodePath.join(layout, "main")]) git(["status"], at)
      expect(NodeFs.existsSync(marker), said).toBe(false)
      expect(said).toContain("Read-only file system")
      expect(NodeFs.existsSync(NodePath.join(clone, ".git", "hooks", "pre-commit"))).toBe(false)
      expect(NodeFs.readFileSync(NodePath.join(layout, "main", ".git"), "utf8")).toContain(".bare/worktrees/main")
      // Nor can a folder holding one be moved away, a repository of the command's own put in its place.
      for (const move of ["mv clones/one clones/moved", "mv clones clones-moved", "mv layout/main layout/moved", "mv sub/.git sub/git"]) {
        expect(yield* output(move), move).toMatch(/\[exit code [1-9]/)
      }
      // Git still works in each.
      expect(yield* output("git -C clones/one -c user.name=t -c user.email=t@example.com commit -q --allow-empty -m y")).toBe("(no output)")
      expect(yield* output("git -C layout/main status --short")).toBe("(no output)")
    }))

  it.effect(`${branch} git's hooks folder (core.hooksPath) and husky's .husky/ are read-only like .git/hooks: existing, missing, through a link, from a repository above cwd`, () =>
    Effect.gen(function*() {
      const { cwd, output } = yield* workspace()
      const marker = NodePath.join(outside, `hooked-${process.pid}-${Date.now()}`)
      const hook = `#!/bin/sh\ntouch ${marker}\n`
      const commit = (at: string) => {
        try {
          execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "x"], { cwd: at, stdio: "ignore" })
        } catch {
          // a hook that failed is no hook that ran: the marker says
        }
      }
      // husky's layout: git runs .husky/_/pre-commit, which runs .husky/pre-commit.
      NodeFs.mkdirSync(NodePath.join(cwd, ".husky", "_"), { recursive: true })
      NodeFs.writeFileSync(NodePath.join(cwd, ".husky", "pre-commit"), "#!/bin/sh\ntrue\n", { mode: 0o755 })
      NodeFs.writeFileSync(NodePath.join(cwd, ".husky", "_", "pre-commit"), "#!/bin/sh\nsh -e \"${0%/*}/../pre-commit\"\n", { mode: 0o755 })
      execFileSync("git", ["config", "core.hooksPath", ".husky/_"], { cwd })
      const said = yield* output(`sh -c 'printf "${hook}" > .husky/pre-commit; printf "${hook}" > .husky/_/pre-commit; printf "${hook}" > .husky/_/post-commit; chmod +x .husky/_/post-commit'`)
      expect(said).toContain("Read-only file system")
      commit(cwd)
      expect(NodeFs.existsSync(marker), said).toBe(false)

      // A hooks folder that does not exist yet cannot be made by a command.
      execFileSync("git", ["config", "core.hooksPath", "tools/githooks"], { cwd })
      const made = yield* output(`sh -c 'mkdir -p tools/githooks; printf "${hook}" > tools/githooks/pre-commit; chmod +x tools/githooks/pre-commit; echo done'`)
      expect(made).toContain("done")
      commit(cwd)
      expect(NodeFs.existsSync(marker), made).toBe(false)
      expect(NodeFs.readdirSync(NodePath.join(cwd, "tools", "githooks"))).toEqual([])

      // A hooks folder reached through a link: read-only where it leads, and the link put back if a command swaps it.
      NodeFs.mkdirSync(NodePath.join(cwd, "scripts", "hooks"), { recursive: true })
      NodeFs.symlinkSync("scripts/hooks", NodePath.join(cwd, "linked-hooks"))
      execFileSync("git", ["config", "core.hooksPath", "linked-hooks"], { cwd })
      const linked = yield* output(`sh -c 'printf "${hook}" > scripts/hooks/pre-commit; rm linked-hooks && mkdir linked-hooks && printf "${hook}" > linked-hooks/pre-commit && chmod +x linked-hooks/pre-commit; echo done'`)
      expect(linked).toContain("Read-only file system")
      expect(linked).toContain("linked-hooks")
      expect(NodeFs.readlinkSync(NodePath.join(cwd, "linked-hooks"))).toBe("scripts/hooks")
      commit(cwd)
      expect(NodeFs.existsSync(marker), linked).toBe(false)

      // A session in a folder of a repository whose hooks folder is in that folder.
      const sub = NodePath.join(cwd, "pkg")
      NodeFs.mkdirSync(NodePath.join(sub, "hooks"), { recursive: true })
      execFileSync("git", ["config", "core.hooksPath", "pkg/hooks"], { cwd })
      const tools = yield* WorkspaceTools.make({ sandbox: "required", hiddenPaths: [dataDir] })
      const context: ToolContext = { sessionId: "s", turnId: "t", cwd: sub, progress: () => Effect.void }
      const inSub = yield* Effect.either(Effect.flatMap(
        tools.prepare({ toolCallId: "c", tool: "shell", args: { command: `sh -c 'printf "${hook}" > hooks/pre-commit; chmod +x hooks/pre-commit'` } }, sub),
        (call) => tools.execute(call, context)
      ))
      expect(Either.isRight(inSub) && inSub.right.result).toContain("Read-only file system")
      commit(cwd)
      expect(NodeFs.existsSync(marker)).toBe(false)
      // A hooksPath set after 4 KiB of other settings (many branches; the last one set wins) is seen too.
      const branches = Array.from({ length: 200 }, (_, i) => `[branch "feature-${i}"]\n\tremote = origin\n\tmerge = refs/heads/feature-${i}\n`).join("")
      NodeFs.appendFileSync(NodePath.join(cwd, ".git", "config"), `${branches}[core]\n\thooksPath = late-hooks\n`)
      const late = yield* output(`sh -c 'mkdir -p late-hooks; printf "${hook}" > late-hooks/pre-commit; chmod +x late-hooks/pre-commit; echo done'`)
      commit(cwd)
      expect(NodeFs.existsSync(marker), late).toBe(false)
      expect(NodeFs.readdirSync(NodePath.join(cwd, "late-hooks"))).toEqual([])
      // The rest of the workspace stays writable, and git works.
      expect(yield* output("sh -c 'echo x > tools/build.sh && git add tools/build.sh && echo ok'")).toBe("ok\n")
    }).pipe(Effect.provide(NodeContext.layer)))

  // Review 52: the other hook managers' installed hooks read their config at the user's next commit,
  // outside the sandbox; a command rewrote it as freely as any file of the workspace.
  it.effect(`${branch} a hook manager's config at a worktree's root is read-only like .husky/: pre-commit's, lefthook's (and .config/, .lefthook/), lint-staged's`, () =>
    Effect.gen(function*() {
      const { cwd, output } = yield* workspace()
      const configs = [".pre-commit-config.yaml", "lefthook.yml", ".config/lefthook-local.yaml", ".lintstagedrc.json", ".lefthook/pre-commit/check.sh"]
      for (const config of configs) {
        NodeFs.mkdirSync(NodePath.dirname(NodePath.join(cwd, config)), { recursive: true })
        NodeFs.writeFileSync(NodePath.join(cwd, config), "kept\n")
      }
      const said = yield* output(`sh -c 'for f in ${configs.join(" ")}; do echo PWNED > $f; done; rm -f .pre-commit-config.yaml; mv lefthook.yml moved.yml; echo x > .lefthook/new.sh; echo done'`)
      expect(said).toContain("Read-only file system")
      for (const config of configs) expect(NodeFs.readFileSync(NodePath.join(cwd, config), "utf8"), `${config}: ${said}`).toBe("kept\n")
      expect(NodeFs.existsSync(NodePath.join(cwd, ".lefthook", "new.sh"))).toBe(false)
      // The rest of the workspace, and a name that only looks alike, stay writable.
      expect(yield* output("sh -c 'echo x > .config/other.yml && echo x > lefthook.yml.example && echo ok'")).toBe("ok\n")
    }).pipe(Effect.provide(NodeContext.layer)))

  it.effect(`${branch} a .git that is a link to a folder inside cwd is pinned where it leads, and the link is put back if a command swaps it`, () =>
    Effect.gen(function*() {
      const { cwd, output } = yield* workspace()
      const marker = NodePath.join(outside, `linked-git-${process.pid}-${Date.now()}`)
      NodeFs.renameSync(NodePath.join(cwd, ".git"), NodePath.join(cwd, ".repo"))
      NodeFs.symlinkSync(".repo", NodePath.join(cwd, ".git"))
      const said = yield* output(`sh -c 'printf "[core]\\n\\tfsmonitor = touch ${marker}; false\\n" >> .git/config; printf "#!/bin/sh\\ntouch ${marker}\\n" > .repo/hooks/pre-commit; echo done'`)
      expect(said).toContain("Read-only file system")
      execFileSync("git", ["status"], { cwd, stdio: "ignore" })
      expect(NodeFs.existsSync(marker), said).toBe(false)
      // Swapped for a folder of the command's own: put back once the command is gone.
      const swapped = yield* output(`sh -c 'rm .git && cp -r .repo .git && printf "[core]\\n\\tfsmonitor = touch ${marker}; false\\n" >> .git/config; echo done'`)
      expect(swapped).toContain(".git")
      expect(NodeFs.readlinkSync(NodePath.join(cwd, ".git"))).toBe(".repo")
      // What the command put there is kept beside it, not deleted: it may be the user's work.
      expect(swapped).toContain(".git.set-aside")
      expect(NodeFs.readFileSync(NodePath.join(cwd, ".git.set-aside", "config"), "utf8")).toContain("fsmonitor")
      execFileSync("git", ["status"], { cwd, stdio: "ignore" })
      expect(NodeFs.existsSync(marker), swapped).toBe(false)
      expect(yield* output("git status --short")).not.toContain("fatal")
      // The same for a repository below cwd, whose .git link the walk used to pass over.
      const nested = NodePath.join(cwd, "nested")
      NodeFs.mkdirSync(nested)
      execFileSync("git", ["init", "-q"], { cwd: nested })
      NodeFs.renameSync(NodePath.join(nested, ".git"), NodePath.join(nested, ".repo"))
      NodeFs.symlinkSync(".repo", NodePath.join(nested, ".git"))
      const below = yield* output(`sh -c 'printf "[core]\\n\\tfsmonitor = touch ${marker}; false\\n" >> nested/.git/config; mv nested/.repo nested/.old; echo done'`)
      expect(below).toContain("Read-only file system")
      expect(below).toContain("busy")
      execFileSync("git", ["status"], { cwd: nested, stdio: "ignore" })
      expect(NodeFs.existsSync(marker), below).toBe(false)
    }))

  it.effect(`${branch} a repository a command makes is not pinned, but what in it runs programs is said in the result, and kept`, () =>
    Effect.gen(function*() {
      const { cwd, output } = yield* workspace()
      // A plain `git init` holds nothing that runs (its hooks are samples): nothing to say.
      expect(yield* output("git init -q plain")).toBe("(no output)")
      const said = yield* output(`sh -c 'git init -q made && git -C made config core.fsmonitor "touch /x" && git -C made config filter.lfs.smudge "touch /x" && printf "#!/bin/sh\\n" > made/.git/hooks/pre-commit'`)
      expect(said).toContain("made/.git (core.fsmonitor, filter.smudge, hooks/pre-commit)")
      expect(said).toContain("outside the sandbox")
      // Said, never removed: it may be the user's work.
      expect(NodeFs.readFileSync(NodePath.join(cwd, "made", ".git", "config"), "utf8")).toContain("fsmonitor")
      // Once there before a command, it is pinned like any repository and not said again.
      expect(yield* output("true")).toBe("(no output)")
    }))

  it.effect(`${branch} a session in the home folder: commands cannot write its start-up files, dot folders or folders on PATH; its other folders stay writable`, () =>
    Effect.gen(function*() {
      const { cwd, output } = yield* workspace()
      NodeFs.writeFileSync(NodePath.join(cwd, ".bashrc"), "# mine\n")
      for (const folder of ["Documents", ".local/bin", ".cache/effect-agent/code-cache", "tools/bin"]) NodeFs.mkdirSync(NodePath.join(cwd, folder), { recursive: true })
      const saved = { HOME: process.env.HOME, PATH: process.env.PATH }
      process.env.HOME = cwd
      process.env.PATH = `${NodePath.join(cwd, "tools", "bin")}:${saved.PATH}`
      try {
        // What the user's next login, shell, git or effect-agent start runs, outside the sandbox.
        const said = yield* output("sh -c 'echo touch /x >> .bashrc; echo touch /x > .bash_profile; touch .gitconfig .local/bin/git .cache/effect-agent/code-cache/x tools/bin/git Documents/notes.txt 2>&1; echo done'")
        expect(said).toContain("Read-only file system")
        expect(said).toContain("done")
        expect(NodeFs.readFileSync(NodePath.join(cwd, ".bashrc"), "utf8")).toBe("# mine\n")
        for (const made of [".bash_profile", ".gitconfig", ".local/bin/git", ".cache/effect-agent/code-cache/x", "tools/bin/git"]) {
          expect(NodeFs.existsSync(NodePath.join(cwd, made)), made).toBe(false)
        }
        // A folder of the user's (not a dot folder, nothing on PATH) is the session's to work in.
        expect(NodeFs.existsSync(NodePath.join(cwd, "Documents", "notes.txt"))).toBe(true)
        // A start-up file kept in such a folder (a dotfile manager's `.zshrc` -> `dotfiles/zshrc`) is read-only where it leads.
        NodeFs.mkdirSync(NodePath.join(cwd, "dotfiles"))
        NodeFs.writeFileSync(NodePath.join(cwd, "dotfiles", "zshrc"), "# mine\n")
        NodeFs.symlinkSync("dotfiles/zshrc", NodePath.join(cwd, ".zshrc"))
        expect(yield* output("sh -c 'echo touch /x >> dotfiles/zshrc; echo touch /x >> .zshrc; touch dotfiles/other'")).toContain("Read-only file system")
        expect(NodeFs.readFileSync(NodePath.join(cwd, "dotfiles", "zshrc"), "utf8")).toBe("# mine\n")
        expect(NodeFs.existsSync(NodePath.join(cwd, "dotfiles", "other"))).toBe(true)
      } finally {
        process.env.HOME = saved.HOME
        process.env.PATH = saved.PATH
      }
    }))

  it.effect(`${branch} the sockets of the user's session and of the machine's services are out of reach; so are the user's terminals`, () =>
    Effect.gen(function*() {
      // The user's runtime folder (session bus, systemd --user, agents), with a service listening in it.
      const runtime = NodePath.join(root, "runtime")
      NodeFs.mkdirSync(runtime, { recursive: true })
      const socket = NodePath.join(runtime, "bus")
      const service = NodeNet.createServer((connection) => connection.end("answered"))
      yield* Effect.promise(() => new Promise<void>((done) => service.listen(socket, done)))
      const savedRuntime = process.env.XDG_RUNTIME_DIR
      process.env.XDG_RUNTIME_DIR = runtime
      // A terminal of the user's, open on the host while the command runs.
      const hostTerminals = () => NodeFs.readdirSync("/dev/pts").filter((name) => name !== "ptmx")
      const before = hostTerminals().length
      const terminal = ownedByTest(spawn("script", ["-qc", "sleep 60", "/dev/null"], { stdio: "ignore", detached: true }), { detached: true })
      try {
        // Bounded wait for the terminal to exist (asserted below).
        for (let i = 0; i < 200 && hostTerminals().length <= before; i++) yield* Effect.promise(() => new Promise((done) => setTimeout(done, 25)))
        expect(hostTerminals().length).toBeGreaterThan(before)
        const connect = (path: string) =>
          `node -e "require('net').connect('${path}').on('data', d => console.log(String(d))).on('error', e => console.log('refused', e.code))"`
        for (const network of [false, true]) {
          const { output } = yield* workspace({ network })
          const reached = yield* output(connect(socket))
          expect(reached, `network: ${network}`).not.toContain("answered")
          expect(reached, `network: ${network}`).toContain("refused")
          expect(yield* output("ls /dev/pts"), `network: ${network}`).toBe("ptmx\n")
          // A pseudo-terminal of its own still works.
          expect(yield* output("script -qc 'tty' /dev/null"), `network: ${network}`).toMatch(/^\/dev\/pts\/0/)
        }
        // Without the network, /run (databases' sockets, the system bus) is a private, empty folder.
        expect(yield* (yield* workspace()).output("ls -A /run")).toBe("(no output)")
      } finally {
        process.kill(-terminal.pid!, "SIGKILL")
        if (savedRuntime === undefined) delete process.env.XDG_RUNTIME_DIR
        else process.env.XDG_RUNTIME_DIR = savedRuntime
        service.close()
      }
    }))

  it.effect(`${branch} the command's environment never reaches the setup, which runs as root of the namespace: an LD_PRELOAD loads in the command alone`, () =>
    Effect.gen(function*() {
      const { output } = yield* workspace({ env: { set: { LD_PRELOAD: "/nonexistent/effect-agent-preload.so", MARKER: "set" } } })
      const result = yield* output("sh -c 'echo $MARKER $TMPDIR'")
      expect(result).toContain("set /tmp")
      // The dynamic loader complains once per process that was given the variable: here only the command's sh.
      expect(result.split("\n").filter((line) => line.includes("effect-agent-preload.so")).length).toBe(1)
    }))

  it.effect(`${branch} a command cannot undo the sandbox: no unmount, no remount, not from a namespace of its own; no hard link from outside`, () =>
    Effect.gen(function*() {
      const { output } = yield* workspace()
      for (const command of [
        `sh -c 'umount ${home}/.ssh; cat ${home}/.ssh/id_rsa'`,
        `sh -c 'umount -l ${home}/.ssh 2>&1; cat ${home}/.ssh/id_rsa'`,
        `sh -c 'mount -o remount,rw / 2>&1; touch ${outside}/x'`,
        `unshare --user --map-root-user --mount sh -c 'umount ${home}/.ssh; mount -o remount,rw / ; cat ${home}/.ssh/id_rsa; touch ${outside}/x'`,
        `unshare --user --map-root-user --mount sh -c 'umount -l ${root}; touch ${outside}/x; cat ${home}/.ssh/id_rsa'`
      ]) {
        expect(yield* output(command), command).not.toContain(KEY)
      }
      expect(NodeFs.readdirSync(outside)).toEqual(["target.txt"])
      // A second name inside the workspace for a file outside would let a later write change it.
      expect(yield* output(`ln ${outside}/target.txt linked.txt`)).toMatch(/\[exit code [1-9]/)
    }))
})

describe("a bare repository shipped inside the workspace", () => {
  // A repository can commit a folder that is a bare repository (HEAD, config, objects, refs: no
  // name git refuses); its config names programs git runs (core.fsmonitor), and `git -C evil status`
  // — a read, to anyone reading the line — would run them. Commands get safe.bareRepository=explicit.
  it.effect("git run in it refuses it, and its config runs nothing, sandboxed or not", () =>
    Effect.gen(function*() {
      for (const sandbox of ["off", "auto"] as const) {
        const { cwd, output } = yield* workspace({ sandbox })
        execFileSync("git", ["init", "-q", "--bare", "evil"], { cwd })
        NodeFs.writeFileSync(NodePath.join(cwd, "evil", "config"), `[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = ..\n\tfsmonitor = "touch ${cwd}/PWNED; false"\n`)
        const said = yield* output("git -C evil status")
        expect(NodeFs.existsSync(NodePath.join(cwd, "PWNED")), `${sandbox}: ${said}`).toBe(false)
        expect(said, sandbox).toContain("safe.bareRepository")
        // The workspace's own repository still works.
        expect(yield* output("git status --short"), sandbox).not.toContain("fatal")
      }
    }))

  it.effect(`${branch} a repository's own .git/config (an unpacked archive's) running programs under an approved git status and git diff: they run in the sandbox, reaching no key and writing nothing outside`, () =>
    Effect.gen(function*() {
      // Held on main: kept as a probe (round 14). git runs what the repository's config names (a
      // fsmonitor, an external diff, a textconv the repository's .gitattributes selects), as the
      // user's own git would; the command's sandbox is what bounds it.
      const { cwd, output } = yield* workspace()
      const leak = NodePath.join(outside, `leak-${NodePath.basename(cwd)}`)
      const steal = `cat ${home}/.ssh/id_rsa ${home}/.aws/credentials > ${leak} 2>/dev/null; cat ${home}/.ssh/id_rsa 2>/dev/null > stolen.txt`
      NodeFs.appendFileSync(NodePath.join(cwd, ".git", "config"), [
        "[core]", `\tfsmonitor = \"${steal}; false\"`,
        "[diff]", `\texternal = \"sh -c '${steal}' --\"`,
        "[diff \"x\"]", `\ttextconv = \"sh -c '${steal}; cat' --\"`, ""
      ].join("\n"))
      NodeFs.writeFileSync(NodePath.join(cwd, ".gitattributes"), "*.txt diff=x\n")
      execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "core.fsmonitor=false", "add", "a.txt"], { cwd })
      NodeFs.writeFileSync(NodePath.join(cwd, "a.txt"), "changed\n")
      const said = [yield* output("git status"), yield* output("git diff"), yield* output("git diff --cached")].join("\n")
      // They ran (each made stolen.txt in the workspace, empty: the keys are hidden from commands).
      expect(NodeFs.existsSync(NodePath.join(cwd, "stolen.txt")), said).toBe(true)
      expect(NodeFs.existsSync(leak), said).toBe(false)
      expect(said).not.toContain(KEY)
      expect(NodeFs.existsSync(NodePath.join(cwd, "stolen.txt")) ? NodeFs.readFileSync(NodePath.join(cwd, "stolen.txt"), "utf8") : "").not.toContain(KEY)
    }))
})
