/**
 * Red team round 26: what round 25 left. Each line asked below was allowed by an exact rule for it on main (602492b:
 * the cases failed before the fix); those run here (scp, git 2.39, python3 3.11, pip3) ran the repository's
 * `core.fsmonitor` or `json.py`. Tools not installed here (cabextract, unsquashfs, axel, rsync, uv, zsh) are pinned
 * by their decision only.
 */
import { describe, expect, it } from "@effect/vitest"
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { decide, fsmonitor, lineChecks } from "./exactGitRule.js"
import { hostileBelow } from "./gitRepositories.js"
import { execFileSync } from "node:child_process"

/** The hostile repository at d1/d2/d3/ev (below the search for nested ones), an empty folder and a file. */
const { base, repository, folder } = hostileBelow("redteam26", fsmonitor, (cwd) => {
  mkdirSync(join(cwd, "empty"))
  writeFileSync(join(cwd, "a.txt"), "a\n")
})
let made = 0
const { asks, allows } = lineChecks(folder)

describe("copies from another host, unpackers and downloaders round 25 did not list (LineFills)", () => {
  it("scp -r of a .git (a local copy run here), a remote source's name or pattern, rsync and sftp from a host", async () => {
    await asks("scp -r d1/d2/d3/ev/.git . && git status")
    for (const line of [
      "scp -r h:x/.git . && git status", "scp -r 'h:x/*' . && git status", "scp -P 2222 -r h:x/.git empty && git -C empty status",
      "rsync -a h:x/.git . && git status", "rsync -a 'h:x/*' . && git status", "sftp h:x/.git && git status", "sftp -b get.txt h && git status"
    ]) {
      await asks(line, ".", false)
    }
    await allows("scp h:a.txt b.txt && git status")
  })

  it("cabextract, unsquashfs, axel, wget2, lftp and the like fill the folder they write into", async () => {
    for (const line of [
      "cabextract a.cab && git status", "cabextract -d empty a.cab && git -C empty status", "unsquashfs -f -d . a.sqfs && git status",
      "axel http://h/x && git status", "wget2 -r http://h/ && git status", "lftp -c 'mirror http://h/ .' && git status",
      "yt-dlp http://h/v && git status", "httrack http://h/ && git status"
    ]) {
      await asks(line, ".", false)
    }
    // Listing or testing writes nothing; axel's -o naming a file beside the repository is as wget's -O.
    await allows("cabextract -l a.cab && git status")
    await allows("unsquashfs -l a.sqfs && git status")
  })

  it("wget -O with -e settings that cannot make it recursive stays one file (an over-ask before); others fill", async () => {
    await allows("wget -q -e robots=off -O page.html http://h/x && git status")
    await allows("wget -q --execute=check_certificate=off -O page.html http://h/x && git status")
    await asks("wget -q -e recursive=on -O page.html http://h/x && git status", ".", false)
    await asks("wget -q -e robots=off -e mirror=on -O page.html http://h/x && git status", ".", false)
    await asks("wget -q -erecursive=on -O page.html http://h/x && git status", ".", false)
  })
})

describe("zsh's - precommand modifier (CommandPaths.reservedWords, shellRuns)", () => {
  it("runs the git or cd after it (zsh not installed here: decisions only)", async () => {
    // (A script word holding `- …/…` asks anyway: read as an option cluster, its `/…` suffixes are paths outside.)
    await asks("zsh -c 'cd d1; - git -C d2 -C d3 -C ev status'", ".", false)
    await asks("zsh -c 'cd d1; - cd d2; cd d3; cd ev; git status'", ".", false)
    await asks("zsh -c 'cd d1; noglob - cd d2; cd d3; cd ev; git status'", ".", false)
    // In bash `-` is a command not found: its git is read all the same.
    await asks("- git -C d1/d2/d3/ev status", ".", false)
  })
})

/** A folder holding data.json and `module` in `below` that leaves `ran` in cwd when imported. */
const pythonFolder = (module: string, below = "") => {
  const cwd = join(base, `p${made++}`)
  mkdirSync(join(cwd, below), { recursive: true })
  writeFileSync(join(cwd, below, module), `open(${JSON.stringify(join(cwd, "ran"))}, "a").write("ran\\n")\n`)
  writeFileSync(join(cwd, below, "data.json"), `{"a": 1}\n`)
  return cwd
}
const pythonRuns = (cwd: string, line: string) => {
  rmSync(join(cwd, "ran"), { force: true })
  try {
    execFileSync("/bin/bash", ["-c", line], { cwd, stdio: "pipe" })
  } catch {
    // What counts is whether the repository's file ran.
  }
  return existsSync(join(cwd, "ran"))
}
const pythonAsks = async (line: string, module: string, below = "", run = true) => {
  if (run) expect(pythonRuns(pythonFolder(module, below), line), `${line} runs the repository's ${module}`).toBe(true)
  const decided = await decide(pythonFolder(module, below), line)
  expect(decided.decision, line).toBe("ask")
  expect(decided.policy, line).toBe("repository-python")
}

