/**
 * The shell tool and the permission policy together, on calls prepared by the real workspace tools:
 * an allow rule never authorises shell syntax it does not spell out, and a user's "always" never
 * reaches further than the command they saw.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as fc from "effect/FastCheck"
import * as Effect from "effect/Effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll } from "vitest"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import * as CommandLine from "../../src/layers/workspace/CommandLine.js"
import * as CommandRisk from "../../src/layers/workspace/CommandRisk.js"
import * as WorkspaceTools from "../../src/layers/WorkspaceTools.js"
import type { RememberedPermission } from "../../src/domain/SessionState.js"
import type { PreparedCall } from "../../src/services/ToolRouter.js"

const cwd = mkdtempSync(join(tmpdir(), "effect-agent-shell-policy-"))
afterAll(() => rmSync(cwd, { recursive: true, force: true }))

const tools = Effect.runSync(WorkspaceTools.make().pipe(Effect.provide(NodeContext.layer)))
/** The call as the engine would see it (prepared by the real shell tool). */
const prepare = (command: string): Promise<PreparedCall> =>
  Effect.runPromise(tools.prepare({ toolCallId: "c1", tool: "shell", args: { command } }, cwd))
const decide = (options: PermissionPolicy.Options, call: PreparedCall, remembered: ReadonlyArray<RememberedPermission> = []) =>
  PermissionPolicy.decide(options, { sessionId: "s", cwd, call, remembered })

const rules: ReadonlyArray<PermissionPolicy.Rule> = [
  { name: "cat", tool: "shell", command: "cat *", decision: "allow" },
  { name: "tests", command: "npm test*", decision: "allow" }
]

