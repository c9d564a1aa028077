/**
 * Splits a command line into argv the way a POSIX shell would for plain words and quotes, and finds
 * what only a shell interpreter could do with it: chaining, pipes, redirection, substitution,
 * background jobs, `sudo`, recursive `rm`. Commands run without a shell unless a rule allows those.
 *
 * @since 0.1.0
 * @internal
 */
import type { CommandAccess, ShellHazard } from "../../services/ToolRouter.js"

/** Splits and inspects a command line; `argv` is empty when the line is blank or a quote is left open. */
export const parse = (text: string): CommandAccess & { readonly unterminated: boolean } => {
  const argv: Array<string> = []
  const hazards = new Set<ShellHazard>()
  let word = ""
  let inWord = false
  let quote: "'" | "\"" | undefined
  const flush = () => {
    if (inWord) argv.push(word)
    word = ""
    inWord = false
  }
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!
    const next = text[i + 1]
    if (quote === "'") {
      if (c === "'") quote = undefined
      else word += c
      continue
    }
    if (quote === "\"") {
      if (c === "\"") quote = undefined
      else if (c === "\\" && next !== undefined && "$`\"\\\n".includes(next)) {
        word += next
        i++
      } else {
        if (c === "$" || c === "`") hazards.add("substitution")
        word += c
      }
      continue
    }
    if (c === "'" || c === "\"") {
      quote = c
      inWord = true
    } else if (c === "\\" && next !== undefined) {
      word += next
      inWord = true
      i++
    } else if (c === " " || c === "\t") {
      flush()
    } else if (c === "\n" || c === ";") {
      hazards.add("chaining")
      flush()
    } else if (c === "&") {
      hazards.add(next === "&" ? "chaining" : "background")
      if (next === "&") i++
      flush()
    } else if (c === "|") {
      hazards.add(next === "|" ? "chaining" : "pipe")
      if (next === "|") i++
      flush()
    } else if (c === ">" || c === "<") {
      hazards.add("redirection")
      flush()
    } else if (c === "$" || c === "`") {
      hazards.add("substitution")
      word += c
      inWord = true
    } else {
      word += c
      inWord = true
    }
  }
  const unterminated = quote !== undefined
  flush()
  const program = argv[0]?.split("/").at(-1)
  if (program === "sudo" || program === "doas" || program === "su") hazards.add("sudo")
  if (program === "rm" && argv.slice(1).some((a) => /^-[a-zA-Z]*[rR]/.test(a) || a === "--recursive")) hazards.add("recursive_delete")
  return { text, argv: unterminated ? [] : argv, hazards: [...hazards], unterminated }
}

// Programs that only read, when run without a shell: their risk is "read".
const readPrograms = new Set([
  "ls", "cat", "head", "tail", "wc", "pwd", "echo", "grep", "rg", "which", "stat", "file", "du", "df", "date",
  "tree", "diff", "cmp", "sort", "uniq", "cut", "basename", "dirname", "realpath", "whoami", "uname", "true", "false"
])
const readGitCommands = new Set(["status", "log", "diff", "show", "branch", "blame", "ls-files", "rev-parse", "describe"])
const destructivePrograms = new Set(["rm", "rmdir", "mv", "dd", "shred", "chmod", "chown", "kill", "pkill", "killall", "truncate", "mkfs"])
const networkPrograms = new Set(["curl", "wget", "ssh", "scp", "rsync", "nc", "ftp", "telnet"])

/** The risk of running a command: what the program is known to do, else "write". */
export const riskOf = (argv: ReadonlyArray<string>): "read" | "write" | "destructive" | "network" => {
  const program = argv[0]?.split("/").at(-1) ?? ""
  if (program === "git") {
    const sub = argv[1] ?? ""
    if (readGitCommands.has(sub)) return "read"
    if (sub === "push" || sub === "fetch" || sub === "pull" || sub === "clone") return "network"
    if (sub === "reset" || sub === "clean" || sub === "checkout" || sub === "rm") return "destructive"
    return "write"
  }
  if (program === "find") return argv.some((a) => a === "-delete" || a === "-exec" || a === "-execdir") ? "destructive" : "read"
  if (program === "sed") return argv.some((a) => a.startsWith("-i")) ? "write" : "read"
  if (readPrograms.has(program)) return "read"
  if (destructivePrograms.has(program)) return "destructive"
  if (networkPrograms.has(program)) return "network"
  if ((program === "npm" || program === "pnpm" || program === "yarn") && ["install", "add", "i", "ci"].includes(argv[1] ?? "")) {
    return "network"
  }
  return "write"
}
