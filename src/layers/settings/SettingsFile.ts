/**
 * The settings files' schemas and their one-line errors. Both files hold `mode`, `rules` and `env`:
 *
 * - the user's own (`<config dir>/settings.json`): anything the flags could say but `bypass`;
 * - a project's (`.effect-agent/settings.json`): an allow must name a tool and its command or path,
 *   within `ProjectLimits` (or an MCP tool of the project's own servers), and the mode is never `bypass`.
 *
 * Unknown keys are errors: a misspelt `"rule"` must not pass as no rules at all.
 *
 * @since 0.4.0
 * @internal
 */
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as FormatCharacters from "../../domain/FormatCharacters.js"
import * as Pricing from "../../domain/Pricing.js"
import * as McpNames from "../mcp/McpNames.js"
import * as PermissionPolicy from "../PermissionPolicy.js"
import * as JsonSyntax from "./JsonSyntax.js"
import * as ProjectLimits from "./ProjectLimits.js"

/** A settings or trust file that cannot be used as it is: `reason` says how, `message` names the file and the entry in one line. */
export class SettingsError extends Schema.TaggedError<SettingsError>()("SettingsError", {
  reason: Schema.Literal("invalid", "unreadable"),
  message: Schema.String
}) {}

/** The tools of the workspace: by default the only names a rule may give (besides `*`), so a typo does not make a rule match nothing. */
export const workspaceTools: ReadonlyArray<string> = ["read_file", "write_file", "edit_file", "list_dir", "grep", "shell", "web_fetch"]

/** The tools whose rules take a command pattern; the others take a path. */
export const commandTools: ReadonlySet<string> = new Set(["shell"])

const toolName = (tools: ReadonlyArray<string>) =>
  Schema.String.pipe(
    Schema.filter((name) => name === "*" || tools.includes(name) || McpNames.isToolName(name), {
      message: (issue) => `unknown tool ${JSON.stringify(issue.actual)} (tools: ${tools.join(", ")}, or *)`
    })
  )

const Env = Schema.Struct({
  allow: Schema.optionalWith(Schema.Array(Schema.String), { exact: true }),
  set: Schema.optionalWith(Schema.Record({ key: Schema.String, value: Schema.String }), { exact: true })
})

/** The modes a settings file may choose: never `bypass`, which only the user gives for one run (`--mode bypass`). */
const fileMode = (whose: string) => Schema.Literal("default", "acceptEdits", "readOnly").annotations({
  message: (issue) => ({
    message: issue.actual === "bypass"
      ? `"bypass" can only be given on the command line (--mode bypass), not by ${whose}`
      : `Expected "default" | "acceptEdits" | "readOnly", actual ${JSON.stringify(issue.actual)}`,
    // One message for the whole union, not one per literal.
    override: true
  })
})

const settings = <R extends Schema.Schema.Any, E extends Schema.Schema.Any>(whose: string, rule: R, env: E) =>
  Schema.Struct({
    mode: Schema.optionalWith(fileMode(whose), { exact: true }),
    rules: Schema.optionalWith(Schema.Array(rule), { exact: true }),
    env: Schema.optionalWith(env, { exact: true })
  })

/** A rule's name is recorded in the log (`policy`) and shown on terminals: one short line of printable text. */
const RuleName = Schema.String.pipe(
  Schema.filter((name) => (name.length > 0 && name.length <= 200 && FormatCharacters.isPrintable(name)) || "a rule's name is one line of 1 to 200 printable characters")
)

/**
 * The name of a rule written without one: the rule itself, as a flag would give it
 * (`allow shell:npm test`), or — when that is not one short printable line — its decision and tool.
 */
export const ruleName = (rule: { readonly decision: string; readonly tool?: string | undefined; readonly command?: string | undefined; readonly path?: string | undefined }): string => {
  const pattern = rule.command ?? rule.path
  const short = `${rule.decision} ${rule.tool ?? "*"}`
  const full = pattern === undefined ? short : `${short}:${pattern}`
  return full.length <= 200 && FormatCharacters.isPrintable(full) ? full : short
}

/**
 * A rule with a tool name the workspace knows. Its `name` (recorded in the log as the decision's
 * `policy`) is optional: a rule without one is named after itself ({@link ruleName}).
 */
const userRule = (tools: ReadonlyArray<string>) => {
  const fields = { ...PermissionPolicy.Rule.fields, tool: Schema.optional(toolName(tools)) }
  return Schema.transform(
    Schema.Struct({ ...fields, name: Schema.optional(RuleName) }),
    Schema.typeSchema(Schema.Struct({ ...fields, name: RuleName })),
    { strict: true, decode: (rule) => ({ ...rule, name: rule.name ?? ruleName(rule) }), encode: (rule) => rule }
  )
}

/**
 * A project's rule: an `allow` must say what it allows (a tool, and its command or path: allowing a
 * whole tool takes the user), within the project's limits (`ProjectLimits`) — but for an MCP tool
 * (`mcp__docs__*`, which has neither): such a rule covers only the project's own `.mcp.json` server of
 * that name (`ProjectSettings` marks it `projectServer`), never one of yours.
 */
