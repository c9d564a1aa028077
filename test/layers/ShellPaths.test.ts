/**
 * Issue 18, item 6: the shell tool's outside-path check, tried as a hostile repository would — links
 * in the workspace that lead out (to a file, to a folder, at any depth, dangling), option values
 * attached to their option (`--exclude-from=/x`, `-f/x`, `@file`), `~`, shell expansions and globs,
 * and recursive commands over trees that hold outward links. Every call is prepared by the real
 * workspace tools and decided by the real policy; a user's "always" never covers a path outside.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { afterAll } from "vitest"
import type { RememberedPermission } from "../../src/domain/SessionState.js"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import * as WorkspaceTools from "../../src/layers/WorkspaceTools.js"
import type { PreparedCall } from "../../src/services/ToolRouter.js"

const root = NodeFs.realpathSync(NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "effect-agent-shell-paths-")))
afterAll(() => NodeFs.rmSync(root, { recursive: true, force: true }))

/**
 * `ws/` is the session's cwd, `out/` is outside it. `ws/notes.md` and `ws/docs` are links out (to a
 * file and a folder), `ws/deep/er/x` a link out two folders down, `ws/later` a link to a file not made yet.
 */
const cwd = NodePath.join(root, "ws")
const out = NodePath.join(root, "out")
NodeFs.mkdirSync(NodePath.join(out, "docs"), { recursive: true })
NodeFs.mkdirSync(NodePath.join(cwd, "deep", "er"), { recursive: true })
NodeFs.mkdirSync(NodePath.join(cwd, "src"))
NodeFs.mkdirSync(NodePath.join(cwd, "tree", "in"), { recursive: true })
NodeFs.writeFileSync(NodePath.join(cwd, "a.txt"), "inside\n")
NodeFs.writeFileSync(NodePath.join(cwd, "src", "main.ts"), "inside\n")
NodeFs.writeFileSync(NodePath.join(out, "secret.txt"), "SECRET\n")
NodeFs.writeFileSync(NodePath.join(out, "docs", "secret.txt"), "SECRET\n")
NodeFs.writeFileSync(NodePath.join(out, "exclude-list"), "x\n")
NodeFs.symlinkSync(NodePath.join(out, "secret.txt"), NodePath.join(cwd, "notes.md"))
NodeFs.symlinkSync(NodePath.join(out, "docs"), NodePath.join(cwd, "docs"))
NodeFs.symlinkSync(NodePath.join(out, "secret.txt"), NodePath.join(cwd, "deep", "er", "x"))
NodeFs.symlinkSync(NodePath.join(out, "not-yet.txt"), NodePath.join(cwd, "later"))
// A link that stays inside, and a tree whose only outward link is three levels down.
NodeFs.symlinkSync("a.txt", NodePath.join(cwd, "alias.txt"))
NodeFs.symlinkSync(NodePath.join(out, "docs"), NodePath.join(cwd, "tree", "in", "escape"))

const tools = Effect.runSync(WorkspaceTools.make().pipe(Effect.provide(NodeContext.layer)))
const prepare = (command: string, at = cwd): Promise<PreparedCall> =>
  Effect.runPromise(tools.prepare({ toolCallId: "c1", tool: "shell", args: { command } }, at))
const decide = (call: PreparedCall, remembered: ReadonlyArray<RememberedPermission> = [], options: PermissionPolicy.Options = {}) =>
  PermissionPolicy.decide(options, { sessionId: "s", cwd, call, remembered })
const always = async (command: string): Promise<ReadonlyArray<RememberedPermission>> => [{ scope: (await prepare(command)).scope, decision: "allow", sequence: 1 }]
const outsideOf = (call: PreparedCall) => call.paths.filter((p) => !p.insideCwd).map((p) => p.resolved)

