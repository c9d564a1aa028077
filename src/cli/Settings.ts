/**
 * The CLI's permission settings: repeatable `--allow` / `--deny` flags and `--mode`, which are the
 * user's, then the library's loader (`ProjectSettings.load`) for the user's own settings file and
 * the session's `.effect-agent/settings.json` — trusted or not, as the library decides for every
 * adapter. Every mistake is one line naming the entry.
 *
 * Flag syntax: `tool` or `tool:pattern`. For `shell` the pattern is a glob over the whole command
 * line (`*` matches anything but shell syntax, see the policy); for the file tools it is a glob
 * over the resolved path relative to cwd (`*` stays within a folder, `**` crosses folders).
 *
 * @since 0.1.0
 */
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { McpNames, type PermissionPolicy, ProjectSettings } from "../index.js"
import { CliError } from "./CliError.js"
import * as CodeCache from "./CodeCache.js"

/** The tools of the workspace, the only names a rule may give (besides `*`): a typo must not make a rule silently match nothing. */
export const toolNames = ProjectSettings.workspaceTools

const commandTools: ReadonlySet<string> = new Set(["shell"])

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
  if (McpNames.isToolName(tool)) {
    return pattern === undefined ? Either.right({ name: `${flag} ${value}`, decision, tool }) : fail("an MCP tool's rule takes no pattern")
  }
  if (tool !== "*" && !toolNames.includes(tool)) {
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

/**
 * A session's settings for the working directory `cwd`: the flags first, then the user's own file,
 * then the project's file as far as it is trusted. The library's notes (what the project's file set,
 * or what of it was ignored and how to trust it) go to stderr, one line each, unless `quiet`.
 *
 * Protected whatever the mode or a rule says (a write there asks; the library adds each folder's real
 * path too): the compile cache's folder, code every later start runs, and `dataDir`, the store the
 * command uses (its session logs or its SQLite file), whose answers the next run believes: a model
 * that could edit them could record an "always" the user never gave (review 62a).
 */
export const load = (
  cwd: string,
  flags: { readonly mode: PermissionPolicy.Mode | undefined; readonly rules: ReadonlyArray<PermissionPolicy.Rule>; readonly dataDir?: string | undefined },
  options: { readonly prefix?: string } = {}
) =>
  ProjectSettings.load({ cwd, mode: flags.mode, rules: flags.rules, protectedPaths: [CodeCache.folder(), ...(flags.dataDir === undefined ? [] : [flags.dataDir])] }).pipe(
    Effect.mapError((error) => new CliError({ reason: "invalid_file", message: error.message })),
    Effect.tap((loaded) => Effect.forEach(loaded.notes, (note) => Console.error(`${options.prefix ?? "effect-agent:"} ${note}`), { discard: true }))
  )
