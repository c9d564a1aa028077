import { describe, expect, it } from "vitest"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import type { PermissionRequest } from "../../src/services/PermissionEngine.js"
import type { PathAccess, PreparedCall, ShellHazard } from "../../src/services/ToolRouter.js"

const cwd = "/work"
const path = (resolved: string, access: "read" | "write" = "read"): PathAccess => ({
  requested: resolved,
  resolved,
  insideCwd: resolved === cwd || resolved.startsWith(`${cwd}/`),
  access
})

const call = (tool: string, fields: Partial<PreparedCall> = {}): PreparedCall => ({
  toolCallId: "c1",
  tool,
  args: {},
  risk: "read",
  sequential: false,
  paths: [],
  scope: tool,
  input: {},
  ...fields
})
const readFile = (p: string) => call("read_file", { paths: [path(p)] })
const writeFile = (p: string) => call("write_file", { risk: "write", paths: [path(p, "write")] })
const shell = (text: string, risk: PreparedCall["risk"] = "write", hazards: ReadonlyArray<ShellHazard> = []) =>
  call("shell", { risk, command: { text, argv: text.split(" "), hazards }, scope: `shell:${text.split(" ")[0]}` })

const request = (c: PreparedCall, remembered: PermissionRequest["remembered"] = []): PermissionRequest => ({ sessionId: "s", cwd, call: c, remembered })
const decide = (options: PermissionPolicy.Options, c: PreparedCall, remembered: PermissionRequest["remembered"] = []) =>
  PermissionPolicy.decide(options, request(c, remembered))

