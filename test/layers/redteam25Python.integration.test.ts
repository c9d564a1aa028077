/**
 * Red team round 25, away from git: a Python started with `-c`, `-m` or its program from the line puts the folder it
 * starts in first on `sys.path`, so a repository's `json.py` runs when the user's allowed `python3 -m json.tool x.json`
 * imports json. Each line, run with python3 (3.11 here), ran the repository's file, and an exact rule for it allowed
 * it on main (d3707db: the cases failed before); the rule now asks (`PythonShadows`).
 */
import { describe, expect, it } from "@effect/vitest"
import { execFileSync } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll } from "vitest"
import { decide, prepared } from "./exactGitRule.js"

const base = realpathSync(mkdtempSync(join(tmpdir(), "effect-agent-redteam25p-")))
afterAll(() => rmSync(base, { recursive: true, force: true }))
let made = 0
/** A folder holding data.json and `module` (a file, or a package folder with `__init__.py`) that leaves `ran` when imported; `below` puts it in sub/. */
const folder = (module: string, below = "") => {
  const cwd = join(base, `c${made++}`)
  const at = join(cwd, below)
  mkdirSync(at, { recursive: true })
  const code = `open(${JSON.stringify(join(cwd, "ran"))}, "a").write("ran\\n")\n`
  if (module.endsWith(".py")) writeFileSync(join(at, module), code)
  else {
    mkdirSync(join(at, module))
    writeFileSync(join(at, module, "__init__.py"), code)
  }
  writeFileSync(join(at, "data.json"), `{"a": 1}\n`)
  return cwd
}
const runs = (cwd: string, line: string) => {
  try {
    execFileSync("/bin/bash", ["-c", line], { cwd, stdio: "pipe" })
  } catch {
    // What counts is whether the repository's file ran.
  }
  return existsSync(join(cwd, "ran"))
}
const check = async (line: string, module: string, below = "") => {
  expect(runs(folder(module, below), line), `${line} runs the repository's ${module}`).toBe(true)
  const decided = await decide(folder(module, below), line)
  expect(decided.decision, line).toBe("ask")
  expect(decided.policy).toBe("repository-python")
  return decided
}

describe("a Python importing a repository's file as a standard module", () => {
  it("python3 -m json.tool, -c 'import json', a package json/, venv's argparse, after a cd or a wrapper", async () => {
    const decided = await check("python3 -m json.tool data.json", "json.py")
    // The question names the file, never its content.
    expect(decided.reason).toContain("json.py")
    await check(`python3 -c 'import json; print(json.load(open("data.json")))'`, "json.py")
    await check("python3 -m json.tool data.json", "json")
    await check("cat data.json | python3 -m json.tool", "json.py")
    await check("python3 -m venv --help", "argparse.py")
    await check("cd sub && python3 -m json.tool data.json", "json.py", "sub")
    await check("nice python3 -c 'import json'", "json.py")
  })

  it("-I and -P leave the folder off the path, a script the line names is the rule's, a module not standard is the repository's own", async () => {
    for (const line of ["python3 -I -m json.tool data.json", "python3 -P -c 'import json'", "PYTHONSAFEPATH=1 python3 -m json.tool data.json"]) {
      const cwd = folder("json.py")
      expect(runs(cwd, line), line).toBe(false)
      expect((await decide(folder("json.py"), line)).decision, line).toBe("allow")
    }
    expect((await decide(folder("json.py"), "python3 --version")).decision).toBe("allow")
    expect((await decide(folder("mytool.py"), "python3 -m mytool")).decision).toBe("allow")
    // A project's own test/ package is not a module anything imports unasked.
    expect((await decide(folder("test"), "python3 -c 'import json'")).decision).toBe("allow")
  })

  // Review 45 (a2ec8f0, each failed there): each line ran the repository's file with Python 3.11 and its exact rule allowed it.
  it("-XI and -WI (the letter is the option's value), -E (ignores PYTHONSAFEPATH), a long option's value, a prefix not exported, PYTHONPATH", async () => {
    await check("python3 -XI -m json.tool data.json", "json.py")
    await check("python3 -WI -m json.tool data.json", "json.py")
    await check("PYTHONSAFEPATH=1 python3 -E -m json.tool data.json", "json.py")
    await check("python3 --check-hash-based-pycs default -m json.tool data.json", "json.py")
    await check("PYTHONSAFEPATH=1 true; python3 -m json.tool data.json", "json.py")
    await check("PYTHONSAFEPATH=1; python3 -m json.tool data.json", "json.py")
    await check("export PYTHONSAFEPATH=1; unset PYTHONSAFEPATH; python3 -m json.tool data.json", "json.py")
    await check("PYTHONPATH=. python3 -P -m json.tool data.json", "json.py")
    await check("PYTHONPATH=. pip3 --version", "json.py")
    await check("export PYTHONPATH=sub; pip3 --version", "json.py", "sub")
    await check("python3 -m pip --version", "pip")
    await check("python3 -m pip --version", "pip.py")
    // Exported, the variable holds for the later Python; with -I, PYTHONPATH is ignored.
    for (const line of ["export PYTHONSAFEPATH=1; python3 -m json.tool data.json", "PYTHONPATH=. python3 -I -m json.tool data.json"]) {
      expect(runs(folder("json.py"), line), line).toBe(false)
      expect((await decide(folder("json.py"), line)).decision, line).toBe("allow")
    }
  })

  it("other spellings: py, python3-dbg, a project runner's python, uv run -m", async () => {
    for (const line of [
      "py -m json.tool data.json", "python3-dbg -m json.tool data.json", "pypy3 -m json.tool data.json", "uv run python -m json.tool data.json",
      "uv run -m json.tool data.json", "poetry run python -m json.tool data.json", "pdm run python -m json.tool data.json",
      "hatch run python -m json.tool data.json", "pipenv run python -m json.tool data.json", "conda run python -m json.tool data.json",
      "rye run python -m json.tool data.json", "python3 -E -c 'import json'", "python3 -bb -c 'import json'"
    ]) {
      const decided = await decide(folder("json.py"), line)
      expect(decided.decision, line).toBe("ask")
      expect(decided.policy, line).toBe("repository-python")
    }
  })

  it("an \"always\" for the line covers the files it named, not a new one, nor another line's or a deny (review 45: it never helped)", async () => {
    const line = "python3 -c 'print(1)'"
    const cwd = folder("logging.py")
    const call = await prepared(cwd, line)
    // What the user's "always" stores is the call's scope: the line and the files, sorted.
    expect(call.scope).toBe(`shell:python:${JSON.stringify({ line, shadows: ["logging.py"] })}`)
    const always = [{ scope: call.scope, decision: "allow" as const, sequence: 1 }]
    expect(await decide(cwd, line, always)).toMatchObject({ decision: "allow", policy: "mine" })
    // A new file asks again; so does the same answer for another line, the line's plain scope, or a remembered deny.
    writeFileSync(join(cwd, "types.py"), "x")
    expect((await decide(cwd, line, always)).policy).toBe("repository-python")
    const other = folder("logging.py")
    expect((await decide(other, "python3 -c 'print(2)'", always)).policy).toBe("repository-python")
    expect((await decide(other, line, [{ scope: `shell:exact:${line}`, decision: "allow", sequence: 1 }])).policy).toBe("repository-python")
    expect((await decide(other, line, [{ scope: call.scope, decision: "deny", sequence: 1 }])).policy).toBe("repository-python")
  })
})