describe("a Python's folder round 25 did not read (CommandPaths)", () => {
  // Held on main (env -C's folder was one the line's later commands were read from too); now read as the pip3's own.
  it("held: PYTHONPATH=. env -C sub pip3, the . is sub, where env moves first", async () => {
    await pythonAsks("PYTHONPATH=. env -C sub pip3 --version", "json.py", "sub")
    await pythonAsks("PYTHONPATH=. env --chdir=sub pip3 --version", "json.py", "sub")
    // env's options end at its program: pip3's own words move nothing.
    expect((await decide(pythonFolder("json.py", "sub"), "PYTHONPATH=sub env pip3 --version -C x")).policy).toBe("repository-python")
  })

  it("uv's options before run, and --directory (uv not installed here: decisions only)", async () => {
    await pythonAsks("uv --quiet run -m json.tool data.json", "json.py", "", false)
    await pythonAsks("uv --cache-dir c run --no-sync -m json.tool data.json", "json.py", "", false)
    await pythonAsks("uv --directory sub run -m json.tool data.json", "json.py", "sub", false)
    await pythonAsks("uv run --directory=sub python -m json.tool data.json", "json.py", "sub", false)
    expect((await decide(pythonFolder("json.py"), "uv --version")).decision).toBe("allow")
  })

  it("held: set -a exports a bare PYTHONPATH, read as an export already; a script run by name is the rule's", async () => {
    await pythonAsks("set -a; PYTHONPATH=.; pip3 --version", "json.py")
    // sys.path[0] is the script's folder: a json.py beside tools/x.py runs, but tools/x.py is the repository's code the rule runs.
    const cwd = pythonFolder("json.py", "tools")
    writeFileSync(join(cwd, "tools", "x.py"), "import json\n")
    expect(pythonRuns(cwd, "python3 tools/x.py")).toBe(true)
    expect((await decide(cwd, "python3 tools/x.py")).decision).toBe("allow")
  })
})

describe("one level deeper: PERL5LIB, Perl's PYTHONPATH (CommandPaths, PythonShadows)", () => {
  /** A folder with `file` (below cwd) that leaves `ran` in cwd when Perl loads it, and a.txt. */
  const perlFolder = (file: string) => {
    const cwd = join(base, `l${made++}`)
    mkdirSync(join(cwd, file, ".."), { recursive: true })
    writeFileSync(join(cwd, file), `BEGIN { open(my $f, ">", ${JSON.stringify(join(cwd, "ran"))}) } 1;\n`)
    writeFileSync(join(cwd, "a.txt"), "a\n")
    writeFileSync(join(cwd, "data.json"), `{"a": 1}\n`)
    return cwd
  }
  const perlAsks = async (line: string, file: string) => {
    expect(pythonRuns(perlFolder(file), line), `${line} loads the repository's ${file}`).toBe(true)
    const decided = await decide(perlFolder(file), line)
    expect(decided.decision, line).toBe("ask")
    expect(decided.policy, line).toBe("repository-python")
    expect(decided.reason, line).toContain(file.split("/").slice(0, -1).join("/") || file)
  }
  it("a relative PERL5LIB entry puts a repository's strict.pm or JSON/PP.pm before Perl's own, for any Perl tool", async () => {
    await perlAsks("PERL5LIB=. shasum a.txt", "strict.pm")
    await perlAsks("PERLLIB=. shasum a.txt", "strict.pm")
    await perlAsks("export PERL5LIB=lib; json_pp < data.json", "lib/JSON/PP.pm")
    await perlAsks("PERL5LIB=x:lib env json_pp < data.json", "lib/JSON/PP.pm")
  })

  it("a repository's own modules, no PERL5LIB: the rule's (an absolute entry asks as a path outside)", async () => {
    for (const line of ["PERL5LIB=lib shasum a.txt", "shasum a.txt"]) expect((await decide(perlFolder("lib/My/App.pm"), line)).decision, line).toBe("allow")
    expect((await decide(perlFolder("strict.pm"), "shasum a.txt")).decision).toBe("allow")
  })
})

describe("held: pagers and external diffs a repository's config names (GitPrograms)", () => {
  it("git log with core.pager, git diff with diff.external ask (git 2.39 runs the external diff for a changed file)", async () => {
    const pager = repository(`[core]\n\tpager = "touch pager-ran; cat"\n`)
    expect((await decide(pager, "git log --oneline")).policy).toBe("repository-git")
    const external = repository(`[diff]\n\texternal = "sh -c 'touch ../external-ran'"\n`)
    writeFileSync(join(external, "a.txt"), "b\n")
    execFileSync("/bin/sh", ["-c", "git diff || true"], { cwd: external, stdio: "pipe" })
    expect(existsSync(join(external, "..", "external-ran"))).toBe(true)
    expect((await decide(external, "git diff")).policy).toBe("repository-git")
  })
})
