/**
 * The rule-based permission engine: ordered rules, then a mode.
 *
 * 1. Rules that match a call are collected; any `deny` among them wins. Otherwise the first matching
 *    rule decides (a rule is how a shell command with pipes or chaining gets allowed at all).
 *    A command pattern matches token by token (see `CommandPattern`): its wildcards never match
 *    shell syntax, so `cat *` never allows `cat a; touch x`. An allow rule also covers a command's
 *    hazards only if its own pattern spells them out (`rm *` does not allow `rm -rf /`); a deny rule
 *    matches more widely: the whole line, any one of its commands, or the raw text.
 * 2. A command with hazards (chaining, pipes, redirection, substitution, `sudo`, recursive `rm`) is
 *    denied unless a rule allowed it — in every mode.
 * 3. A path outside the session's cwd asks (in `readOnly`, a write there is denied; `bypass` allows).
 * 4. The user's "always" decisions apply to later calls of the same scope (for `shell`, the same
 *    program at the same risk, `shell:git:read`, or only the exact command line when the invocation
 *    could run something else; see `CommandRisk`).
 * 5. The mode decides the rest: `default` allows reads inside cwd and asks for writes and commands;
 *    `acceptEdits` also allows edits; `readOnly` allows reads, asks for read-only commands, denies
 *    the rest; `bypass` allows everything.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { Decision } from "../domain/AgentEvent.js"
import { type PermissionDecision, PermissionEngine, type PermissionRequest } from "../services/PermissionEngine.js"
import type { PreparedCall } from "../services/ToolRouter.js"
import * as CommandLine from "./workspace/CommandLine.js"
import * as CommandPattern from "./workspace/CommandPattern.js"

/** How permissive the policy is where no rule matched. */
export const Mode = Schema.Literal("default", "acceptEdits", "readOnly", "bypass")
/** How permissive the policy is where no rule matched. */
export type Mode = typeof Mode.Type

/**
 * A rule. Every field given must match: `tool` (a name, or `*`), `path` (a glob against the path
 * relative to cwd and the resolved absolute path; `*` stays within a folder, `**` crosses them) and
 * `command` (a pattern against the whole command line: `*` matches words and arguments, never
 * shell syntax or a newline, which must be spelled out, e.g. `npm test | tee log.txt`). `name` is
 * recorded as the event's `policy`.
 */
export const Rule = Schema.Struct({
  name: Schema.String,
  decision: Decision,
  tool: Schema.optional(Schema.String),
  path: Schema.optional(Schema.String),
  command: Schema.optional(Schema.String)
})
/** A rule. */
export type Rule = typeof Rule.Type

/** Options of the policy. */
export interface Options {
  readonly mode?: Mode | undefined
  readonly rules?: ReadonlyArray<Rule> | undefined
}

const escape = (text: string) => text.replace(/[.+^${}()|[\]\\]/g, "\\$&")

/** A glob as a regular expression; `separator` decides whether `*` crosses `/`. */
const globRegex = (glob: string, separator: boolean): RegExp => {
  let out = ""
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!
    if (c === "*" && glob[i + 1] === "*") {
      out += ".*"
      i++
      if (glob[i + 1] === "/") i++
    } else if (c === "*") out += separator ? "[^/]*" : ".*"
    else if (c === "?") out += separator ? "[^/]" : "."
    else out += escape(c)
  }
  return new RegExp(`^${out}$`, "s")
}

const relativeTo = (cwd: string, path: string) =>
  path === cwd ? "." : path.startsWith(cwd.endsWith("/") ? cwd : cwd + "/") ? path.slice(cwd.length + (cwd.endsWith("/") ? 0 : 1)) : path

const matches = (rule: Rule, call: PreparedCall, cwd: string): boolean => {
  if (rule.tool !== undefined && rule.tool !== "*" && rule.tool !== call.tool) return false
  if (rule.path !== undefined) {
    const pattern = globRegex(rule.path, true)
    if (!call.paths.some((p) => pattern.test(p.resolved) || pattern.test(relativeTo(cwd, p.resolved)) || pattern.test(p.requested))) return false
  }
  if (rule.command !== undefined) {
    if (call.command === undefined) return false
    const matched = rule.decision === "deny"
      ? CommandPattern.matchesAnywhere(rule.command, call.command.text)
      : CommandPattern.matches(rule.command, call.command.text)
    if (!matched) return false
  }
  // An allow rule must spell out every hazard of the command itself: a wildcard never stands for one.
  if (rule.decision === "allow" && call.command !== undefined) {
    const spelled = CommandPattern.hazardsOf(rule.command)
    if (hazardsOf(call).some((h) => !spelled.has(h))) return false
  }
  return true
}

