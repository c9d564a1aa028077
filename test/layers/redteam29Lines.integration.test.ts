/**
 * Red team round 29: what round 28 left. Each line asked below was allowed by an exact rule for it on main (8c586a1:
 * the cases failed before the fix, unless a case says it is pinned); where the program is installed here (Python 3.11,
 * javac 17, git 2.39, bash 5.2) running the line ran the repository's file.
 */
import { describe, expect, it } from "@effect/vitest"
import { copyFileSync, mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { execFileSync } from "node:child_process"
import { decide, fsmonitor, prepared } from "./exactGitRule.js"
import { plantedRepositories, runs, touches } from "./plantedRepositories.js"

const { base, folder } = plantedRepositories("redteam29")
const asks = async (cwd: string, line: string, named: string, policy = "repository-python") => {
  const decided = await decide(cwd, line)
  const shown = line.slice(0, 200)
  expect(decided.decision, shown).toBe("ask")
  expect(decided.policy, shown).toBe(policy)
  expect(decided.reason, shown).toContain(named)
}
const allows = async (cwd: string, line: string) => expect((await decide(cwd, line)).decision, line).toBe("allow")

describe("PYTHONPATH's absolute entries inside cwd (CommandPaths, as round 28 did for PATH's)", () => {
  it("PYTHONPATH=<cwd>/lib python3 -P -m json.tool ran lib/json.py; its own module is the rule's", async () => {
    const cwd = folder({ "d.json": "{}\n", "lib/json.py": "", "src/mine.py": "" })
    writeFileSync(join(cwd, "lib", "json.py"), touches(cwd))
    expect(runs(cwd, `PYTHONPATH=${cwd}/lib python3 -P -m json.tool d.json`)).toBe(true)
    for (const line of [`PYTHONPATH=${cwd}/lib python3 -P -m json.tool d.json`, `export PYTHONPATH=${cwd}/src:${cwd}/lib; pip3 --version`]) {
      await asks(cwd, line, "lib/json.py")
    }
    // The repository's own module: the rule's.
    await allows(cwd, `PYTHONPATH=${cwd}/src python3 -P -m mine`)
  })

  it("PYTHONPATH naming more than 64 folders asks, as PATH's and PERL5LIB's do", async () => {
    const folders = (n: number) => Array.from({ length: n }, (_, i) => String(i)).join(":")
    await asks(folder({ "d.json": "" }), `PYTHONPATH=${folders(65)} pip3 --version`, "more than 64 folders")
    await allows(folder({ "d.json": "" }), `PYTHONPATH=${folders(64)} pip3 --version`)
  })
})

describe("a line of thousands of loader variables (round 28's bench)", () => {
  const python = execFileSync("python3", ["-c", "import sys; print(f'python{sys.version_info[0]}.{sys.version_info[1]}')"]).toString().trim()
  const unit = "HOME=. PYTHONUSERBASE=u PYTHONHOME=h PERL5OPT=-Ix git status; "
  const hostile = () => folder({ ".gitconfig": fsmonitor, [`u/lib/${python}/site-packages/usercustomize.py`]: "", [`h/lib/${python}/os.py`]: "", "x/strict.pm": "1;\n" })

  it("4,000 commands are over the 128 KiB a shell line takes: a typed refusal (what 'crashed' the bench's own script), not a defect", async () => {
    const failed = await prepared(hostile(), unit.repeat(4000)).then(() => undefined, (error: unknown) => String(error))
    expect(failed).toContain("command is longer than 131072 characters")
  })

  it("the most of them a line holds asks, naming the first files, and the check completes", async () => {
    const line = unit.repeat(Math.floor(131_072 / unit.length))
    const decided = await decide(hostile(), line)
    expect(decided.decision).toBe("ask")
    expect(decided.reason).toContain("core.fsmonitor")
  })
})

describe("javac's annotation processors from the class path (CommandPaths, PythonShadows)", () => {
  const services = "META-INF/services/javax.annotation.processing.Processor"
  const javac = (() => {
    try {
      execFileSync("javac", ["-version"], { stdio: "pipe" })
      return true
    } catch {
      return false
    }
  })()
  // A processor `P` that leaves `ran` in the folder javac runs in when javac loads it, compiled once.
  const processor = join(base, "processor")
  if (javac) {
    mkdirSync(processor)
    writeFileSync(join(processor, "P.java"), [
      "import javax.annotation.processing.*;",
      "@SupportedAnnotationTypes(\"*\")",
      "public class P extends AbstractProcessor {",
      "  static { try { new java.io.File(\"ran\").createNewFile(); } catch (Exception e) {} }",
      "  public boolean process(java.util.Set<? extends javax.lang.model.element.TypeElement> a, RoundEnvironment r) { return false; }",
      "}"
    ].join("\n"))
    execFileSync("javac", ["-d", processor, join(processor, "P.java")], { stdio: "pipe" })
  }
  /** A repository holding `P.class`, listed in its services file. */
  const planted = () => {
    const cwd = folder({ "X.java": "public class X {}\n", [services]: "P\n", "src/Y.java": "class Y {}\n", "tools/a": "" })
    if (javac) copyFileSync(join(processor, "P.class"), join(cwd, "P.class"))
    // Jars: one listing processors, one that does not (zipped by Python's zipfile: names stored as javac reads them).
    mkdirSync(join(cwd, "lib"))
    const zip = "import sys, zipfile\nwith zipfile.ZipFile(sys.argv[1], 'w', zipfile.ZIP_DEFLATED) as z: z.writestr(sys.argv[2], 'P\\n')"
    execFileSync("python3", ["-c", zip, join(cwd, "lib", "p.jar"), services])
    execFileSync("python3", ["-c", zip, join(cwd, "tools", "q.jar"), "META-INF/MANIFEST.MF"])
    return cwd
  }

  it("a plain javac in a repository runs the processors its class path (default `.`) lists: it asks", async () => {
    if (javac) expect(runs(planted(), "javac X.java")).toBe(true)
    for (const line of ["javac X.java", "javac -d out X.java", "nice javac X.java", "javac -cp .:lib X.java", "CLASSPATH=. javac X.java", "javac -cp lib/p.jar X.java", "javac -cp 'lib/*' -proc:only X.java", "javac --class-path=src:lib/p.jar X.java"]) {
      await asks(planted(), line, services)
    }
  })

  it("-proc:none, a processor path the line names, or a class path without a services file: the rule's", async () => {
    if (javac) expect(runs(planted(), "javac -proc:none X.java")).toBe(false)
    for (const line of ["javac -proc:none X.java", "javac -processorpath tools X.java", "JDK_JAVAC_OPTIONS= java -cp . X", "javac -cp src X.java", "javac -cp 'tools/*' X.java", "java -cp . X"]) await allows(planted(), line)
  })
})

describe("javac's options from an @file or JDK_JAVAC_OPTIONS (CommandPaths: review 57)", () => {
  it("javac @opts and JDK_JAVAC_OPTIONS='-cp tools' ran tools' processor, allowed on main: a javac line with either asks", async () => {
    const cwd = folder({ "X.java": "public class X {}\n", "tools/META-INF/services/javax.annotation.processing.Processor": "P\n", opts: "-processorpath tools\n" })
    for (const line of ["javac @opts X.java", "javac -proc:none @opts X.java", "JDK_JAVAC_OPTIONS='-cp tools' javac X.java", "env JDK_JAVAC_OPTIONS='-cp tools' javac -cp src X.java", "export JDK_JAVAC_OPTIONS='-cp tools'; javac -processorpath src X.java"]) {
      await asks(cwd, line, "JDK_JAVAC_OPTIONS")
    }
  })
})

describe("each case's question says its own reason (PermissionPolicy, PythonShadows)", () => {
  const python = execFileSync("python3", ["-c", "import sys; print(f'python{sys.version_info[0]}.{sys.version_info[1]}')"]).toString().trim()
  it("the user site, PYTHONHOME, PATH, a library folder, Perl, javac and a Python's own folder each name what they are", async () => {
    for (const [files, line, reason] of [
      [{ [`.local/lib/${python}/site-packages/x.pth`]: "" }, "HOME=. git status", "a Python's own standard library or start-up code"],
      [{ [`u/lib/${python}/site-packages/usercustomize.py`]: "" }, "PYTHONUSERBASE=u python3 -c 1", "a Python's own standard library or start-up code"],
      [{ "bin/git": "#!/bin/sh\n" }, "PATH=bin:/usr/bin git status", "run in place of the system's programs"],
      [{ "so/libselinux.so.1": "" }, "LD_LIBRARY_PATH=so ls", "loaded in place of the system's shared libraries"],
      [{ "strict.pm": "1;\n", "a.txt": "" }, "PERL5LIB=. shasum a.txt", "loaded in place of Perl's own modules"],
      [{ "json.py": "" }, "python3 -m json.tool", "imported in place of Python's standard modules"],
      [{ "META-INF/services/javax.annotation.processing.Processor": "P\n" }, "javac X.java", "annotation processors javac runs"]
    ] as const) {
      const decided = await decide(folder(files), line)
      expect(decided.decision, line).toBe("ask")
      expect(decided.reason, line).toContain(reason)
      // No other case's reason.
      expect(decided.reason, line).not.toContain(reason.includes("Perl") ? "Python's" : "Perl")
    }
  })
})

describe("an argument that looks like an assignment (CommandPaths)", () => {
  /** A repository whose `bin/git` leaves `ran` in it, with a `lib/json.py` and `lib/strict.pm`. */
  const planted = () => {
    const cwd = folder({ "bin/git": "#!/bin/sh\n", "lib/json.py": "", "lib/strict.pm": "1;\n" })
    writeFileSync(join(cwd, "bin", "git"), `#!/bin/sh\necho > ${JSON.stringify(join(cwd, "ran"))}\n`)
    return cwd
  }

  it("echo's or a commit message's PATH=… sets no variable: the rule's (an over-ask on main)", async () => {
    for (const line of ['echo "PATH=bin"', "echo PATH=bin", 'git commit --allow-empty -m "PATH=bin"', 'echo "PYTHONPATH=lib"', "printf %s PERL5LIB=lib"]) {
      expect(runs(planted(), line), line).toBe(false)
      await allows(planted(), line)
    }
  })

  it("a real prefix, env's (quoted too) and eval's script still ask: eval 'PATH=bin git status' ran bin/git, allowed on main", async () => {
    for (const line of ["PATH=bin git status", "env PATH=bin git status", 'env "PATH=bin" git status', "env -u X PATH=bin git status", "eval 'PATH=bin git status'", 'eval "PATH=bin:/bin" git status']) {
      expect(runs(planted(), line), line).toBe(true)
      await asks(planted(), line, "bin/git")
    }
  })
})

describe("a setter's setter, cross-env, env -S (CommandPaths: review 57)", () => {
  /** A repository whose `bin/git` leaves `ran` in it, and a `lib/json.py` that does. */
  const planted = () => {
    const cwd = folder({ "bin/git": "#!/bin/sh\n", "d.json": "{}\n", "lib/json.py": "" })
    writeFileSync(join(cwd, "bin", "git"), `#!/bin/sh\necho > ${JSON.stringify(join(cwd, "ran"))}\n`)
    writeFileSync(join(cwd, "lib", "json.py"), touches(cwd))
    return cwd
  }

  it("env env PATH=bin, env FOO=1 env PATH=bin, env -u X env PATH=bin ran bin/git, allowed on main: they ask", async () => {
    for (const line of ["env env PATH=bin git status", "env FOO=1 env PATH=bin git status", "env -u X env PATH=bin git status", "env -iu X PATH=bin git status"]) {
      expect(runs(planted(), line), line).toBe(true)
      await asks(planted(), line, "bin/git")
    }
    expect(runs(planted(), "env env PYTHONPATH=lib python3 -m json.tool d.json")).toBe(true)
    await asks(planted(), "env env PYTHONPATH=lib python3 -m json.tool d.json", "lib/json.py")
  })

  it("sudo env, doas env, cross-env, cross-env-shell, npx cross-env set PATH for git: they ask (not run here)", async () => {
    for (const line of ["sudo env PATH=bin git status", "sudo -u me env PATH=bin git status", "doas env PATH=bin git status", "cross-env PATH=bin git status", "cross-env-shell PATH=bin git status", "npx cross-env PATH=bin git status", "npx cross-env FOO=1 env PATH=bin git status"]) {
      await asks(planted(), line, "bin/git")
    }
  })

  it("env -S splits its text into assignments: read as those words, or asked when it quotes or expands", async () => {
    for (const line of ["env -S 'PATH=bin git status'", "env --split-string='PATH=bin git status'", "env -SPATH=bin git status", "env --split 'env PATH=bin git status'"]) {
      expect(runs(planted(), line), line).toBe(true)
      await asks(planted(), line, "bin/git")
    }
    // A quoted or expanding text is not split here: asked as a word known only when env runs (`outside-cwd`'s question).
    for (const line of [`env -S 'PATH="bin" git status'`, "env -S 'PATH=${X:-bin} git status'"]) {
      expect(await decide(planted(), line), line).toMatchObject({ decision: "ask", policy: "outside-cwd" })
    }
    // Nothing set: the rule's.
    for (const line of ["env -S 'git status'", "env env git status", "cross-env FOO=1 git status"]) await allows(planted(), line)
  })
})
