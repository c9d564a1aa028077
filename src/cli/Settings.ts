/**
 * The CLI's permission settings: a project file, `.effect-agent/settings.json` in the session's
 * working directory, and repeatable `--allow` / `--deny` flags. Both end as rules of the policy
 * (`PermissionPolicy.Rule`); the flags come first, then the file's rules, and a matching `deny`
 * wins whichever came first (the policy's own rule). Every mistake is one line naming the entry.
 *
 * Flag syntax: `tool` or `tool:pattern`. For `shell` the pattern is a glob over the whole command
 * line (`*` matches anything but shell syntax, see the policy); for the file tools it is a glob
 * over the path (`*` stays within a folder, `**` crosses folders).
 *
 * @since 0.1.0
 */
import * as FileSystem from "@effect/platform/FileSystem"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as path from "node:path"
import { PermissionPolicy } from "../index.js"
import { CliError } from "./CliError.js"

/** The tools of the workspace, the only names a rule may give (besides `*`): a typo must not make a rule silently match nothing. */
export const toolNames = ["read_file", "write_file", "edit_file", "list_dir", "grep", "shell"] as const

const commandTools: ReadonlySet<string> = new Set(["shell"])

const ToolName = Schema.String.pipe(
  Schema.filter((name) => name === "*" || (toolNames as ReadonlyArray<string>).includes(name), {
    message: (issue) => `unknown tool ${JSON.stringify(issue.actual)} (tools: ${toolNames.join(", ")}, or *)`
  })
)

/**
 * A rule of the settings file: the policy's rule, with a tool name the workspace knows. The file
 * comes with the project — a cloned repository can ship one — so an `allow` there must say what it
 * allows (a tool, and its command or path); allowing a whole tool takes a flag the user typed.
 */
const FileRule = Schema.Struct({ ...PermissionPolicy.Rule.fields, tool: Schema.optional(ToolName) }).pipe(
  Schema.filter((rule) =>
    rule.decision !== "allow" || (rule.tool !== undefined && rule.tool !== "*" && (rule.command !== undefined || rule.path !== undefined)) ||
    "an allow rule in a project's settings must name a tool and its command or path (allow a whole tool with --allow)"
  )
)

/** The modes a project file may choose: never `bypass`, which only the user can give (`--mode bypass`). */
const FileMode = Schema.Literal("default", "acceptEdits", "readOnly").annotations({
  message: (issue) => ({
    message: issue.actual === "bypass"
      ? "\"bypass\" can only be given on the command line (--mode bypass), not by a project's settings"
      : `Expected "default" | "acceptEdits" | "readOnly", actual ${JSON.stringify(issue.actual)}`,
    // One message for the whole union, not one per literal.
    override: true
  })
})

/** The settings file. Unknown keys are errors: a misspelt `"rule"` must not pass as no rules at all. */
export const SettingsFile = Schema.Struct({
  mode: Schema.optionalWith(FileMode, { exact: true }),
  rules: Schema.optionalWith(Schema.Array(FileRule), { exact: true }),
  env: Schema.optionalWith(
    Schema.Struct({
      allow: Schema.optionalWith(Schema.Array(Schema.String), { exact: true }),
      set: Schema.optionalWith(Schema.Record({ key: Schema.String, value: Schema.String }), { exact: true })
    }),
    { exact: true }
  )
})
/** The settings file. */
export type SettingsFile = typeof SettingsFile.Type

/** Where the settings file is, relative to a working directory. */
export const relativePath = ".effect-agent/settings.json"

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

const decodeFile = Schema.decodeUnknownEither(SettingsFile, { onExcessProperty: "error", errors: "first" })

/** Parses the text of a settings file; `shown` names it in the error. */
export const parseFile = (text: string, shown: string): Either.Either<SettingsFile, CliError> => {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (error) {
    return Either.left(new CliError({ reason: "invalid_file", message: `${shown}: not valid JSON (${error instanceof Error ? error.message : String(error)})` }))
  }
  return Either.mapLeft(decodeFile(json), (e) => new CliError({ reason: "invalid_file", message: `${shown}: ${firstIssue(e)}` }))
}