/** The command's hazards, as the router found them and as the policy reads the text itself. */
const hazardsOf = (call: PreparedCall): ReadonlyArray<string> =>
  call.command === undefined ? [] : [...new Set([...call.command.hazards, ...CommandLine.parse(call.command.text).hazards])]

const modeDecision = (mode: Mode, call: PreparedCall): PermissionDecision => {
  const isCommand = call.command !== undefined
  switch (mode) {
    case "bypass":
      return { decision: "allow", policy: "bypass" }
    case "readOnly":
      if (!isCommand && call.risk === "read") return { decision: "allow", policy: "read-only/read" }
      if (isCommand && call.risk === "read") return { decision: "ask", policy: "read-only/command" }
      return { decision: "deny", policy: "read-only/no-writes", reason: "the session is read-only" }
    case "acceptEdits":
      if (!isCommand && (call.risk === "read" || call.risk === "write")) return { decision: "allow", policy: "accept-edits/edit" }
      return { decision: "ask", policy: isCommand ? "accept-edits/command" : "accept-edits/ask" }
    case "default":
      if (!isCommand && call.risk === "read") return { decision: "allow", policy: "default/read" }
      return { decision: "ask", policy: isCommand ? "default/command" : "default/write" }
  }
}

/** Folders inside a workspace whose files decide what later runs do. */
const protectedFolders = new Set([".git", ".effect-agent"])

const isProtected = (cwd: string, p: PreparedCall["paths"][number]) =>
  [relativeTo(cwd, p.resolved), p.requested].some((path) => path.split(/[\\/]+/).some((segment) => protectedFolders.has(segment.toLowerCase())))

/** The decision of the policy for one request; pure. */
export const decide = (options: Options, request: PermissionRequest): PermissionDecision => {
  const { call, cwd } = request
  const mode = options.mode ?? "default"
  const matching = (options.rules ?? []).filter((rule) => matches(rule, call, cwd))
  const denied = matching.find((rule) => rule.decision === "deny")
  if (denied !== undefined) return { decision: "deny", policy: denied.name, reason: `the rule "${denied.name}" forbids it` }
  if (matching.length > 0) return { decision: matching[0]!.decision, policy: matching[0]!.name }

  if (call.command !== undefined && CommandLine.parse(call.command.text).argv.length === 0) {
    return { decision: "deny", policy: "command-hazards", reason: "the command line could not be read safely (an open quote or unsupported quoting)" }
  }
  const hazards = hazardsOf(call)
  if (hazards.length > 0) {
    return {
      decision: "deny",
      policy: "command-hazards",
      reason: `the command uses ${hazards.join(", ")}, which needs a rule that allows it; run one program at a time`
    }
  }
  const outside = call.paths.filter((p) => !p.insideCwd)
  if (outside.length > 0) {
    if (mode === "bypass") return { decision: "allow", policy: "bypass" }
    if (mode === "readOnly" && outside.some((p) => p.access === "write")) {
      return { decision: "deny", policy: "read-only/no-writes", reason: "the session is read-only" }
    }
    return { decision: "ask", policy: "outside-cwd" }
  }
  // What steers later runs — git's config and hooks, the agent's own settings and logs — is written
  // only with the user's say-so: such a write asks in every mode that asks, and "always" never covers it.
  if (call.paths.some((p) => p.access === "write" && isProtected(cwd, p))) {
    if (mode === "bypass") return { decision: "allow", policy: "bypass" }
    if (mode === "readOnly") return { decision: "deny", policy: "read-only/no-writes", reason: "the session is read-only" }
    return { decision: "ask", policy: "protected-path" }
  }
  const remembered = request.remembered.find((r) => r.scope === call.scope)
  if (remembered !== undefined) return { decision: remembered.decision, policy: "remembered" }
  return modeDecision(mode, call)
}

/** The policy as the permission engine. */
export const layer = (options: Options = {}): Layer.Layer<PermissionEngine> =>
  Layer.succeed(PermissionEngine, { decide: (request) => Effect.succeed(decide(options, request)) })