describe("PermissionPolicy", () => {
  it("modes decide what no rule covers", () => {
    const table: ReadonlyArray<[PermissionPolicy.Mode, PreparedCall, string]> = [
      ["default", readFile("/work/a"), "allow"],
      ["default", writeFile("/work/a"), "ask"],
      ["default", shell("ls", "read"), "ask"],
      ["acceptEdits", writeFile("/work/a"), "allow"],
      ["acceptEdits", shell("ls", "read"), "ask"],
      ["readOnly", readFile("/work/a"), "allow"],
      ["readOnly", writeFile("/work/a"), "deny"],
      ["readOnly", shell("ls", "read"), "ask"],
      ["readOnly", shell("make"), "deny"],
      ["bypass", shell("make"), "allow"],
      ["bypass", writeFile("/etc/x"), "allow"]
    ]
    for (const [mode, c, decision] of table) expect(decide({ mode }, c).decision, `${mode} ${c.tool}`).toBe(decision)
  })

  it("paths outside cwd ask, whatever the mode allows inside (a read-only write there is denied)", () => {
    expect(decide({ mode: "acceptEdits" }, writeFile("/etc/hosts"))).toEqual({ decision: "ask", policy: "outside-cwd" })
    expect(decide({}, readFile("/home/me/notes.txt"))).toEqual({ decision: "ask", policy: "outside-cwd" })
    expect(decide({ mode: "readOnly" }, writeFile("/etc/hosts")).decision).toBe("deny")
  })

  it("the first matching rule decides, but any matching deny wins", () => {
    const rules: ReadonlyArray<PermissionPolicy.Rule> = [
      { name: "tests", tool: "shell", command: "npm test*", decision: "allow" },
      { name: "all-shell", tool: "shell", decision: "ask" },
      { name: "no-env", path: "**/.env", decision: "deny" },
      { name: "src-writes", tool: "write_file", path: "src/**", decision: "allow" }
    ]
    expect(decide({ rules }, shell("npm test -- --watch"))).toEqual({ decision: "allow", policy: "tests" })
    expect(decide({ rules }, shell("make"))).toEqual({ decision: "ask", policy: "all-shell" })
    expect(decide({ rules }, writeFile("/work/src/deep/a.ts"))).toEqual({ decision: "allow", policy: "src-writes" })
    expect(decide({ rules }, writeFile("/work/src/.env"))).toMatchObject({ decision: "deny", policy: "no-env" })
    expect(decide({ rules }, writeFile("/work/lib/a.ts"))).toEqual({ decision: "ask", policy: "default/write" })
  })

  it("a path glob's * stays within a folder; ** crosses folders", () => {
    const rules: ReadonlyArray<PermissionPolicy.Rule> = [{ name: "top", tool: "write_file", path: "src/*.ts", decision: "allow" }]
    expect(decide({ rules }, writeFile("/work/src/a.ts")).policy).toBe("top")
    expect(decide({ rules }, writeFile("/work/src/deep/a.ts")).policy).toBe("default/write")
  })

  it("a rule's glob, compiled once, decides every later call as at first; a rule changed in place decides by its new glob", () => {
    const rule = { name: "deny-secrets", tool: "read_file", path: "secrets/**", decision: "deny" as const }
    const rules: ReadonlyArray<PermissionPolicy.Rule> = [rule]
    for (let i = 0; i < 3; i++) {
      expect(decide({ rules }, readFile("/work/secrets/key")).decision).toBe("deny")
      expect(decide({ rules }, readFile("/work/src/a.ts")).decision).toBe("allow")
    }
    ;(rule as { path: string }).path = "src/**"
    expect(decide({ rules }, readFile("/work/secrets/key")).decision).toBe("allow")
    expect(decide({ rules }, readFile("/work/src/a.ts")).decision).toBe("deny")
  })

  it("command hazards are denied in every mode unless a rule allows them", () => {
    for (const mode of PermissionPolicy.Mode.literals) {
      const d = decide({ mode }, shell("cat a | grep b", "read", ["pipe"]))
      expect(d).toMatchObject({ decision: "deny", policy: "command-hazards" })
      expect(d.reason).toContain("pipe")
    }
    const rules: ReadonlyArray<PermissionPolicy.Rule> = [{ name: "grep-pipes", tool: "shell", command: "cat * | grep *", decision: "allow" }]
    expect(decide({ rules }, shell("cat a | grep b", "read", ["pipe"]))).toEqual({ decision: "allow", policy: "grep-pipes" })
  })

  it("the user's remembered decisions apply to the same scope, never to paths outside cwd", () => {
    const remembered = [{ scope: "shell:ls", decision: "allow" as const, sequence: 9 }, { scope: "write_file", decision: "deny" as const, sequence: 12 }]
    expect(decide({}, shell("ls -la", "read"), remembered)).toEqual({ decision: "allow", policy: "remembered" })
    expect(decide({}, shell("rm x", "destructive"), remembered).decision).toBe("ask")
    expect(decide({}, writeFile("/work/a"), remembered)).toEqual({ decision: "deny", policy: "remembered" })
    expect(decide({}, call("shell", { ...shell("ls /etc", "read"), paths: [path("/etc")] }), remembered).policy).toBe("outside-cwd")
  })

  it("a command pattern's wildcard never matches shell syntax; a deny pattern matches any command of the line", () => {
    const rules: ReadonlyArray<PermissionPolicy.Rule> = [
      { name: "cat", tool: "shell", command: "cat *", decision: "allow" },
      { name: "no-push", tool: "shell", command: "git push*", decision: "deny" }
    ]
    expect(decide({ rules }, shell("cat a.txt", "read"))).toEqual({ decision: "allow", policy: "cat" })
    expect(decide({ rules }, shell("cat a.txt; touch x", "read", ["chaining"]))).toMatchObject({ decision: "deny", policy: "command-hazards" })
    expect(decide({ rules }, shell("cat a.txt\ntouch x", "read", ["chaining"])).decision).toBe("deny")
    // The router's hazards are not trusted alone: the policy reads the text too.
    expect(decide({ rules }, shell("cat a.txt | tee x", "read", [])).decision).toBe("deny")
    expect(decide({ rules, mode: "bypass" }, shell("ls && git push origin", "write", ["chaining"]))).toMatchObject({ decision: "deny", policy: "no-push" })
  })

  it("a remembered scope from before scopes named the risk (shell:<program>) covers nothing now", () => {
    const remembered = [{ scope: "shell:git", decision: "allow" as const, sequence: 1 }]
    expect(decide({}, call("shell", { risk: "write", command: { text: "git -c a=b x", argv: ["git", "-c", "a=b", "x"], hazards: [] }, scope: "shell:exact:git -c a=b x" }), remembered).decision).toBe("ask")
  })

  it("a write to git's config and hooks or to the agent's own settings asks, even in acceptEdits and after 'always'", () => {
    const always = [{ scope: "write_file", decision: "allow" as const, sequence: 1 }]
    for (const target of ["/work/.git/hooks/pre-commit", "/work/.git/config", "/work/.effect-agent/settings.json", "/work/sub/.GIT/config"]) {
      expect(decide({ mode: "acceptEdits" }, writeFile(target)), target).toMatchObject({ decision: "ask", policy: "protected-path" })
      expect(decide({ mode: "default" }, writeFile(target), always), target).toMatchObject({ decision: "ask", policy: "protected-path" })
      expect(decide({ mode: "readOnly" }, writeFile(target)).decision, target).toBe("deny")
      expect(decide({ mode: "bypass" }, writeFile(target)).decision, target).toBe("allow")
    }
    // Reading them is a read like any other; a look-alike name is not protected.
    expect(decide({ mode: "default" }, readFile("/work/.git/config")).decision).toBe("allow")
    expect(decide({ mode: "acceptEdits" }, writeFile("/work/.github/workflows/ci.yml")).decision).toBe("allow")
    // Even a rule for it does not pass the ask (issue 18): only --mode bypass does, and a deny still denies.
    const rules = [{ name: "hooks", decision: "allow" as const, tool: "write_file", path: ".git/hooks/*" }]
    expect(decide({ mode: "default", rules }, writeFile("/work/.git/hooks/pre-commit"))).toMatchObject({ decision: "ask", policy: "protected-path" })
    expect(decide({ mode: "default", rules: [{ name: "no-hooks", decision: "deny" as const, path: ".git/hooks/*" }] }, writeFile("/work/.git/hooks/pre-commit")).decision).toBe("deny")
  })

  it("an ask says which allow rule's wildcard did not cover the command, and the line that would allow it (checked)", () => {
    const rules: ReadonlyArray<PermissionPolicy.Rule> = [
      { name: "--allow shell:ls *", decision: "allow", tool: "shell", command: "ls *" },
      { name: "--allow shell:sed *", decision: "allow", tool: "shell", command: "sed *" }
    ]
    const asked = decide({ rules }, shell("sed -i s/a/b/ f.txt"))
    expect(asked).toMatchObject({ decision: "ask", policy: "default/command", allowCommand: "sed -i s/a/b/ f.txt" })
    expect(asked.reason).toBe(
      "your rule --allow shell:sed * does not cover it: a rule's wildcard never stands for a command that could write or run another program, " +
        "or whose options are not all known reads (here sed -i s/a/b/ f.txt)"
    )
    // The suggested line as a rule allows the call.
    expect(decide({ rules: [{ name: "exact", decision: "allow", tool: "shell", command: asked.allowCommand! }] }, shell("sed -i s/a/b/ f.txt")).decision).toBe("allow")
    // No rule came near: the ask is the mode's, with nothing to explain.
    expect(decide({ rules }, shell("touch x"))).toEqual({ decision: "ask", policy: "default/command" })
    // The rule does allow a plain read; a denial keeps its own reason.
    expect(decide({ rules }, shell("sed -n 1p f.txt", "read")).decision).toBe("allow")
    expect(decide({ rules: [...rules, { name: "no-sed", decision: "deny", tool: "shell", command: "sed -i *" }] }, shell("sed -i s/a/b/ f.txt")).reason).toBe('the rule "no-sed" forbids it')
  })
})
