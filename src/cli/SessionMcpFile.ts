/**
 * The MCP servers a client named for one session over HTTP (`POST /sessions {mcpServers}`), kept so
 * that `serve` can start them again for that session after it restarts. Their `env` and `headers`
 * are often tokens: they never enter the event log. They are kept in the user's config folder, one
 * file per session (`session-mcp/<sessionId>.json`), the folder mode 0700 and each file 0600,
 * written whole (a temporary file of a random name, created exclusively, renamed over it). Only `serve` reads them, and only for the
 * session whose creation named them.
 *
 * @since 0.6.0
 */
import * as FileSystem from "@effect/platform/FileSystem"
import * as NodePath from "node:path"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { McpConfig, Session } from "../index.js"
import { replaceFile } from "./ReplaceFile.js"

const Saved = Schema.parseJson(Schema.Record({ key: Schema.String, value: McpConfig.Server }))

/** The folder of the kept files under the config folder. */
export const folderName = "session-mcp"

/** A session id as a file name: only a valid id (no separator, no `..`) is ever a file. */
const fileOf = (configDir: string, sessionId: string): Option.Option<string> =>
  Session.isValidId(sessionId) ? Option.some(NodePath.join(configDir, folderName, `${sessionId}.json`)) : Option.none()

/** Keeps `servers` for `sessionId` (nothing when there are none). */
export const save = (configDir: string, sessionId: string, servers: McpConfig.Servers) =>
  Effect.gen(function*() {
    const file = fileOf(configDir, sessionId)
    if (Option.isNone(file) || Object.keys(servers).length === 0) return
    const fs = yield* FileSystem.FileSystem
    const folder = NodePath.dirname(file.value)
    yield* fs.makeDirectory(folder, { recursive: true, mode: 0o700 })
    // The folder may have been made before with a wider mode: it holds secrets.
    yield* fs.chmod(folder, 0o700)
    const text = yield* Schema.encode(Saved)(servers)
    // A temporary file of a random name, created exclusively (never through a link planted under a name known in advance).
    yield* Effect.try({ try: () => replaceFile(file.value, text), catch: (error) => error as Error })
  })

/** The servers kept for `sessionId`, if any; a file that cannot be read or decoded is none. */
export const load = (configDir: string, sessionId: string) =>
  Effect.gen(function*() {
    const file = fileOf(configDir, sessionId)
    if (Option.isNone(file)) return Option.none<McpConfig.Servers>()
    const fs = yield* FileSystem.FileSystem
    if (!(yield* fs.exists(file.value))) return Option.none<McpConfig.Servers>()
    return Option.some<McpConfig.Servers>(yield* Schema.decode(Saved)(yield* fs.readFileString(file.value)))
  }).pipe(Effect.orElseSucceed(() => Option.none<McpConfig.Servers>()))