describe("the issue's cases: \"always\" never covers a link out", () => {
  it("after [a]lways for `cat a.txt`, `cat notes.md` and `cat docs/secret.txt` (links out) ask, like `cat /outside/secret.txt`", async () => {
    const remembered = await always("cat a.txt")
    expect(decide(await prepare("cat a.txt"), remembered)).toEqual({ decision: "allow", policy: "remembered" })
    expect(decide(await prepare("cat src/main.ts alias.txt"), remembered)).toEqual({ decision: "allow", policy: "remembered" })
    for (const command of ["cat notes.md", "cat docs/secret.txt", `cat ${out}/secret.txt`, "cat deep/er/x", "cat ./docs/../docs/secret.txt"]) {
      const call = await prepare(command)
      expect(decide(call, remembered), command).toEqual({ decision: "ask", policy: "outside-cwd" })
      expect(outsideOf(call).length, command).toBeGreaterThan(0)
    }
    // The prompt names where the link really leads.
    expect(outsideOf(await prepare("cat notes.md"))).toEqual([NodePath.join(out, "secret.txt")])
    expect(outsideOf(await prepare("cat docs/secret.txt"))).toEqual([NodePath.join(out, "docs", "secret.txt")])
  })

  it("after [a]lways for `grep`, `grep -R SECRET .` (a tree with an outward link) asks", async () => {
    const remembered = await always("grep inside a.txt")
    expect(decide(await prepare("grep -n inside src/main.ts"), remembered)).toEqual({ decision: "allow", policy: "remembered" })
    for (const command of ["grep -R SECRET .", "grep -r SECRET", "grep -rn SECRET tree", "grep --recursive SECRET tree/in", "grep -d recurse SECRET ."]) {
      expect(decide(await prepare(command), remembered), command).toEqual({ decision: "ask", policy: "outside-cwd" })
    }
    // The same recursive search over a tree without outward links stays covered.
    expect(decide(await prepare("grep -R inside src"), remembered)).toEqual({ decision: "allow", policy: "remembered" })
  })

  it("round 26: a recursive search asked for by a prefix of its long option (`grep --recur`, GNU getopt_long) walks too", async () => {
    const remembered = await always("grep inside a.txt")
    for (const command of ["grep --recur SECRET tree/in", "grep --dereference-r SECRET tree", "grep --directories=rec SECRET tree/in", "ls --recur tree", "du --files0=list tree", "du --time tree", "grep -r --binary SECRET tree/in"]) {
      expect(decide(await prepare(command), remembered), command).toEqual({ decision: "ask", policy: "outside-cwd" })
    }
    expect(decide(await prepare("grep --ignore-c inside src"), remembered)).toEqual({ decision: "allow", policy: "remembered" })
    // A list of file names by a shorter prefix where the program has no other option it could be (coreutils 9.1).
    for (const [rule, command] of [["du a.txt", "du --file=list0"], ["wc a.txt", "wc --f=list0"], ["sort a.txt", "sort --fil list0"]]) {
      expect(decide(await prepare(command!), await always(rule!)).decision, command).toBe("ask")
    }
  })

  it("`--exclude-from=/outside/file` is checked", async () => {
    const call = await prepare(`grep --exclude-from=${out}/exclude-list -R inside src`)
    expect(outsideOf(call)).toContain(NodePath.join(out, "exclude-list"))
    expect(decide(call, await always("grep inside a.txt")).decision).toBe("ask")
  })
})

describe("names tar takes from elsewhere: a list of files, an archive's absolute members", () => {
  const tarRule: PermissionPolicy.Options = { rules: [{ name: "tar", tool: "shell", command: "tar *", decision: "allow" }] }

  it("a list of file names (`-T`) asks in every form, old-style letters included (`tar cfT out.tar list`)", async () => {
    NodeFs.writeFileSync(NodePath.join(cwd, "list.txt"), `${out}/secret.txt\n`)
    for (const command of ["tar -cf x.tar -T list.txt", "tar -cf x.tar -Tlist.txt", "tar -cf x.tar --files-from=list.txt", "tar cfT x.tar list.txt", "tar cTf list.txt x.tar", "tar -cf x.tar --files-f=list.txt", "tar -cf x.tar --files-fr list.txt", "tar -cf x.tar --files list.txt"]) {
      const call = await prepare(command)
      expect(decide(call, await always("tar cf x.tar src"), tarRule).decision, command).toBe("ask")
    }
  })

  it("extracting with absolute names (`-P`, `--absolute-names`) writes where the archive says: it asks", async () => {
    for (const command of ["tar -xPf in.tar", "tar xPf in.tar", "tar -xf in.tar --absolute-names", "tar -x --abs -f in.tar", "unzip -: in.zip"]) {
      const call = await prepare(command)
      expect(decide(call, await always("tar xf in.tar"), tarRule).decision, command).toBe("ask")
    }
    // Plain extraction stays inside (GNU tar strips a leading / and refuses `..` members).
    expect(decide(await prepare("tar -xf in.tar"), [], tarRule).decision).toBe("allow")
    expect(decide(await prepare("tar czf x.tgz src"), [], tarRule).decision).toBe("allow")
  })
})

