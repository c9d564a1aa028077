/**
 * What a project's settings file may never say, trusted or not: each check returns why an entry is
 * refused (one line naming what is wrong), or `undefined`. A project file comes with the repository,
 * so even once the user trusts it, it cannot
 *
 * - allow an interpreter or wrapper with wildcard arguments (`bash -c *`, `python3 *`, `env *`,
 *   `xargs *`, `find *`, `npx *`), leave the program word to a wildcard (`*`, `./scripts/*`), nor let
 *   a wildcard choose a subcommand that decides whether another command runs (`git *` → `git -c …`,
 *   `npm *` → `npm exec …`);
 * - allow a path outside the project or inside `.git/` or `.effect-agent/`;
 * - set a variable that decides which program runs or what it loads (`Environment.steersPrograms`),
 *   or where programs' connections go and whom they trust (`Environment.steersConnections`);
 * - pass on the user's variables by wildcard, or any that looks like a credential
 *   (`Environment.looksSecret`) even by exact name.
 *
 * The permission policy holds the same lines at every decision (a wildcard never stands for a way
 * to run another program; outside-cwd and protected paths ask): these checks say so up front.
 *
 * @since 0.4.0
 * @internal
 */
import * as CommandLine from "../workspace/CommandLine.js"
import * as CommandRisk from "../workspace/CommandRisk.js"
import * as Environment from "../workspace/Environment.js"

/** Programs whose arguments can name code for them to run, besides interpreters and wrappers. */
const runsGivenCode = new Set([
  "find", "sed", "make", "gmake", "cmake", "tar", "zip", "vim", "vi", "nvim", "emacs", "less", "more", "man", "gdb", "lldb",
  "sort", "rg", "uvx", "pipx", "gcc", "cc", "clang", "ld"
])

/** Programs whose subcommand decides whether they run a command given on the line (`npm exec`, `git -c`, `docker run`). */
const subcommandRunners = new Set(["git", "npm", "pnpm", "yarn", "bun", "go", "cargo", "uv", "poetry", "docker", "podman", "gh", "kubectl", "dotnet"])

const isWild = (word: CommandLine.Word) => !word.expands && [...word.value].some((c, i) => !word.quoted[i] && (c === "*" || c === "?"))

/** Why an allow rule's command pattern is refused in a project's settings, if it is. */
export const command = (pattern: string): string | undefined => {
  const parsed = CommandLine.tokenize(pattern)
  if (parsed.unterminated || parsed.invalid !== undefined) return "the command pattern cannot be read (an open quote or unsupported quoting)"
  for (const words of CommandLine.segments(parsed.tokens)) {
    const first = words[0]!
    if (/^[A-Za-z_][A-Za-z0-9_]*=/.test(first.value)) {
      return `a project's allow rule cannot set a variable before its command (${first.value.split("=")[0]}=…)`
    }
    if (isWild(first)) return "a project's allow rule must name its program: a wildcard cannot stand for it"
    const program = first.value.split("/").at(-1)!
    const wild = words.some(isWild)
    if (wild && (CommandRisk.runsOtherPrograms(program) || runsGivenCode.has(program))) {
      return `${program} runs what its arguments tell it to: a project's allow rule cannot give it wildcard arguments (name the exact command line)`
    }
    if (wild && subcommandRunners.has(program)) {
      const sub = words.findIndex((word, i) => i > 0 && !word.value.startsWith("-"))
      if (sub < 0 || words.slice(1, sub + 1).some(isWild)) {
        return `a wildcard cannot choose ${program}'s subcommand or the options before it (${program} exec, ${program} -c …): name it, e.g. "${program} ${program === "git" ? "log" : "test"} *"`
      }
    }
  }
  return undefined
}

const protectedFolders = new Set([".git", ".effect-agent"])

/** Why an allow rule's path pattern is refused in a project's settings, if it is. */
export const path = (pattern: string): string | undefined => {
  if (pattern.startsWith("/") || pattern.startsWith("~") || pattern.split(/[\\/]+/).includes("..")) {
    return "a project's allow rule cannot reach outside the project: give a path relative to it (e.g. src/**)"
  }
  if (pattern.split(/[\\/]+/).some((segment) => protectedFolders.has(segment.toLowerCase()))) {
    return "writes into .git/ and .effect-agent/ always ask: a project's allow rule cannot name them"
  }
  return undefined
}

/** Why a project's `env.set` may not set `name`, if it may not. */
export const setName = (name: string): string | undefined =>
  !Environment.isName(name)
    ? `${JSON.stringify(name)} is not a variable name`
    : Environment.steersPrograms(name)
    ? `a project's settings cannot set ${name}: it decides which program runs or what it loads`
    : Environment.steersConnections(name)
    ? `a project's settings cannot set ${name}: it decides where programs' connections go or which certificates they trust`
    : undefined

/** Why a project's `env.allow` may not pass on `name`, if it may not. */
export const allowName = (name: string): string | undefined =>
  name.includes("*")
    ? `${JSON.stringify(name)}: a project's env.allow names variables one by one, without wildcards`
    : !Environment.isName(name)
    ? `${JSON.stringify(name)} is not a variable name`
    : Environment.looksSecret(name)
    ? `${name} looks like a credential: only your own settings can pass it on`
    : undefined