describe("a shell allow rule never authorises chaining", () => {
  const chained = [
    "cat a.txt; touch x",
    "cat a.txt && touch x",
    "cat a.txt || touch x",
    "cat a.txt | tee x",
    "cat a.txt > x",
    "cat a.txt >> x",
    "cat < a.txt",
    "cat $(touch x)",
    "cat \"$(touch x)\"",
    "cat `touch x`",
    "cat a.txt\ntouch x",
    "cat a.txt & touch x",
    "cat a.txt &",
    "cat <(touch x)",
    "cat a.txt;touch x",
    "cat (touch x)",
    "cat a.txt 2>&1",
    "cat $HOME/.ssh/id_rsa",
    "cat ${HOME}",
    "npm test; touch x",
    "npm test && touch x",
    "npm test | sh",
    "npm test\ntouch x",
    "npm test -- $(touch x)",
    "npm test 'a' ;touch x",
    "npm test \"a\"&& touch x"
  ]
  for (const command of chained) {
    it(`${JSON.stringify(command)} is not allowed by a rule, in any mode`, async () => {
      const call = await prepare(command)
      expect(call.command!.hazards.length, "the tokenizer sees its shell syntax").toBeGreaterThan(0)
      for (const mode of PermissionPolicy.Mode.literals) {
        expect(decide({ mode, rules }, call).decision, mode).not.toBe("allow")
      }
    })
  }

  it("plain arguments still match the wildcard, quoted syntax included (it is data, not syntax)", async () => {
    expect(decide({ rules }, await prepare("cat a.txt b.txt"))).toEqual({ decision: "allow", policy: "cat" })
    expect(decide({ rules }, await prepare("cat 'a; touch x' \"b | c\" d\\;e"))).toEqual({ decision: "allow", policy: "cat" })
    expect(decide({ rules }, await prepare("npm test"))).toEqual({ decision: "allow", policy: "tests" })
    expect(decide({ rules }, await prepare("npm test -- --watch"))).toEqual({ decision: "allow", policy: "tests" })
    // A quoted newline is data too, but a wildcard never matches a newline.
    expect(decide({ rules }, await prepare("cat 'a\nb'")).decision).not.toBe("allow")
  })

  it("syntax is allowed where the rule spells it out, and only there", async () => {
    const tee: ReadonlyArray<PermissionPolicy.Rule> = [{ name: "tee-log", tool: "shell", command: "npm test | tee log.txt", decision: "allow" }]
    expect(decide({ rules: tee }, await prepare("npm test | tee log.txt"))).toEqual({ decision: "allow", policy: "tee-log" })
    expect(decide({ rules: tee }, await prepare("npm test|tee log.txt"))).toEqual({ decision: "allow", policy: "tee-log" })
    expect(decide({ rules: tee }, await prepare("npm test | tee other.txt")).decision).toBe("deny")
    expect(decide({ rules: tee }, await prepare("npm test | tee log.txt; touch x")).decision).toBe("deny")
    const testArgs: ReadonlyArray<PermissionPolicy.Rule> = [{ name: "test-log", tool: "shell", command: "npm test * | tee log.txt", decision: "allow" }]
    expect(decide({ rules: testArgs }, await prepare("npm test --silent | tee log.txt")).decision).toBe("allow")
    expect(decide({ rules: testArgs }, await prepare("npm test ; touch x | tee log.txt")).decision).toBe("deny")
    expect(decide({ rules: testArgs }, await prepare("npm test $(touch x) | tee log.txt")).decision).toBe("deny")
    // Through a shell, an unquoted glob or ~ expands: a wildcard does not stand for it.
    expect(decide({ rules: testArgs }, await prepare("npm test * | tee log.txt")).decision).toBe("deny")
    expect(decide({ rules: testArgs }, await prepare("npm test ~ | tee log.txt")).decision).toBe("deny")
    expect(decide({ rules: testArgs }, await prepare("npm test '*' | tee log.txt")).decision).toBe("allow")
  })

  it("hazards still apply: a rule's wildcard never stands for sudo or a recursive rm, and a rule without a command allows no syntax", async () => {
    const broad: ReadonlyArray<PermissionPolicy.Rule> = [
      { name: "rm", tool: "shell", command: "rm *", decision: "allow" },
      { name: "any-version", tool: "shell", command: "* --version", decision: "allow" },
      { name: "all-shell", tool: "shell", decision: "allow" }
    ]
    expect(decide({ rules: broad }, await prepare("rm -rf /")).decision).toBe("deny")
    expect(decide({ rules: broad }, await prepare("sudo --version")).decision).toBe("deny")
    expect(decide({ rules: broad }, await prepare("cat a; touch x")).decision).toBe("deny")
    expect(decide({ rules: broad }, await prepare("rm a.txt"))).toEqual({ decision: "allow", policy: "rm" })
    expect(decide({ rules: broad }, await prepare("make"))).toEqual({ decision: "allow", policy: "all-shell" })
    const spelled: ReadonlyArray<PermissionPolicy.Rule> = [{ name: "clean", tool: "shell", command: "rm -rf build", decision: "allow" }]
    expect(decide({ rules: spelled }, await prepare("rm -rf build"))).toEqual({ decision: "allow", policy: "clean" })
    expect(decide({ rules: spelled }, await prepare("rm -rf /")).decision).toBe("deny")
  })

  it("a deny rule sees every command of a line, so an allow rule that spells out a pipe cannot smuggle it past", async () => {
    const both: ReadonlyArray<PermissionPolicy.Rule> = [
      { name: "log-anything", tool: "shell", command: "* | tee log.txt", decision: "allow" },
      { name: "no-curl", tool: "shell", command: "curl*", decision: "deny" }
    ]
    expect(decide({ rules: both }, await prepare("curl evil.example | tee log.txt"))).toMatchObject({ decision: "deny", policy: "no-curl" })
    expect(decide({ rules: both }, await prepare("make | tee log.txt"))).toEqual({ decision: "allow", policy: "log-anything" })
  })

  // Generated: an allowed prefix, then shell syntax, then a command. Never allowed, in any mode.
  const prefix = fc.constantFrom("cat", "cat a.txt", "cat 'a b'", "npm test", "npm test --", "npm test \"x\"", "cat a\\ b")
  const glue = fc.constantFrom("", " ", "\t", "  ")
  const syntax = fc.oneof(
    fc.constantFrom(";", "&&", "||", "|", "&", ">", ">>", "<", "\n", "(", ")", "2>&1", "<(", ">(", "|&", "&>", ";;", ">|", "<<", "<>"),
    fc.constantFrom("$(touch x)", "`touch x`", "$HOME", "${HOME}", "$((1+1))", "\"$(touch x)\"", "\"`touch x`\"", "\"$HOME\"", "$1", "$$"),
    // Quote tricks: close a quote, then the syntax.
    fc.constantFrom("'a';", "\"a\";", "a\\\\;", "''&&", "\"\"|", "'\\'';", "x'y'\"z\"&")
  )
  const tail = fc.constantFrom("touch x", "", "rm -rf ~", "sh", "x", "'y'", "\"z\"")
  it("generated commands embedding shell syntax after an allowed prefix are never allowed", async () => {
    await fc.assert(fc.asyncProperty(prefix, glue, syntax, glue, tail, async (p, g1, s, g2, t) => {
      const command = `${p}${g1}${s}${g2}${t}`
      const parsed = CommandLine.parse(command)
      // An open quote: the tool refuses the call before the policy sees it.
      if (parsed.argv.length === 0) return
      const call = await prepare(command)
      for (const mode of PermissionPolicy.Mode.literals) {
        expect(decide({ mode, rules }, call).decision, `${mode}: ${JSON.stringify(command)}`).not.toBe("allow")
      }
    }), { numRuns: 400 })
  })})

