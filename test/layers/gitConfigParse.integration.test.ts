/**
 * Red team 7, item 2: `RunsLater`'s git config reader against git's own (`git config --file`), for
 * the forms the hand parser read differently: a `#` or `;` right after a value, quotes in the middle
 * of a value, `\` escapes and continuations. Where git saw `core.hooksPath = a` and the reader saw
 * `a#b` (or `a\`), the folder pinned was not the one git runs; where git saw `alias.x = !cmd` written
 * `""!cmd`, a repository a command made was not said to run a program.
 */
import { describe, expect, it } from "@effect/vitest"
import { execFileSync } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll } from "vitest"
import * as RunsLater from "../../src/layers/workspace/RunsLater.js"

const root = mkdtempSync(join(tmpdir(), "effect-agent-gitconfig-"))
afterAll(() => rmSync(root, { recursive: true, force: true }))

/** What git itself reads for `key` in `config`: its last value, "" for none, undefined when git refuses the file. */
const gitSays = (config: string, key: string): string | undefined => {
  const file = join(root, "config")
  writeFileSync(file, config)
  try {
    return execFileSync("git", ["config", "--file", file, "--get", key], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"], env: { ...process.env, GIT_CONFIG_NOSYSTEM: "1" } }).replace(/\n$/, "")
  } catch (error) {
    return (error as { status?: number }).status === 1 ? "" : undefined
  }
}

const configs = [
  "[core]\n\thooksPath = a # c\n",
  "[core]\n\thooksPath = \"a b\" ; c\n",
  "[core]\n\thooksPath = a\\\n/b\n",
  "[CORE]\n\tHOOKSPATH = up\n",
  "[core]hooksPath=x\n",
  "[core]\n\thooksPath = a#b\n",
  "[core]\n\thooksPath = a;b\n",
  "[core]\n\thooksPath = \"a#b\"\n",
  "[core]\n\thooksPath = \"x\"y\"z\"\n",
  "[core]\n\thooksPath = \\\"q\\\"\n",
  "[core]\n\thooksPath = \"a\\\nb\"\n",
  "[core]\n\thooksPath = a\\\n\t[x]\n",
  "[core]\n\thooksPath = a\\\\b\n",
  "[core]\n\tfsmonitor = a\\\n\thooksPath = evil\n",
  "[core] ; comment\n\thooksPath = c1\n",
  "[core]\n\thooksPath = one\n\thooksPath = two ;\\\n",
  "[core]\r\n\thooksPath = crlf\r\n",
  "[core]\n hooksPath=a b  \t c  \n",
  "[core]\n\thooksPath = x\n[core]\n\thooksPath =\n",
  "[core]\n\thooksPath = x\n[core]\n\thooksPath\n",
  "[core.sub]\n\thooksPath = dotsub\n",
  "\uFEFF[core]\n\thooksPath = bom\n"
]

describe("reading core.hooksPath as git does", () => {
  it.each(configs)("%j", (config) => {
    const git = gitSays(config, "core.hooksPath")
    if (git === undefined) return
    expect(RunsLater.hooksPathIn(config) ?? "").toBe(git)
  })

  it("a program setting written with quotes or a continuation is still named", () => {
    for (const [config, key] of [
      ["[alias]\n\tx = \"\"!touch pwned\n", "alias.x"],
      ["[alias]\n\tx = \"!\"touch pwned\n", "alias.x"],
      ["[alias]\n\tx = \\\n!touch pwned\n", "alias.x"]
    ] as const) {
      expect(gitSays(config, key)).toBe("!touch pwned")
      expect(RunsLater.programSettingsIn(config), config).toContain(key)
    }
  })
})

describe("where core.hooksPath leads", () => {
  it("~name/ is that user's home, as git expands it", () => {
    const home = execFileSync("sh", ["-c", "getent passwd root | cut -d: -f6"], { encoding: "utf8" }).trim()
    expect(RunsLater.hooksFolder("~root/hooks", "/work/repo")).toBe(join(home, "hooks"))
    expect(RunsLater.hooksFolder("~no-such-user-here/hooks", "/work/repo")).toBe("/work/repo/~no-such-user-here/hooks")
  })
})
