/**
 * Red team round 28: the environment's loaders round 27 left, the search path's names, and round 27's over-asks. Each
 * line asked below was allowed by an exact rule for it on main (aaf974f: the cases failed before the fix); where the
 * program is installed here (Python 3.11, Perl 5.36, git 2.39, bash 5.2) running the line ran the repository's file.
 */
import { describe, expect, it } from "@effect/vitest"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as Effect from "effect/Effect"
import { chmodSync, existsSync, mkdirSync, readdirSync, symlinkSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { execFileSync } from "node:child_process"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import * as WorkspaceTools from "../../src/layers/WorkspaceTools.js"
import { decide, fsmonitor } from "./exactGitRule.js"
import { plantedRepositories, runs, touches } from "./plantedRepositories.js"

const { base, folder } = plantedRepositories("redteam28")
const asks = async (cwd: string, line: string, named: string, policy = "repository-python") => {
  const decided = await decide(cwd, line)
  expect(decided.decision, line).toBe("ask")
  expect(decided.policy, line).toBe(policy)
  expect(decided.reason, line).toContain(named)
}
const allows = async (cwd: string, line: string) => expect((await decide(cwd, line)).decision, line).toBe("allow")
const python = execFileSync("python3", ["-c", "import sys; print(f'python{sys.version_info[0]}.{sys.version_info[1]}')"]).toString().trim()

describe("Python's own folders a line names (CommandPaths, PythonShadows)", () => {
  it("PYTHONUSERBASE and HOME: the user site's usercustomize.py (and .pth files) run at every Python's start", async () => {
    for (const [line, site] of [
      ["PYTHONUSERBASE=. python3 -m json.tool d.json", `lib/${python}/site-packages`],
      ["HOME=. python3 -m json.tool d.json", `.local/lib/${python}/site-packages`],
      ["export PYTHONUSERBASE=u; pip3 --version", `u/lib/${python}/site-packages`]
    ] as const) {
      const files = { "d.json": "{}\n", [`${site}/usercustomize.py`]: "" }
      const cwd = folder(files)
      writeFileSync(join(cwd, site, "usercustomize.py"), touches(cwd))
      if (line.includes("json.tool")) expect(runs(cwd, line), `${line} runs usercustomize.py`).toBe(true)
      await asks(folder(files), line, site.split("/site-packages")[0]!.replace(/\/python.*$/, "/python"))
    }
    // No Python's folders there: the rule's.
    await allows(folder({ "d.json": "{}\n" }), "HOME=. python3 -m json.tool d.json")
  })

  it("PYTHONHOME: the standard library itself, from the repository (h/ and h: Python joins 'h' and 'lib' as 'hlib')", async () => {
    const stdlib = `/usr/lib/${python}`
    const cwd = folder({ "d.json": "{}\n" })
    const home = join(cwd, "h", "lib", python)
    mkdirSync(join(home, "json"), { recursive: true })
    if (existsSync(stdlib)) {
      for (const entry of readdirSync(stdlib)) if (entry !== "json") symlinkSync(join(stdlib, entry), join(home, entry))
      for (const entry of readdirSync(join(stdlib, "json"))) if (entry !== "tool.py") symlinkSync(join(stdlib, "json", entry), join(home, "json", entry))
      writeFileSync(join(home, "json", "tool.py"), touches(cwd))
      expect(runs(cwd, "PYTHONHOME=h/ python3 -m json.tool d.json")).toBe(true)
    }
    await asks(cwd, "PYTHONHOME=h/ python3 -m json.tool d.json", `h/lib/${python}`)
    await asks(folder({ [`hlib/${python}/os.py`]: "" }), "PYTHONHOME=h python3 -c 1", `hlib/${python}`)
    await asks(folder({ [`lib/${python}/os.py`]: "" }), "export PYTHONHOME=.:.; python3 -c 1", `lib/${python}`)
  })
})

describe("git's global config from a home the line names (CommandPaths.placed)", () => {
  it("HOME=. reads ./.gitconfig and ./.config/git/config, XDG_CONFIG_HOME=. reads ./git/config", async () => {
    for (const [line, config] of [
      ["HOME=. git status", ".gitconfig"],
      ["HOME=. git status", ".config/git/config"],
      ["XDG_CONFIG_HOME=. git status", "git/config"],
      ["export XDG_CONFIG_HOME=x; git status", "x/git/config"],
      ["cd sub && HOME=. git status", "sub/.gitconfig"]
    ] as const) {
      const files = { [config]: fsmonitor, "sub/a": "" }
      const cwd = folder(files)
      if (!line.startsWith("cd")) expect(runs(cwd, line, "fsmonitor-ran"), `${line} runs ${config}'s core.fsmonitor`).toBe(true)
      await asks(folder(files), line, "core.fsmonitor", "repository-git")
    }
    await allows(folder({ "sub/a": "" }), "HOME=. git status")
  })

  it("held, pinned: GIT_CONFIG_GLOBAL and GIT_CONFIG_SYSTEM naming the repository's file asked on main already", async () => {
    for (const line of ["GIT_CONFIG_GLOBAL=g.cfg git status", "GIT_CONFIG_SYSTEM=g.cfg git status"]) {
      await asks(folder({ "g.cfg": fsmonitor }), line, "core.fsmonitor", "repository-git")
    }
  })
})

describe("PERL5OPT and PERL5LIB (CommandPaths)", () => {
  it("PERL5OPT's -I puts a folder of the repository first, as PERL5LIB does: shasum ran ./strict.pm", async () => {
    const cwd = folder({ "a.txt": "a\n" })
    writeFileSync(join(cwd, "strict.pm"), `open(F, ">", ${JSON.stringify(join(cwd, "ran"))}); close F; 1;\n`)
    expect(runs(cwd, "PERL5OPT=-I. shasum a.txt")).toBe(true)
    for (const line of ["PERL5OPT=-I. shasum a.txt", "PERL5OPT='-w -I lib' shasum a.txt", "export PERL5OPT=-wIlib; json_pp < a.txt"]) {
      await asks(folder({ "a.txt": "a\n", "strict.pm": "1;\n", "lib/strict.pm": "1;\n" }), line, "strict.pm")
    }
    // -M names the module the line loads: the rule's.
    await allows(folder({ "a.txt": "a\n", "Mine.pm": "1;\n" }), "PERL5OPT=-MMine shasum a.txt")
  })

  it("PERL5LIB naming more than 64 folders asks, as PATH's do (round 27's bound)", async () => {
    // One letter or digit a folder (62), then two-letter ones: the word stays a name the system can look up.
    const folders = (n: number) => Array.from({ length: n }, (_, i) => (i < 62 ? "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"[i] : `z${i - 62}`)).join(":")
    await asks(folder({ "a.txt": "" }), `PERL5LIB=${folders(65)} shasum a.txt`, "more than 64 folders")
    await allows(folder({ "a.txt": "" }), `PERL5LIB=${folders(64)} shasum a.txt`)
  })
})

describe("the names a relative PATH entry may stand in for (PythonShadows)", () => {
  const tools = join(base, "tools")
  mkdirSync(tools, { recursive: true })
  writeFileSync(join(tools, "mytool"), "#!/bin/sh\n")
  chmodSync(join(tools, "mytool"), 0o755)
  const planted = () => {
    const cwd = folder()
    mkdirSync(join(cwd, "bin"))
    writeFileSync(join(cwd, "bin", "mytool"), `#!/bin/sh\ntouch ${JSON.stringify(join(cwd, "ran"))}\n`)
    chmodSync(join(cwd, "bin", "mytool"), 0o755)
    return cwd
  }

  it("a program the line's own PATH names outside the repository (not on the agent's PATH)", async () => {
    const line = `PATH=bin:${tools}:/usr/bin:/bin mytool`
    expect(runs(planted(), line)).toBe(true)
    await asks(planted(), line, "bin/mytool")
  })

  it("an absolute entry naming a folder of the repository is one (PATH=<cwd>/bin:/usr/bin git status ran bin/git)", async () => {
    const files = { "bin/git": "#!/bin/sh\n", "lib/strict.pm": "1;\n", "a.txt": "" }
    let cwd = folder(files)
    writeFileSync(join(cwd, "bin", "git"), `#!/bin/sh\ntouch ${JSON.stringify(join(cwd, "ran"))}\n`)
    expect(runs(cwd, `PATH=${cwd}/bin:/usr/bin:/bin git status`)).toBe(true)
    cwd = folder(files)
    await asks(cwd, `PATH=${cwd}/bin:/usr/bin:/bin git status`, "bin/git")
    await asks(cwd, `PERL5LIB=${cwd}/lib shasum a.txt`, "lib/strict.pm")
    await asks(cwd, `PATH=${cwd}/bin:$PATH git status`, "bin/git")
  })

  it("a program env.set's PATH names (not on the agent's PATH)", async () => {
    const line = "PATH=bin:$PATH mytool"
    const cwd = planted()
    const tools28 = Effect.runSync(WorkspaceTools.make({ env: { set: { PATH: `${tools}:/usr/bin:/bin` } } }).pipe(Effect.provide(NodeContext.layer)))
    const call = await Effect.runPromise(tools28.prepare({ toolCallId: "c1", tool: "shell", args: { command: line } }, cwd))
    const decided = await PermissionPolicy.decide({ rules: [{ name: "mine", tool: "shell", command: line, decision: "allow" }] }, { sessionId: "s", cwd, call, remembered: [] })
    expect(decided.decision).toBe("ask")
    expect(decided.reason).toContain("bin/mytool")
  })
})

describe("round 27's over-asks (CommandPaths)", () => {
  it("PATH=$PATH:/opt/x — the environment's PATH (absolute folders only) and absolute ones: the rule's", async () => {
    for (const line of ["PATH=$PATH:/opt/x git status", "PATH=/opt/x:${PATH} git status", `PATH="$PATH:/opt/x" git status`, "export PATH=$PATH:/opt/x; git status"]) {
      await allows(folder({ "bin/git": "#!/bin/sh\n" }), line)
    }
    // A relative or empty entry beside it, or one the line set before, is read as before.
    for (const line of ["PATH=bin:$PATH git status", "PATH=$PATH: git status", "PATH=bin:$PATH; PATH=$PATH:/opt/x git status", "export PATH=bin:$PATH; git status"]) {
      expect((await decide(folder({ "bin/git": "#!/bin/sh\n", git: "#!/bin/sh\n" }), line)).decision, line).toBe("ask")
    }
    // Another variable, or a command's output, is known only when it runs.
    for (const line of ["PATH=$HOME/bin:$PATH git status", "PATH=$(pwd):$PATH git status"]) expect((await decide(folder(), line)).decision, line).toBe("ask")
  })

  it("LD_LIBRARY_PATH for the repository's own program: its libraries are its code; a system program's still ask", async () => {
    const files = { "build/app": "#!/bin/sh\n", "build/libapp.so": "" }
    await allows(folder(files), "LD_LIBRARY_PATH=build ./build/app")
    await allows(folder(files), "PATH=build:/usr/bin build/app")
    for (const line of ["LD_LIBRARY_PATH=build nice ./build/app", "export LD_LIBRARY_PATH=build; ./build/app; ls", "LD_LIBRARY_PATH=build ls"]) {
      expect((await decide(folder(files), line)).decision, line).toBe("ask")
    }
  })
})

describe("$PATH as bash reads it (review 53: CommandPaths.knownPathWord; each line that asks ran bin/git and was allowed on 27240b4)", () => {
  /** A repository whose `bin/git` leaves `ran` in it. */
  const planted = () => {
    const cwd = folder({ "bin/git": "#!/bin/sh\n" })
    writeFileSync(join(cwd, "bin", "git"), `#!/bin/sh\ntouch ${JSON.stringify(join(cwd, "ran"))}\n`)
    return cwd
  }

  it("a command's prefix assignments, left to right, and an inner script's line PATH", async () => {
    for (const line of [
      "PATH=bin PATH=$PATH:/usr/bin git status",
      "PATH=bin PATH=$PATH:/usr/bin; git status",
      "PATH=bin PATH=/opt/x:$PATH:/usr/bin git status",
      "PATH=bin eval 'PATH=$PATH:/usr/bin git status'",
      "PATH=bin:/bin; bash -c 'PATH=$PATH:/usr/bin git status'",
      "PATH=bin:/bin; eval 'PATH=$PATH:/usr/bin git status'",
      "PATH=bin:/bin bash -c 'PATH=$PATH:/usr/bin git status'",
      "env PATH=bin:/bin bash -c 'PATH=$PATH:/usr/bin git status'",
      "PATH=bin:/bin; bash -c 'git status' PATH=/usr/bin",
      "PATH=bin:/bin; bash -c 'git status'",
      "PATH=bin:/bin; eval 'git status'",
      "PATH=bin:/bin; eval 'PATH=$PATH git status'",
      "PATH=bin PATH=$(pwd)/x:$PATH:/usr/bin git status",
      "PATH=bin:/bin; eval 'eval \"PATH=\\$PATH:/usr/bin git status\"'"
    ]) {
      expect(runs(planted(), line), `${line} runs bin/git`).toBe(true)
      expect.soft((await decide(planted(), line)).decision, line).toBe("ask")
    }
  })

  it("the environment's PATH where the line set none, or after it (round 28's allows hold)", async () => {
    for (const line of [
      "PATH=$PATH:/opt/x git status",
      "PATH=$PATH:/opt/x PATH=$PATH:/opt/y git status",
      "eval 'PATH=$PATH:/usr/bin git status'",
      "bash -c 'PATH=$PATH:/usr/bin git status'",
      "PATH=/opt/x eval 'PATH=$PATH:/usr/bin git status'",
      "env PATH=/usr/bin bash -c 'PATH=$PATH:/opt/x git status'"
    ]) {
      expect(runs(planted(), line), `${line} runs bin/git`).toBe(false)
      expect((await decide(planted(), line)).decision, line).toBe("allow")
    }
  })
})

describe("held, pinned: what the line itself shows, or reads no program (round 28's decisions)", () => {
  it("a variable naming the program the line runs, or a file that is data, is the rule's", async () => {
    const cwd = folder({ "d.json": "{}\n", "x.js": "", "m": "" })
    for (const line of [
      "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0=./x git status",
      "NODE_PATH=. node x.js",
      "npm_config_script_shell=./x npm test",
      "npm_config_userconfig=./x npm --version",
      "MAGIC=./m file d.json",
      "INPUTRC=./x bash -c true",
      "TCLLIBPATH=. tclsh x.tcl",
      "CLASSPATH=. java -version"
    ]) await allows(cwd, line)
  })

  it("a program file the command runs (awk/sed -f): an exact rule's; a wildcard never covers them; jq and make -f stay their rules'", async () => {
    const cwd = folder({ "p.awk": "BEGIN { system(\"id\") }\n", "s.sed": "1e id\n", "p.jq": ".\n", "M": "all:\n\tid\n", "d.json": "{}\n" })
    const under = async (rule: string, line: string) => {
      const { prepared } = await import("./exactGitRule.js")
      const call = await prepared(cwd, line)
      return (await PermissionPolicy.decide({ rules: [{ name: "mine", tool: "shell", command: rule, decision: "allow" }] }, { sessionId: "s", cwd, call, remembered: [] })).decision
    }
    for (const line of ["awk -f p.awk d.json", "mawk -f p.awk d.json", "sed -f s.sed d.json", "jq -f p.jq d.json", "make -f M"]) expect(await under(line, line), line).toBe("allow")
    for (const [rule, line] of [["awk *", "awk -f p.awk d.json"], ["sed *", "sed -f s.sed d.json"], ["gawk *", "gawk -f p.awk d.json"]] as const) expect(await under(rule, line), line).toBe("ask")
    for (const [rule, line] of [["jq *", "jq -f p.jq d.json"], ["make *", "make -f M"]] as const) expect(await under(rule, line), line).toBe("allow")
  })
})
