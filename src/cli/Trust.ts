/**
 * `effect-agent trust [dir]`: review a project's `.effect-agent/settings.json` and `.mcp.json` and
 * trust those exact files (see `ProjectSettings` and `McpSettings` for what trust changes). It prints a summary of what the file grants
 * and its SHA-256, then asks — on a terminal only: without one, nothing is trusted unless `--yes`
 * says so. `--list` shows the trusted files (and whether each is still as it was trusted);
 * `--revoke` forgets one. Trust is recorded in the user's config folder (`TrustStore`).
 *
 * @since 0.4.0
 */
import * as NodePath from "node:path"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { McpSettings, ProjectSettings, TrustStore } from "../index.js"
import { askOnTerminal, isYes } from "./Ask.js"
import { CliError } from "./CliError.js"
import { terminalSafe } from "./Render.js"
import type { Input } from "./commands/Trust.js"

const invalid = (error: { readonly message: string }) => new CliError({ reason: "invalid_file", message: error.message })

const list = (configDir: string) =>
  Effect.gen(function*() {
    const entries = yield* TrustStore.entries(configDir).pipe(Effect.mapError(invalid))
    if (entries.length === 0) return yield* Console.error("No project settings are trusted.")
    for (const entry of entries) {
      // A `.mcp.json`'s trust covers the files its servers name too.
      const status = yield* (NodePath.basename(entry.path) === McpSettings.projectFileName ? McpSettings.entryStatus(entry) : ProjectSettings.entryStatus(entry)).pipe(
        Effect.orElseSucceed(() => "unreadable" as const)
      )
      yield* Console.log(`${status}  ${terminalSafe(entry.path)}  sha256:${entry.sha256.slice(0, 12)}  ${entry.trustedAt}`)
    }
  })

/** `trust`. */
export const handler = (options: Input) =>
  Effect.gen(function*() {
    const configDir = yield* TrustStore.configDir
    if (options.list) return yield* list(configDir)
    const cwd = NodePath.resolve(Option.getOrElse(options.dir, () => process.cwd()))
    if (options.revoke) {
      const paths = [yield* ProjectSettings.fileOf(cwd), yield* McpSettings.fileOf(cwd)]
      let revoked = 0
      for (const path of paths) {
        const removed = yield* TrustStore.revoke(configDir, path).pipe(Effect.mapError(invalid))
        if (removed > 0) yield* Console.error(`effect-agent: no longer trusted: ${terminalSafe(path)}`)
        revoked += removed
      }
      // Nothing to revoke fails, as git does for removing what is not there: a revoke run in the wrong
      // folder (or for a project never trusted) must not read as done in a script.
      if (revoked === 0) {
        return yield* new CliError({ reason: "invalid_arguments", message: `${terminalSafe(paths[0]!)} was not trusted: nothing to revoke` })
      }
      return
    }
    const project = yield* ProjectSettings.inspect(cwd, configDir).pipe(Effect.mapError(invalid))
    const mcp = yield* McpSettings.inspect(cwd, configDir).pipe(Effect.mapError(invalid))
    if (project === undefined && mcp === undefined) {
      return yield* new CliError({ reason: "invalid_arguments", message: `there is no ${ProjectSettings.relativePath} or ${McpSettings.projectFileName} in ${terminalSafe(cwd)}` })
    }
    // The summaries escape every value of the files themselves; the terminal sees nothing it could act on.
    const files = [
      ...(project === undefined ? [] : [{ ...project, lines: ProjectSettings.summary(project) }]),
      ...(mcp === undefined ? [] : [{ ...mcp, lines: McpSettings.summary(mcp) }])
    ]
    yield* Console.log(files.map((file) => file.lines.join("\n")).join("\n\n"))
    const pending = files.filter((file) => file.trust !== "trusted")
    if (pending.length === 0) return yield* Console.error(`effect-agent: already trusted, as ${files.length === 1 ? "it is" : "they are"}`)
    if (!options.yes) {
      if (process.stdin.isTTY !== true) {
        return yield* new CliError({
          reason: "invalid_arguments",
          message: `stdin is not a terminal, so nothing was trusted; once you have read the above: ${ProjectSettings.trustCommand(cwd)} --yes`
        })
      }
      const isWidened = (file: (typeof pending)[number]) => "widened" in file && file.widened === true
      const widened = pending.some(isWidened)
      const changed = pending.some((file) => file.trust === "changed" && !isWidened(file))
      const why = `${changed ? "It changed since you trusted it. " : ""}${widened ? "Trust now also covers the files its MCP servers run (listed above). " : ""}`
      const answer = yield* askOnTerminal(`${why}Trust ${pending.length === 1 ? "this file" : "these files"}? [y/N]: `)
      if (!isYes(answer)) return yield* new CliError({ reason: "invalid_arguments", message: "not trusted" })
    }
    // The hash of the content shown above: if a file changed since, it is not trusted.
    for (const file of pending) {
      yield* TrustStore.trust(configDir, file.path, file.sha256).pipe(Effect.mapError(invalid))
      yield* Console.error(`effect-agent: trusted ${terminalSafe(file.path)} (sha256 ${file.sha256.slice(0, 12)}…); any change to it makes it untrusted again`)
    }
  })