describe("words that name files are resolved, links included, whatever form they take", () => {
  const forms: ReadonlyArray<string> = [
    // attached and separate option values
    `sort --output=${out}/o a.txt`,
    "sort --output=notes.md a.txt",
    `sort -o ${out}/o a.txt`,
    `sort -o${out}/o a.txt`,
    "sort -onotes.md a.txt",
    `grep -f${out}/secret.txt a.txt`,
    `grep --file=${out}/secret.txt a.txt`,
    "grep --file=docs/secret.txt a.txt",
    `tar -czf ${out}/x.tgz src`,
    `tar -C ${out} -xf x.tgz`,
    "tar -C docs -xf x.tgz",
    `make -C ${out}`,
    "make -Cdocs",
    // Round 26: the folder tar and make move to by a prefix of --directory (`deep/er/x` leads out; the next-word form asked before too).
    "tar --direc=deep/er -chf z.tar x",
    "tar --directory deep/er -chf z.tar x",
    "make --dir=deep/er -f x",
    `git -C ${out} status`,
    `git --git-dir=${out}/.git log`,
    `git --work-tree=${out} status`,
    "git --work-tree=docs status",
    `gcc -I${out} a.c`,
    "gcc -Idocs a.c",
    `gcc @${out}/secret.txt`,
    "gcc @notes.md",
    `dd if=${out}/secret.txt of=copy`,
    "dd if=notes.md of=copy",
    // `~` and what a shell would expand
    "cat ~/.ssh/id_rsa",
    "cat ~root/.ssh/id_rsa",
    // a link to a file not made yet is resolved through its parent
    "touch later",
    "cp a.txt docs/new.txt",
    // a path whose folder is a link, and `..` after a link
    "cat docs/../secret.txt",
    "ls -la docs"
  ]
  for (const command of forms) {
    it(`${JSON.stringify(command)} asks even after [a]lways on its program`, async () => {
      const call = await prepare(command)
      expect(outsideOf(call).length, "the outside path is seen").toBeGreaterThan(0)
      expect(decide(call, [{ scope: call.scope, decision: "allow", sequence: 1 }]).decision).toBe("ask")
    })
  }

  it("a `-C dir` makes later relative words relative to it: `git -C tree/in show escape/secret.txt` is seen", async () => {
    expect(outsideOf(await prepare("git -C tree/in log -- escape"))).toEqual([NodePath.join(out, "docs")])
    expect(outsideOf(await prepare("tar -C tree/in -cf x.tar escape"))).toContain(NodePath.join(out, "docs"))
  })

  it("words that only look like options or text stay inside: no false asks for ordinary commands", async () => {
    for (const command of ["ls -la", "git log --oneline -n 5", "grep -n 'a|b' a.txt", "sed -n 1,3p a.txt", "echo hello world", "date +%Y/%m/%d", "node -e 1", "npm test -- --watch=false"]) {
      expect(outsideOf(await prepare(command)), command).toEqual([])
    }
  })
})

