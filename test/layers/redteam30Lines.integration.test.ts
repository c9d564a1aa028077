/**
 * Red team round 30: what round 29 left. Each line asked below was allowed by an exact rule for it on main (eb8cccd:
 * the cases failed before the fix, unless a case says it is pinned); where the program is installed here (git 2.39,
 * bash 5.2, util-linux 2.38's unshare) running the line ran the repository's file. sudo, doas and cross-env are not
 * installed (and sudo is not run here): decisions only.
 */
import { describe, expect, it } from "@effect/vitest"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as Effect from "effect/Effect"
import { execFileSync } from "node:child_process"
import { copyFileSync, mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import * as CommandRisk from "../../src/layers/workspace/CommandRisk.js"
import * as WorkspaceTools from "../../src/layers/WorkspaceTools.js"
import { decide, fsmonitor } from "./exactGitRule.js"
import { plantedRepositories, runs } from "./plantedRepositories.js"

const { base, folder } = plantedRepositories("redteam30")
const asks = async (cwd: string, line: string, named: string, policy = "repository-git") => {
  const decided = await decide(cwd, line)
  expect(decided.decision, line).toBe("ask")
  expect(decided.policy, line).toBe(policy)
  expect(decided.reason, line).toContain(named)
}
const allows = async (cwd: string, line: string) => expect((await decide(cwd, line)).decision, line).toBe("allow")
/**
 * A repository holding, at `deep` (past the two levels the check searches below where a git starts), a repository with a
 * hostile `core.fsmonitor`: it leaves `fsmonitor-ran` there when a git runs in it.
 */
const deep = "d1/d2/d3/ev"
const hostileDeep = () => {
  const cwd = folder({ "d.json": "{}\n", "d1/d2/d3/ev/a": "" })
  execFileSync("git", ["init", "-q", join(cwd, deep)])
  writeFileSync(join(cwd, deep, ".git", "config"), fsmonitor, { flag: "a" })
  return cwd
}
/** A repository whose own `.git/config` has a hostile `core.fsmonitor`. */
const hostile = () => {
  const cwd = folder({ "d.json": "{}\n" })
  writeFileSync(join(cwd, ".git", "config"), fsmonitor, { flag: "a" })
  return cwd
}

describe("a bare assignment of an exported variable (CommandPaths: git's homes)", () => {
  it("HOME=.; git status ran ./.gitconfig's core.fsmonitor (HOME is exported already), allowed on main: it asks", async () => {
    const files = { ".gitconfig": fsmonitor, "x/.gitconfig": fsmonitor }
    for (const line of ["HOME=.; git status", "HOME=.\ngit status", "set -a; HOME=x; git status", "HOME=x && git status"]) {
      expect(runs(folder(files), line, "fsmonitor-ran"), line).toBe(true)
      await asks(folder(files), line, "core.fsmonitor")
    }
  })

  it("an argument that looks like HOME=. sets nothing: git status -- 'HOME=.', echo HOME=. are the rule's (an over-ask on main)", async () => {
    const files = { ".gitconfig": fsmonitor, "a.txt": "" }
    for (const line of ['git status -- "HOME=."', "echo HOME=.; git status", 'git log --grep "XDG_CONFIG_HOME=."', 'git status -- "GIT_CONFIG_GLOBAL=.gitconfig"']) {
      expect(runs(folder(files), line, "fsmonitor-ran"), line).toBe(false)
      await allows(folder(files), line)
    }
    // A real setting still asks (round 28, pinned).
    for (const line of ["HOME=. git status", "env HOME=. git status", "export HOME=.; git status"]) await asks(folder(files), line, "core.fsmonitor")
    // let's words are assignments too: read as before (pinned; git reads ./1/.gitconfig).
    await asks(folder({ "1/.gitconfig": fsmonitor }), "let HOME=1; git status", "core.fsmonitor")
  })
})

describe("a builtin that sets a variable the check reads (CommandPaths)", () => {
  it("printf -v HOME ., for HOME in ., read HOME, declare -n ran ./.gitconfig's core.fsmonitor, allowed on main: they ask", async () => {
    const files = { ".gitconfig": fsmonitor, "a.txt": "" }
    for (const line of [
      "printf -v HOME . && git status", "printf -vHOME . && git status", "for HOME in .; do git status; done", "read HOME <<< . ; git status",
      "declare -n R=HOME; R=.; git status"
    ]) {
      expect(runs(folder(files), line, "fsmonitor-ran"), line).toBe(true)
      expect(await decide(folder(files), line), line).toMatchObject({ decision: "ask", policy: "outside-cwd" })
    }
    const cwd = folder({ "bin/git": "#!/bin/sh\n" })
    writeFileSync(join(cwd, "bin", "git"), `#!/bin/sh\necho > ${JSON.stringify(join(cwd, "ran"))}\n`)
    for (const line of ["printf -v PATH bin:/usr/bin:/bin; git status", "for PATH in bin:/usr/bin:/bin; do git status; done"]) {
      expect(runs(cwd, line), line).toBe(true)
      expect(await decide(cwd, line), line).toMatchObject({ decision: "ask", policy: "outside-cwd" })
    }
  })

  it("held: other variables, and printf's words, are the rule's", async () => {
    const files = { ".gitconfig": fsmonitor, "a.txt": "" }
    for (const line of ["printf -v x %s y; git status", "for f in a b; do git status; done", "read -r line < a.txt; git status", "printf '%s\\n' HOME PATH", "declare -x FOO=1; git status"]) {
      await allows(folder(files), line)
    }
  })
})

describe("cross-env and cross-env-shell run the command after them (CommandRisk, CommandPaths)", () => {
  it("the git they run is read: cross-env git status, cross-env-shell 'git status' with a hostile core.fsmonitor ask", async () => {
    for (const line of ["cross-env git status", "cross-env FOO=1 git status", "cross-env-shell git status", "cross-env-shell 'git status'", "npx cross-env-shell 'git status'"]) {
      await asks(hostile(), line, "core.fsmonitor")
    }
    for (const line of [`cross-env-shell 'cd ${deep} && git status'`, `cross-env-shell FOO=1 'cd ${deep}; git status'`, `cross-env git -C ${deep} status`]) {
      await asks(hostileDeep(), line, "core.fsmonitor")
    }
  })

  it("cross-env's setter is any word with NAME= in it (its regex is not anchored): cross-env 'x PATH=bin' git status asks", async () => {
    const cwd = folder({ "bin/git": "#!/bin/sh\n" })
    await asks(cwd, "cross-env 'x PATH=bin' git status", "bin/git", "repository-python")
  })

  it("a wildcard never stands for them: shell:* does not allow cross-env-shell 'touch x'", async () => {
    expect(CommandRisk.classify(["cross-env-shell", "touch x"]).general).toBe(false)
    expect(CommandRisk.classify(["cross-env", "FOO=1", "touch", "x"]).general).toBe(false)
    const tools = Effect.runSync(WorkspaceTools.make().pipe(Effect.provide(NodeContext.layer)))
    const cwd = folder()
    for (const command of ["cross-env-shell 'touch x'", "cross-env-shell touch x", "cross-env FOO=1 touch x"]) {
      const call = await Effect.runPromise(tools.prepare({ toolCallId: "c1", tool: "shell", args: { command } }, cwd))
      const decided = PermissionPolicy.decide({ rules: [{ name: "mine", tool: "shell", command: "*", decision: "allow" }] }, { sessionId: "s", cwd, call, remembered: [] })
      expect(decided.decision, command).toBe("ask")
    }
  })

  it("held: nothing hostile, the rule's", async () => {
    for (const line of ["cross-env FOO=1 git status", "cross-env-shell 'git status'", "cross-env NODE_ENV=test git status"]) await allows(folder(), line)
  })
})

describe("bash's time keyword times the command after it, prefix and all (CommandPaths)", () => {
  it("time PATH=bin git status ran bin/git, allowed on main: it asks; a wrapper's assignment-like words still count", async () => {
    const planted = () => {
      const cwd = folder({ "bin/git": "#!/bin/sh\n" })
      writeFileSync(join(cwd, "bin", "git"), `#!/bin/sh\necho > ${JSON.stringify(join(cwd, "ran"))}\n`)
      return cwd
    }
    for (const line of ["time PATH=bin git status", "time -p PATH=bin git status", "! time PATH=bin git status"]) {
      expect(runs(planted(), line), line).toBe(true)
      await asks(planted(), line, "bin/git", "repository-python")
    }
    // watch runs its words through a shell: its GIT_DIR= word is read as before (pinned).
    expect((await decide(hostileDeep(), `watch -n 1 GIT_DIR=${deep}/.git git status`)).decision).toBe("ask")
    await allows(planted(), "time git status")
  })
})

describe("sudo's and doas's options as their getopt reads them (CommandPaths: setters, moves)", () => {
  it("a cluster or a prefix before PATH=: sudo -Eu me PATH=bin git status would run bin/git as root: it asks", async () => {
    const cwd = folder({ "bin/git": "#!/bin/sh\n" })
    for (const line of ["sudo -Eu me PATH=bin git status", "sudo -nu me PATH=bin git status", "sudo -Hu me PATH=bin git status", "sudo --us me PATH=bin git status", "sudo -nEHu me PATH=bin git status", "sudo -C 3 -Eu me PATH=bin git status", "doas -nu me PATH=bin git status"]) {
      await asks(cwd, line, "bin/git", "repository-python")
    }
    // Read so on main already (pinned).
    for (const line of ["sudo --user=me PATH=bin git status", "sudo -E -- PATH=bin git status", "sudo -u me -g g PATH=bin git status"]) await asks(cwd, line, "bin/git", "repository-python")
  })

  it("sudo -D dir (--chdir) runs its git there: the hostile sub's core.fsmonitor asks", async () => {
    for (const line of ["sudo -D DIR git status", "sudo --chdir=DIR git status", "sudo --chd DIR git status", "sudo -u me -D DIR git status", "sudo -nD DIR git status"]) {
      await asks(hostileDeep(), line.replace("DIR", deep), "core.fsmonitor")
    }
    // A value glued to its letter asks already, its folders read as paths outside cwd (pinned).
    for (const line of ["sudo -DDIR git status", "sudo -nDDIR git status"]) expect((await decide(hostileDeep(), line.replace("DIR", deep))).decision, line).toBe("ask")
  })

  it("held: a plain sudo or doas git in a clean repository is the rule's", async () => {
    for (const line of ["sudo -u me git status", "sudo -Eu me git status", "doas -u me git status", "sudo -D sub git status", "sudo -D sub PATH=/usr/bin git status"]) await allows(folder({ "sub/a": "" }), line)
  })
})

describe("unshare's and nsenter's working folder (CommandPaths.movesTo)", () => {
  it("unshare -w sub git status ran sub's core.fsmonitor, allowed on main: it asks", async () => {
    for (const given of ["unshare -w DIR git status", "unshare --wd=DIR git status", "unshare --wd DIR git status", "unshare -f -w DIR git status", "nsenter -t 1 --wd=DIR git status", "nsenter --wdns DIR -t 1 git status"]) {
      const line = given.replace("DIR", deep)
      if (line.startsWith("unshare")) expect(runs(hostileDeep(), line, `${deep}/fsmonitor-ran`), line).toBe(true)
      await asks(hostileDeep(), line, "core.fsmonitor")
    }
    await allows(folder({ "sub/a": "" }), "unshare -w sub git status")
  })
})

describe("Maven's launcher gives its JVM the project's .mvn/jvm.config (CommandPaths, PythonShadows)", () => {
  const installed = (program: string, version: string) => {
    try {
      execFileSync(program, [version], { stdio: "pipe" })
      return true
    } catch {
      return false
    }
  }
  const java = installed("javac", "-version") && installed("mvn", "-v")
  // A Java agent that leaves `ran` in the folder the JVM starts in, made once (zipped by Python's zipfile).
  const agent = join(base, "agent")
  if (java) {
    mkdirSync(agent)
    writeFileSync(join(agent, "A.java"), 'public class A { public static void premain(String a) throws Exception { new java.io.File("ran").createNewFile(); } }\n')
    execFileSync("javac", ["-d", agent, join(agent, "A.java")], { stdio: "pipe" })
    const zip = "import sys, zipfile\nwith zipfile.ZipFile(sys.argv[1], 'w') as z:\n  z.writestr('META-INF/MANIFEST.MF', 'Manifest-Version: 1.0\\nPremain-Class: A\\n\\n')\n  z.write(sys.argv[2], 'A.class')"
    execFileSync("python3", ["-c", zip, join(agent, "a.jar"), join(agent, "A.class")])
  }
  /** A repository whose `.mvn/jvm.config` names `config`, with the agent as its `a.jar`. */
  const planted = (config = "-Xmx512m -javaagent:a.jar\n") => {
    const cwd = folder({ ".mvn/jvm.config": config, "pom.xml": "<project/>\n", "sub/a": "" })
    if (java) copyFileSync(join(agent, "a.jar"), join(cwd, "a.jar"))
    return cwd
  }

  it("mvn -v ran the repository's agent, allowed by an exact rule on main: it asks, naming the file", async () => {
    if (java) expect(runs(planted(), "mvn -v")).toBe(true)
    for (const line of ["mvn -v", "mvn --version", "nice mvn -q -v", "cd sub && mvn -v", "mvn -f sub/a -v", "env -C sub mvn -v", "mvnDebug -v"]) {
      await asks(planted(), line, ".mvn/jvm.config", "repository-python")
    }
    for (const config of ["-agentpath:./x.so", "@args", "-XX:OnError=./x.sh", "-Djava.system.class.loader=X -cp x.jar", "-Xbootclasspath/a:x.jar", "-Dx=*", "-Dmaven.ext.class.path=x.jar"]) {
      await asks(planted(config), "mvn -v", ".mvn/jvm.config", "repository-python")
    }
    const decided = await decide(planted(), "mvn -v")
    expect(decided.reason).toContain("options Maven's launcher gives the JVM")
  })

  it("held: memory, flags, properties and module openings load no code; no .mvn/jvm.config: the rule's", async () => {
    const common = "-Xmx2g -Xms512m -Xss4m -XX:+UseG1GC -XX:MaxMetaspaceSize=512m -Dfile.encoding=UTF-8 -Dorg.slf4j.simpleLogger.defaultLogLevel=warn\n" +
      "--add-opens java.base/java.lang=ALL-UNNAMED --add-exports=jdk.compiler/com.sun.tools.javac.api=ALL-UNNAMED -Djava.awt.headless=true\n"
    if (java) expect(runs(planted(common), "mvn -v")).toBe(false)
    for (const line of ["mvn -v", "mvn -q test", "cd sub && mvn -v"]) await allows(planted(common), line)
    await allows(folder({ "pom.xml": "<project/>\n", ".mvn/maven.config": "-T 4\n" }), "mvn -v")
    await allows(folder({ "pom.xml": "<project/>\n" }), "mvn -v")
  })
})