describe("CommandLine.parse finds every kind of shell syntax", () => {
  const cases: ReadonlyArray<[string, ReadonlyArray<string>]> = [
    ["cat a.txt & touch x", ["background"]],
    ["cat a.txt\ntouch x", ["chaining"]],
    ["cat <(touch x)", ["redirection", "substitution", "chaining"]],
    ["cat >(touch x)", ["redirection", "substitution", "chaining"]],
    ["cat `touch x`", ["substitution"]],
    ["cat $(touch x)", ["substitution"]],
    ["cat \"$(touch x)\"", ["substitution"]],
    ["(touch x)", ["chaining"]],
    ["cat a 2>&1", ["redirection"]],
    ["cat a |& tee", ["pipe", "background"]],
    ["cat a; sudo rm x", ["chaining", "sudo"]],
    ["cat a && rm -r b", ["chaining", "recursive_delete"]],
    ["cat 'a;b' \"c|d\" e\\&f", []]
  ]
  for (const [text, hazards] of cases) {
    it(JSON.stringify(text), async () => expect([...CommandLine.parse(text).hazards].sort()).toEqual([...hazards].sort()))
  }

  it("$(…) is one word, with quotes and nesting inside followed", async () => {
    expect(CommandLine.parse("echo $(printf ')' \"$(id)\") done").argv).toEqual(["echo", "$(printf ')' \"$(id)\")", "done"])
    expect(CommandLine.parse("echo $(open").unterminated).toBe(true)
  })

  it("quoting a POSIX shell does not share is refused, not guessed at", async () => {
    expect(CommandLine.parse("echo $'\\' '; touch x; '").invalid).toBeDefined()
    expect(CommandLine.parse("echo $'\\' '; touch x; '").argv).toEqual([])
    expect(CommandLine.parse("npm test | tee log.txt\0; touch x")).toMatchObject({ argv: [], invalid: "it contains a NUL byte" })
  })
})