describe("shell lines (allowed by a rule): expansions, globs and scripts", () => {
  const rules = (command: string): PermissionPolicy.Options => ({ rules: [{ name: "r", tool: "shell", command, decision: "allow" }] })

  it("a word the shell expands ($VAR, $(…), `…`) cannot be checked before it runs: it counts as outside", async () => {
    for (const command of ["cat $HOME/.ssh/id_rsa | head", "cat \"$(printf notes.md)\" | head", "cat `echo x` | head"]) {
      const call = await prepare(command)
      expect(outsideOf(call).length, command).toBeGreaterThan(0)
    }
  })

  it("an unquoted glob is expanded as the shell would, and a match that leads out is seen", async () => {
    expect(outsideOf(await prepare("cat *.md | head"))).toEqual([NodePath.join(out, "secret.txt")])
    expect(outsideOf(await prepare("cat d*/*.txt | head"))).toEqual([NodePath.join(out, "docs", "secret.txt")])
    expect(outsideOf(await prepare("cat src/*.ts | head"))).toEqual([])
    // Quoted, it is one literal word (no file of that name): nothing outside.
    expect(outsideOf(await prepare("cat '*.md' | head"))).toEqual([])
  })

  it("a redirection's file is a word like any other", async () => {
    expect(outsideOf(await prepare("echo hi > notes.md"))).toEqual([NodePath.join(out, "secret.txt")])
    expect(outsideOf(await prepare(`echo hi >> ${out}/log`))).toEqual([NodePath.join(out, "log")])
  })

  it("the script of `sh -c` / `bash -c` is read as a command line too", async () => {
    expect(outsideOf(await prepare("sh -c 'cat notes.md'"))).toEqual([NodePath.join(out, "secret.txt")])
    expect(outsideOf(await prepare("bash -c \"grep -R SECRET tree\""))).not.toEqual([])
    expect(outsideOf(await prepare("sh -c 'cat a.txt'"))).toEqual([])
  })

  it("a glob in the script of `sh -c` is expanded too (no rule can let a wildcard stand for a glob of the line itself)", async () => {
    expect(outsideOf(await prepare("sh -c 'cat *.md'"))).toEqual([NodePath.join(out, "secret.txt")])
    expect(outsideOf(await prepare("sh -c 'cat src/*.ts'"))).toEqual([])
    expect(outsideOf(await prepare("sh -c 'cat $HOME/.ssh/id_rsa'")).length).toBeGreaterThan(0)
    // The line's own glob never matches a rule's wildcard: such a line is refused before any path matters.
    expect(decide(await prepare("cat src/*.ts | head"), [], rules("cat * | head")).decision).toBe("deny")
  })
})

describe("recursive commands over a tree with an outward link ask; over a clean tree they do not", () => {
  // Each command, and the same command over `src` (no outward link).
  const recursive: ReadonlyArray<readonly [string, string]> = [
    ["grep -R SECRET tree", "grep -R SECRET src"], ["grep -r SECRET", "grep -r SECRET src"], ["rg SECRET", "rg SECRET src"],
    ["rg SECRET tree", "rg SECRET src"], ["find .", "find src"], ["find tree -name x", "find src -name x"], ["find -L tree", "find -L src"],
    ["du -sh tree", "du -sh src"], ["du", "du src"], ["ls -R", "ls -R src"], ["ls -lR tree", "ls -lR src"], ["tree", "tree src"],
    ["cp -r tree copy", "cp -r src copy"], ["cp -a tree copy", "cp -a src copy"], ["rsync -a tree/ copy", "rsync -a src/ copy"],
    ["tar cf x.tar tree", "tar cf x.tar src"], ["tar -czf x.tgz tree", "tar -czf x.tgz src"], ["zip -r x.zip tree", "zip -r x.zip src"],
    ["diff -r tree src", "diff -r src src"], ["chmod -R u+w tree", "chmod -R u+w src"]
  ]
  for (const [command, clean] of recursive) {
    it(`${JSON.stringify(command)}`, async () => {
      const call = await prepare(command)
      expect(outsideOf(call), "the link three levels down is found").toContain(NodePath.join(out, "docs"))
      expect(decide(call, [{ scope: call.scope, decision: "allow", sequence: 1 }]).decision).toBe("ask")
      expect(outsideOf(await prepare(clean)), `${clean}: src has no outward link`).toEqual([])
    })
  }

  it.effect("a tree too large to check within the caps asks, and says why", () =>
    Effect.gen(function*() {
      const big = NodePath.join(cwd, "big")
      NodeFs.mkdirSync(big, { recursive: true })
      for (let i = 0; i < 30; i++) NodeFs.writeFileSync(NodePath.join(big, `f${i}`), "")
      const capped = yield* WorkspaceTools.make({ maxWalkEntries: 10 })
      const call = yield* capped.prepare({ toolCallId: "c", tool: "shell", args: { command: "grep -R x big" } }, cwd)
      expect(call.paths.some((p) => !p.insideCwd && p.note !== undefined && /not fully checked/.test(p.note))).toBe(true)
      expect(decide(call, [{ scope: call.scope, decision: "allow", sequence: 1 }]).decision).toBe("ask")
      const small = yield* capped.prepare({ toolCallId: "c", tool: "shell", args: { command: "grep -R x src" } }, cwd)
      expect(outsideOf(small)).toEqual([])
      NodeFs.rmSync(big, { recursive: true })
    }).pipe(Effect.provide(NodeContext.layer)))
})
