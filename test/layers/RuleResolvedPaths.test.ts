/**
 * Issue 18, item 5 (and the policy's half of items 1 and 2): a rule means the path a call resolves
 * to — canonical, relative to the real cwd, after `..` and links — never the string the model wrote;
 * outside-cwd and protected-path asks stand whatever a rule says (only `bypass` passes them); and a
 * command wildcard never stands for a way to run another program. Calls are prepared by the real
 * workspace tools in a real tree, as the engine prepares them.
 */
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { afterAll, describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import * as WorkspaceTools from "../../src/layers/WorkspaceTools.js"
import type { PreparedCall } from "../../src/services/ToolRouter.js"

const root = NodeFs.realpathSync(NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "effect-agent-rule-paths-")))
afterAll(() => NodeFs.rmSync(root, { recursive: true, force: true }))
const cwd = NodePath.join(root, "ws")
const outside = NodePath.join(root, "out")
NodeFs.mkdirSync(NodePath.join(cwd, "src"), { recursive: true })
NodeFs.mkdirSync(NodePath.join(cwd, "secrets"), { recursive: true })
NodeFs.mkdirSync(NodePath.join(cwd, ".git", "hooks"), { recursive: true })
NodeFs.mkdirSync(outside, { recursive: true })
NodeFs.writeFileSync(NodePath.join(outside, "secret"), "outside\n")
NodeFs.writeFileSync(NodePath.join(cwd, "secrets", "key"), "inside\n")
// Links under src/: one out of the workspace, one to a folder inside it that rules treat apart.
NodeFs.symlinkSync(outside, NodePath.join(cwd, "src", "out_link"))
NodeFs.symlinkSync(NodePath.join(cwd, "secrets"), NodePath.join(cwd, "src", "secrets_link"))
// The session's cwd reached through a link: resolved paths are real, rules still see them relative.
const linkedCwd = NodePath.join(root, "ws_link")
NodeFs.symlinkSync(cwd, linkedCwd)

const tools = Effect.runSync(WorkspaceTools.make().pipe(Effect.provide(NodeContext.layer)))
const prepare = (tool: string, args: Record<string, unknown>, at = cwd): Promise<PreparedCall> =>
  Effect.runPromise(tools.prepare({ toolCallId: "c1", tool, args: args as never }, at))
const decide = (options: PermissionPolicy.Options, call: PreparedCall, at = cwd) =>
  PermissionPolicy.decide(options, { sessionId: "s", cwd: at, call, remembered: [] })
const rule = (decision: PermissionPolicy.Rule["decision"], tool: string, path: string): PermissionPolicy.Rule => ({
  name: `--${decision} ${tool}:${path}`,
  decision,
  tool,
  path
})

describe("a path rule matches the resolved path, relative to the real cwd", () => {
  it("--allow 'read_file:src/**' does not read src/../../out/secret nor src/../../../../etc/passwd", async () => {
    const rules = [rule("allow", "read_file", "src/**")]
    for (const path of ["src/../../out/secret", "src/../../../../../../etc/passwd", "src/out_link/secret"]) {
      expect(decide({ rules }, await prepare("read_file", { path })), path).toEqual({ decision: "ask", policy: "outside-cwd" })
    }
    expect(decide({ rules }, await prepare("read_file", { path: "src/a.ts" }))).toEqual({ decision: "allow", policy: "--allow read_file:src/**" })
  })

  it("--allow 'write_file:src/**' and 'edit_file:src/**' never write through a link out, nor into .git via src/../.git", async () => {
    for (const tool of ["write_file", "edit_file"]) {
      const rules = [rule("allow", tool, "src/**")]
      const args = (path: string) => tool === "write_file" ? { path, content: "x" } : { path, oldString: "a", newString: "b" }
      expect(decide({ rules, mode: "acceptEdits" }, await prepare(tool, args("src/out_link/secret")))).toEqual({ decision: "ask", policy: "outside-cwd" })
      expect(decide({ rules }, await prepare(tool, args("src/../../out/new.txt")))).toEqual({ decision: "ask", policy: "outside-cwd" })
      expect(decide({ rules }, await prepare(tool, args("src/../.git/hooks/pre-commit")))).toEqual({ decision: "ask", policy: "protected-path" })
      expect(decide({ rules }, await prepare(tool, args("src/sub/new.ts")))).toEqual({ decision: "allow", policy: `--allow ${tool}:src/**` })
    }
  })

  it("a link inside the workspace is matched as its target: src/secrets_link/key is secrets/key", async () => {
    const call = await prepare("read_file", { path: "src/secrets_link/key" })
    expect(decide({ rules: [rule("deny", "read_file", "secrets/**")] }, call)).toMatchObject({ decision: "deny", policy: "--deny read_file:secrets/**" })
    // An allow for src/** does not reach a folder it names only through a link.
    expect(decide({ mode: "readOnly", rules: [rule("allow", "write_file", "src/**")] }, await prepare("write_file", { path: "src/secrets_link/key", content: "x" })).decision).toBe("deny")
  })

  it("a deny or ask rule also sees the path as written, so a link never hides a path the user fenced off", async () => {
    NodeFs.mkdirSync(NodePath.join(cwd, "build_real"), { recursive: true })
    if (!NodeFs.existsSync(NodePath.join(cwd, "build"))) NodeFs.symlinkSync("build_real", NodePath.join(cwd, "build"))
    const call = await prepare("write_file", { path: "build/out.js", content: "x" })
    expect(decide({ mode: "acceptEdits", rules: [rule("deny", "write_file", "build/**")] }, call).decision).toBe("deny")
    expect(decide({ mode: "acceptEdits", rules: [rule("ask", "write_file", "build/**")] }, call).decision).toBe("ask")
    expect(decide({ mode: "default", rules: [rule("allow", "write_file", "build/**")] }, call).decision).toBe("ask")
  })

  it("a cwd reached through a link: rules still match relative to it", async () => {
    const call = await prepare("write_file", { path: "src/a.ts", content: "x" }, linkedCwd)
    expect(decide({ rules: [rule("allow", "write_file", "src/*.ts")] }, call, linkedCwd)).toEqual({ decision: "allow", policy: "--allow write_file:src/*.ts" })
  })
})