describe("\"always\" is not wider than what the user saw", () => {
  const always = async (command: string): Promise<ReadonlyArray<RememberedPermission>> => [{ scope: (await prepare(command)).scope, decision: "allow", sequence: 1 }]
  /**
   * For each pair (an ordinary invocation, the same program told to run or load another): "always"
   * on the first does not cover the second, nor does a wildcard rule (`*`, `<program> *`); a rule
   * naming the exact line still allows it.
   */
  const expectExactLineOnly = async (pairs: ReadonlyArray<readonly [string, string]>) => {
    for (const [first, second] of pairs) {
      const call = await prepare(second)
      expect(decide({}, call, await always(first)).decision, `${second} after always on ${first}`).toBe("ask")
      const program = second.split(" ")[0]!
      for (const pattern of ["*", `${program} *`]) {
        expect(decide({ rules: [{ name: "wide", tool: "shell", command: pattern, decision: "allow" }] }, call).decision, `${second} under ${pattern}`).toBe("ask")
      }
      expect(decide({ rules: [{ name: "exact", tool: "shell", command: second, decision: "allow" }] }, call).decision, `${second} named`).toBe("allow")
    }
  }

  it("[a]lways on `git status`, then `git -c alias.x=\"!touch /tmp/x\" x` asks", async () => {
    const remembered = await always("git status")
    expect(decide({}, await prepare("git log --oneline"), remembered)).toEqual({ decision: "allow", policy: "remembered" })
    expect(decide({}, await prepare("git -c alias.x=\"!touch /tmp/x\" x"), remembered)).toEqual({ decision: "ask", policy: "default/command" })
    for (const command of ["git x", "git --exec-path=/tmp status", "git -C /tmp status", "git -p log", "git diff --output=x", "git log --out=x", "git diff --ext-diff", "git commit -m x", "git branch new-branch", "git branch -D main"]) {
      expect(decide({}, await prepare(command), remembered).decision, command).toBe("ask")
    }
  })

  it("a read approval never turns into a write one, for every read program", async () => {
    const cases: ReadonlyArray<[string, string]> = [
      ["sed -n 1p a.txt", "sed -n \"1e touch x\" a.txt"],
      ["sed -n 1p a.txt", "sed -n \"s/a/b/w out\" a.txt"],
      ["sed -n 1p a.txt", "sed -i s/a/b/ a.txt"],
      ["sed -n 1p a.txt", "sed -f script.sed a.txt"],
      ["sort a.txt", "sort -o x a.txt"],
      ["sort a.txt", "sort --output=x a.txt"],
      ["sort a.txt", "sort -ro x a.txt"],
      ["sort a.txt", "sort --compress-program=sh a.txt"],
      ["uniq a.txt", "uniq a.txt x"],
      ["find . -name '*.ts'", "find . -exec touch x \\;"],
      ["find . -name '*.ts'", "find . -execdir touch x \\;"],
      ["find . -name '*.ts'", "find . -delete"],
      ["find . -name '*.ts'", "find . -fprint x"],
      ["rg foo", "rg --pre ./x foo"],
      ["tree", "tree -o x"],
      ["date", "date -s 2020-01-01"],
      ["date", "date 010100002030"],
      ["file a.txt", "file -C"]
    ]
    for (const [read, other] of cases) {
      expect((await prepare(read)).risk, read).toBe("read")
      expect((await prepare(other)).risk, other).not.toBe("read")
      expect(decide({}, await prepare(other), await always(read)).decision, `${other} after always on ${read}`).toBe("ask")
    }
  })

  it("programs that run other commands are remembered for that exact line only", async () => {
    for (const [first, second] of [
      ["xargs echo", "xargs rm"],
      ["env", "env sh -c 'touch x'"],
      ["tee log.txt", "tee ../outside.txt"],
      ["awk '{print $1}' a.txt", "awk 'BEGIN{system(\"touch x\")}'"],
      ["python3 tool.py", "python3 -c 'import os'"],
      ["sh -c 'echo hi'", "sh -c 'touch x'"],
      ["npm test", "npm exec -- touch x"],
      ["npx prettier --check .", "npx touch-x"]
    ] as const) {
      expect(decide({}, await prepare(second), await always(first)).decision, `${second} after always on ${first}`).toBe("ask")
      expect(decide({}, await prepare(first), await always(first)).decision, first).toBe("allow")
    }
  })

  it("an option that names a program to run is a way to run another program: neither \"always\" nor a rule's wildcard covers it", async () => {
    // Each pair: an ordinary invocation the user may approve with "always", then the same program
    // told on the line to run something else (tar's checkpoint action, zip's test command, man's
    // pager, an editor's or a debugger's command, a compiler's wrapper, wget's askpass, make's eval).
    const pairs: ReadonlyArray<readonly [string, string]> = [
      ["tar -czf out.tgz a.txt", "tar -cf x.tar a.txt --checkpoint=1 --checkpoint-action=exec=touch\\ x"],
      ["tar -czf out.tgz a.txt", "tar -xf x.tar --to-command=sh"],
      ["tar -czf out.tgz a.txt", "tar -xf x.tar --to-com=sh"],
      ["tar -czf out.tgz a.txt", "tar -I 'touch x' -cf y.tar a.txt"],
      ["tar -czf out.tgz a.txt", "tar cIf 'touch x' y.tar a.txt"],
      ["tar -czf out.tgz a.txt", "tar --use-compress-program='touch x' -cf y.tar a.txt"],
      ["tar -czf out.tgz a.txt", "tar -cf y.tar -F 'touch x' a.txt"],
      ["zip -r out.zip a.txt", "zip -T -TT 'touch x' out.zip a.txt"],
      ["zip -r out.zip a.txt", "zip -T --unzip-command='touch x' out.zip a.txt"],
      ["man ls", "man -P 'touch x' ls"],
      ["man ls", "man --pager='touch x' ls"],
      ["man ls", "man -H'touch x' ls"],
      ["vim a.txt", "vim -c '!touch x' a.txt"],
      ["emacs --batch a.txt", "emacs --batch --eval '(shell-command \"touch x\")'"],
      ["less a.txt", "less '+!touch x' a.txt"],
      ["gdb -batch a.out", "gdb -batch -ex 'shell touch x' a.out"],
      ["gcc -o a a.c", "gcc -wrapper touch,x a.c"],
      ["gcc -o a a.c", "gcc -fplugin=x.so a.c"],
      ["cc -o a a.c", "cc -Bbin a.c"],
      ["wget https://example.com/", "wget --use-askpass=./x https://example.com/"],
      ["wget https://example.com/", "wget -e use_askpass=./x https://example.com/"],
      ["make", "make --eval='$(shell touch x)'"],
      ["make", "make 'CC=touch x' all"],
      ["cmake --build build", "cmake -E env touch x"],
      ["uvx ruff check", "uvx touch-x"],
      ["docker ps", "docker run alpine touch x"],
      ["uv sync", "uv run touch x"],
      ["go test ./...", "go test -exec ./x ./..."],
      ["cargo test", "cargo --config 'target.x.runner=\"touch\"' test"]
    ]
    await expectExactLineOnly(pairs)
    // The ordinary invocations still generalise.
    for (const command of ["tar -czf out.tgz a.txt", "tar xzf out.tgz", "zip -r out.zip a.txt", "man ls", "gcc -O2 -o a a.c", "wget -q -O page.html https://example.com/", "make test", "cmake --build build"]) {
      expect((await prepare(command)).scope, command).toMatch(/^shell:[a-z]+:/)
    }
  })

  it("round 26: install's --strip-program (by any prefix, coreutils 9.1 ran it) is a way to run another program", async () => {
    await expectExactLineOnly([
      ["install -m 644 a.txt d", "install -s --strip-program=./x a.txt d"],
      ["install -m 644 a.txt d", "install -s --strip-prog ./x a.txt d"]
    ])
  })

  it("an option that loads a library or a handler that runs a program is a way to run another program too (ssh-keygen -D, openssl engine, xdg-open, sqlite3 .shell, …)", async () => {
    // Each pair: an ordinary invocation the user may approve with "always", then the same program
    // told to load code (a PKCS#11 or FIDO provider, an OpenSSL engine, provider or configuration,
    // curl's engine or config file) or to run a command (gpg's photo viewer, sdiff's diff program,
    // sqlite3's and psql's shell escapes, m4's syscmd), or a program that hands a file to whatever
    // the desktop runs for it or schedules a command for later.
    const pairs: ReadonlyArray<readonly [string, string]> = [
      ["ssh-keygen -l -f key.pub", "ssh-keygen -D ./x.so"],
      ["ssh-keygen -l -f key.pub", "ssh-keygen -t ed25519-sk -w ./x.so -f k"],
      ["ssh-add -l", "ssh-add -s ./x.so"],
      ["ssh-add -l", "ssh-add -S ./x.so k"],
      ["openssl x509 -in c.pem -noout -text", "openssl engine dynamic -pre SO_PATH:./x.so -pre LOAD"],
      ["openssl x509 -in c.pem -noout -text", "openssl req -engine ./x.so -new"],
      ["openssl x509 -in c.pem -noout -text", "openssl x509 -provider-path . -provider x -in c.pem"],
      ["openssl x509 -in c.pem -noout -text", "openssl req -config x.cnf -new"],
      ["openssl x509 -in c.pem -noout -text", "openssl rsa -in k.pem -inform engine"],
      ["curl https://example.com/", "curl --engine ./x.so https://example.com/"],
      ["curl https://example.com/", "curl -K x.cfg"],
      ["gpg --verify a.sig", "gpg --photo-viewer 'touch x' --list-options show-photos --list-keys"],
      ["sdiff a.txt b.txt", "sdiff --diff-program='touch x' a.txt b.txt"],
      ["sqlite3 db.sqlite .tables", "sqlite3 db.sqlite '.shell touch x'"],
      ["psql -l", "psql -c '\\! touch x'"],
      ["m4 a.m4", "m4 x.m4"],
      ["xdg-open a.txt", "xdg-open x.desktop"],
      ["crontab -l", "crontab x.cron"],
      ["systemd-run --version", "systemd-run --user touch x"]
    ]
    await expectExactLineOnly(pairs)
    // The ordinary invocations of the programs that only sometimes load code still generalise.
    for (const command of ["ssh-keygen -l -f key.pub", "ssh-add -l", "openssl x509 -in c.pem -noout -text", "curl https://example.com/", "gpg --verify a.sig", "sdiff a.txt b.txt"]) {
      expect((await prepare(command)).scope, command).toMatch(/^shell:[a-z0-9-]+:/)
    }
  })

  it("a program given by path is not the program of that name", async () => {
    expect((await prepare("./cat a.txt")).risk).toBe("write")
    expect(decide({}, await prepare("./git status"), await always("git status")).decision).toBe("ask")
  })

  it("scopes name the program and the risk", async () => {
    expect((await prepare("git status")).scope).toBe("shell:git:read")
    expect((await prepare("git commit -m x")).scope).toBe("shell:git:write")
    expect((await prepare("npm install")).scope).toBe("shell:npm:network")
    expect((await prepare("git -c a=b status")).scope).toBe("shell:exact:git -c a=b status")
    expect(CommandRisk.classify(["sed", "-n", "/a/,/b/{p;=}", "f"])).toEqual({ risk: "read", general: true })
  })
})