/** Reads the settings file of a working directory; no file is no settings. */
export const load = (cwd: string): Effect.Effect<SettingsFile, CliError, FileSystem.FileSystem> =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const file = path.join(cwd, relativePath)
    const relative = path.relative(process.cwd(), file)
    const shown = relative.startsWith("..") ? file : relative
    const text = yield* fs.readFileString(file).pipe(
      Effect.map((text) => text as string | undefined),
      Effect.catchAll((error) =>
        error._tag === "SystemError" && error.reason === "NotFound"
          ? Effect.succeed(undefined)
          : Effect.fail(new CliError({ reason: "invalid_file", message: `${shown}: cannot be read (${error._tag === "SystemError" ? error.reason : "bad argument"})` }))
      )
    )
    if (text === undefined) return {}
    return yield* parseFile(text, shown)
  })

/** A one-line note of what a settings file sets, shown when it is applied: it is the project's, not the user's. */
export const describe = (file: SettingsFile): string | undefined => {
  const parts = [
    ...(file.mode === undefined ? [] : [`mode ${file.mode}`]),
    ...(file.rules === undefined || file.rules.length === 0 ? [] : [`${file.rules.length} rule${file.rules.length === 1 ? "" : "s"}`]),
    ...(file.env?.allow === undefined && file.env?.set === undefined ? [] : ["environment"])
  ]
  return parts.length === 0 ? undefined : `effect-agent: ${relativePath}: ${parts.join(", ")}.`
}

/**
 * Parses one `--allow` / `--deny` value: `tool` or `tool:pattern` (the command glob for `shell`, the
 * path glob for the file tools). The rule is named after the flag, as events record it.
 */
export const parseFlag = (decision: "allow" | "deny", value: string): Either.Either<PermissionPolicy.Rule, CliError> => {
  const flag = `--${decision}`
  const fail = (why: string) => Either.left(new CliError({ reason: "invalid_arguments", message: `${flag} ${JSON.stringify(value)}: ${why}` }))
  const colon = value.indexOf(":")
  const tool = (colon < 0 ? value : value.slice(0, colon)).trim()
  const pattern = colon < 0 ? undefined : value.slice(colon + 1).trim()
  if (tool === "") return fail(`expected tool or tool:pattern, e.g. ${flag} 'shell:npm test'`)
  if (tool !== "*" && !(toolNames as ReadonlyArray<string>).includes(tool)) {
    return fail(`unknown tool "${tool}" (tools: ${toolNames.join(", ")}, or *)`)
  }
  const name = `${flag} ${value}`
  if (pattern === undefined) return Either.right({ name, decision, tool })
  if (pattern === "") return fail("the pattern after ':' is empty")
  if (tool === "*") return fail("a pattern needs a tool: shell:<command> or <file tool>:<path>")
  return Either.right(commandTools.has(tool) ? { name, decision, tool, command: pattern } : { name, decision, tool, path: pattern })
}

/** Parses all `--allow` and `--deny` flags, denials first (order does not change the outcome: a deny always wins). */
export const parseFlags = (
  flags: { readonly allow: ReadonlyArray<string>; readonly deny: ReadonlyArray<string> }
): Either.Either<Array<PermissionPolicy.Rule>, CliError> =>
  Either.all([...flags.deny.map((v) => parseFlag("deny", v)), ...flags.allow.map((v) => parseFlag("allow", v))])

/** The policy's options: the mode from the command line, else the file, else default; the flags' rules before the file's. */
export const policyOptions = (
  file: SettingsFile,
  command: { readonly mode: PermissionPolicy.Mode | undefined; readonly rules: ReadonlyArray<PermissionPolicy.Rule> }
): PermissionPolicy.Options => ({
  mode: command.mode ?? file.mode ?? "default",
  rules: [...command.rules, ...(file.rules ?? [])]
})