const projectRule = (tools: ReadonlyArray<string>) =>
  userRule(tools).pipe(
    Schema.filter((rule) => {
      if (rule.decision !== "allow") return undefined
      if (rule.tool !== undefined && McpNames.isToolName(rule.tool) && rule.command === undefined && rule.path === undefined) return undefined
      if (rule.tool === undefined || rule.tool === "*" || (rule.command === undefined && rule.path === undefined)) {
        return "an allow rule in a project's settings must name a tool and its command or path (allow a whole tool with --allow)"
      }
      const command = rule.command === undefined ? undefined : ProjectLimits.command(rule.command)
      if (command !== undefined) return { path: ["command"], message: command }
      const path = rule.path === undefined ? undefined : ProjectLimits.path(rule.path)
      return path === undefined ? undefined : { path: ["path"], message: path }
    })
  )

/** A project's `env`: names passed on one by one and never credentials; nothing set that steers programs. */
const ProjectEnv = Env.pipe(
  Schema.filter((env) => {
    const allow = (env.allow ?? []).flatMap((name, i) => {
      const why = ProjectLimits.allowName(name)
      return why === undefined ? [] : [{ path: ["allow", i], message: why }]
    })
    const set = Object.keys(env.set ?? {}).flatMap((name) => {
      const why = ProjectLimits.setName(name)
      return why === undefined ? [] : [{ path: ["set", name], message: why }]
    })
    return [...allow, ...set][0]
  })
)

/**
 * The user's own settings file (`<config dir>/settings.json`). `instructions: false` leaves the
 * project's and the user's instructions files out of the prompt; `prices` sets what turns cost per
 * model (over the built-in table, see `Pricing`); `promptCaching: false` sends no cache breakpoints
 * to Anthropic. Keys only the user's file has: what a repository ships is prompt text, never
 * configuration — a project cannot change what the user is told a turn cost.
 */
export const userSettings = (tools: ReadonlyArray<string> = workspaceTools) =>
  Schema.Struct({
    ...settings("your settings", userRule(tools), Env).fields,
    instructions: Schema.optionalWith(Schema.Boolean, { exact: true }),
    prices: Schema.optionalWith(Pricing.PriceTable, { exact: true }),
    promptCaching: Schema.optionalWith(Schema.Boolean, { exact: true })
  })
/** The user's own settings. */
export type UserSettings = Schema.Schema.Type<ReturnType<typeof userSettings>>

/**
 * What a project's rules may cost: every decision matches the call against every deny and ask rule
 * (a project's apply untrusted) on the event loop every session shares, and a rule's cost grows
 * with its pattern. Before, a 1 MiB file of 12,500 deny rules made each `shell` decision take 2 to
 * 5 s, one rule of a 400 KB pattern 6 s. Your own file and flags are yours, and not bounded.
 */
export const projectRuleLimits = { rules: 500, patternCharacters: 16 * 1024 } as const

/** Why a project's rules are refused as a whole, if they are (see {@link projectRuleLimits}). */
const projectRulesBound = (rules: ReadonlyArray<{ readonly command?: string | undefined; readonly path?: string | undefined }>) => {
  if (rules.length > projectRuleLimits.rules) return `a project's settings hold at most ${projectRuleLimits.rules} rules (this one holds ${rules.length})`
  const characters = rules.reduce((sum, rule) => sum + (rule.command?.length ?? 0) + (rule.path?.length ?? 0), 0)
  return characters > projectRuleLimits.patternCharacters
    ? `a project's rules' commands and paths hold at most ${projectRuleLimits.patternCharacters} characters in all (these hold ${characters})`
    : undefined
}

/** A project's settings file (`.effect-agent/settings.json`). */
export const projectSettings = (tools: ReadonlyArray<string> = workspaceTools) =>
  settings("a project's settings", projectRule(tools), ProjectEnv).pipe(
    Schema.filter((file) => {
      const why = file.rules === undefined ? undefined : projectRulesBound(file.rules)
      return why === undefined ? undefined : { path: ["rules"], message: why }
    })
  )
/** A project's settings. */
export type ProjectSettings = Schema.Schema.Type<ReturnType<typeof projectSettings>>

const pathOf = (segments: ReadonlyArray<PropertyKey>): string =>
  segments.reduce<string>(
    (out, key) => (typeof key === "number" ? `${out}[${key}]` : `${out}${out === "" ? "" : "."}${String(key)}`),
    ""
  )

/** The first issue of a parse error as one line: `path: message` (`rules[1].decision: Expected …`). */
export const firstIssue = (error: ParseResult.ParseError): string => {
  const issues = ParseResult.ArrayFormatter.formatErrorSync(error)
  const [issue] = issues
  if (issue === undefined) return "invalid"
  const where = pathOf(issue.path)
  // A union (such as a literal's choices) fails once per member at the same path: one message for all.
  const here = issues.filter((other) => pathOf(other.path) === where).map((other) => /^Expected (.+), actual (.+)$/s.exec(other.message))
  const actual = here[0]?.[2]
  const message = here.length > 1 && here.every((m) => m !== null && m[2] === actual)
    ? `Expected ${here.map((m) => m![1]).join(" | ")}, actual ${actual}`
    : issue.message
  return `${where === "" ? "" : `${where}: `}${message.replace(/\s*\n\s*/g, " ")}`
}

/** Parses a settings file's text with `schema`; the error is one line (`shown` names the file). */
export const parse = <A, I>(schema: Schema.Schema<A, I>, text: string, shown: string): Either.Either<A, string> => {
  // A syntax error says where, as an editor does: `file:line:column`, the problem and the line.
  const json = JsonSyntax.parse(text, shown)
  if (!json.ok) return Either.left(json.message)
  return Either.mapLeft(
    Schema.decodeUnknownEither(schema, { onExcessProperty: "error", errors: "first" })(json.value),
    (error) => `${shown}: ${firstIssue(error)}`
  )
}