describe("outside-cwd and protected-path asks stand whatever a rule says", () => {
  it("{read_file: /**} does not read /etc/passwd or a file outside cwd unasked", async () => {
    const rules = [rule("allow", "read_file", "/**"), rule("allow", "read_file", "**")]
    expect(decide({ rules }, await prepare("read_file", { path: "/etc/passwd" }))).toEqual({ decision: "ask", policy: "outside-cwd" })
    expect(decide({ rules }, await prepare("read_file", { path: NodePath.join(outside, "secret") }))).toEqual({ decision: "ask", policy: "outside-cwd" })
  })

  it("{write_file: **} and {write_file: .git/**} ask before writing git's hooks and config or the agent's settings", async () => {
    for (const pattern of ["**", ".git/**", ".effect-agent/**"]) {
      const rules = [rule("allow", "write_file", pattern)]
      for (const path of [".git/hooks/pre-commit", ".git/config", ".effect-agent/settings.json"]) {
        const call = await prepare("write_file", { path, content: "x" })
        expect(decide({ rules, mode: "acceptEdits" }, call), `${pattern} ${path}`).toEqual({ decision: "ask", policy: "protected-path" })
      }
      expect(decide({ rules }, await prepare("write_file", { path: "../out/x", content: "x" }))).toEqual({ decision: "ask", policy: "outside-cwd" })
    }
  })

  it("only --mode bypass passes them; readOnly still denies a write there", async () => {
    const rules = [rule("allow", "write_file", "**")]
    expect(decide({ rules, mode: "bypass" }, await prepare("write_file", { path: ".git/config", content: "x" })).decision).toBe("allow")
    expect(decide({ rules, mode: "readOnly" }, await prepare("write_file", { path: "../out/x", content: "x" })).decision).toBe("deny")
  })

  it("extra protected paths (the user's config folder) ask like .git", async () => {
    const config = NodePath.join(cwd, "home", ".config", "effect-agent")
    const call = await prepare("write_file", { path: "home/.config/effect-agent/trusted.json", content: "{}" })
    const options = { mode: "acceptEdits" as const, protectedPaths: [config], rules: [rule("allow", "write_file", "**")] }
    expect(decide(options, call)).toEqual({ decision: "ask", policy: "protected-path" })
    expect(decide({ mode: "acceptEdits" }, call).decision).toBe("allow")
  })
})

describe("a command wildcard never stands for a way to run another program", () => {
  const shell = (command: string) => prepare("shell", { command })

  it("{shell: *} allows ls, but not bash -c, python3 -c, env, xargs, find -exec, git -c, npx", async () => {
    const rules: ReadonlyArray<PermissionPolicy.Rule> = [{ name: "any", decision: "allow", tool: "shell", command: "*" }]
    expect(decide({ rules }, await shell("ls -la"))).toEqual({ decision: "allow", policy: "any" })
    for (const command of [
      "bash -c \"touch x\"",
      "sh -c 'touch x'",
      "python3 -c \"open('y','w')\"",
      "node -e \"require('fs').writeFileSync('z','')\"",
      "perl -e 'print 1'",
      "env touch x",
      "xargs touch",
      "find . -exec touch x ;",
      "git -c core.fsmonitor=touch status",
      "npx cowsay",
      "npm exec cowsay",
      "timeout 5 touch x",
      "nice touch x"
    ]) {
      expect(decide({ rules }, await shell(command)).decision, command).not.toBe("allow")
    }
  })

  it("{git *} allows git status but not git -c …; {npm *} allows npm test but not npm exec", async () => {
    const rules: ReadonlyArray<PermissionPolicy.Rule> = [
      { name: "git", decision: "allow", tool: "shell", command: "git *" },
      { name: "npm", decision: "allow", tool: "shell", command: "npm *" }
    ]
    expect(decide({ rules }, await shell("git status"))).toEqual({ decision: "allow", policy: "git" })
    expect(decide({ rules }, await shell("npm test"))).toEqual({ decision: "allow", policy: "npm" })
    expect(decide({ rules }, await shell("git -c core.pager=touch log")).decision).not.toBe("allow")
    expect(decide({ rules }, await shell("npm exec cowsay")).decision).not.toBe("allow")
    expect(decide({ rules }, await shell("npm x cowsay")).decision).not.toBe("allow")
  })

  it("through a shell, a wildcard does not stand for a leading variable assignment", async () => {
    const rules: ReadonlyArray<PermissionPolicy.Rule> = [{ name: "log", decision: "allow", tool: "shell", command: "* | tee log.txt" }]
    expect(decide({ rules }, await shell("make | tee log.txt"))).toEqual({ decision: "allow", policy: "log" })
    expect(decide({ rules }, await shell("LD_PRELOAD=./x.so git status | tee log.txt")).decision).not.toBe("allow")
  })

  it("a rule that names the interpreter exactly still allows that exact line", async () => {
    const rules: ReadonlyArray<PermissionPolicy.Rule> = [{ name: "gen", decision: "allow", tool: "shell", command: "python3 scripts/gen.py" }]
    expect(decide({ rules }, await shell("python3 scripts/gen.py"))).toEqual({ decision: "allow", policy: "gen" })
  })
})
