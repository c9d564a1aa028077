/**
 * The project files the user trusts, kept in the user's own config folder — never in a project —
 * as `trusted.json`: for each file, its path and the SHA-256 of the content the user reviewed. A
 * file is trusted while its content hashes to what was recorded: a changed file is untrusted again,
 * and so is the same content at another path (rules are relative to their project).
 *
 * The config folder is `EFFECT_AGENT_CONFIG_DIR`, else `$XDG_CONFIG_HOME/effect-agent`, else
 * `~/.config/effect-agent`. It also holds the user's own `settings.json` (see `ProjectSettings`).
 * Writes replace the file whole (a temporary file renamed over it), `0600` in a `0700` folder.
 *
 * @since 0.4.0
 */
import { createHash } from "node:crypto"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import * as FileSystem from "@effect/platform/FileSystem"
import * as Clock from "effect/Clock"
import * as Config from "effect/Config"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as PlainFiles from "./jsonl/PlainFiles.js"
import * as SettingsFile from "./settings/SettingsFile.js"
import { SettingsError } from "./settings/SettingsFile.js"

/** A settings or trust file that cannot be used as it is. */
export { SettingsError }

/** A file the user trusts: its path, the SHA-256 of the content they trusted, and when (ISO-8601). */
export const Entry = Schema.Struct({
  path: Schema.String,
  sha256: Schema.String.pipe(Schema.pattern(/^[0-9a-f]{64}$/)),
  trustedAt: Schema.String
})
/** A file the user trusts. */
export type Entry = typeof Entry.Type

const TrustFile = Schema.Struct({ version: Schema.Literal(1), trusted: Schema.Array(Entry) })

/** Where trust is recorded, in the config folder. */
export const fileName = "trusted.json"

/** The SHA-256 of a file's bytes, as lowercase hex. */
export const sha256 = (bytes: Uint8Array): string => createHash("sha256").update(bytes).digest("hex")

const absolute = (dir: string) => dir !== "" && NodePath.isAbsolute(dir)

/** Whether the ignored relative `EFFECT_AGENT_CONFIG_DIR` was said (once a process). */
let relativeSaid = false

/**
 * The user's config folder: `EFFECT_AGENT_CONFIG_DIR` (when absolute), else
 * `$XDG_CONFIG_HOME/effect-agent` (when absolute, as the XDG spec says), else `~/.config/effect-agent`.
 * A relative `EFFECT_AGENT_CONFIG_DIR` is ignored, with a warning on stderr once: resolved against the
 * current directory, it made "your settings" and `trusted.json` the files of whichever repository a
 * command ran in (review 59c), as XDG's spec says a relative `XDG_CONFIG_HOME` would.
 */
export const configDir: Effect.Effect<string> = Effect.gen(function*() {
  const read = (name: string) => Config.option(Config.string(name)).pipe(Effect.orElseSucceed(() => Option.none<string>()))
  const own = yield* read("EFFECT_AGENT_CONFIG_DIR")
  if (Option.isSome(own) && absolute(own.value)) return NodePath.resolve(own.value)
  if (Option.isSome(own) && own.value !== "" && !relativeSaid) {
    relativeSaid = true
    yield* Console.error(`effect-agent: EFFECT_AGENT_CONFIG_DIR=${JSON.stringify(own.value)} is not an absolute path, so it is ignored (a relative one would name a folder in each project you run in)`)
  }
  // The XDG spec: a relative XDG_CONFIG_HOME is invalid and ignored.
  const xdg = Option.filter(yield* read("XDG_CONFIG_HOME"), absolute)
  if (Option.isSome(xdg)) return NodePath.join(xdg.value, "effect-agent")
  const home = Option.filter(yield* read("HOME"), absolute)
  return NodePath.join(Option.getOrElse(home, () => NodeOs.homedir()), ".config", "effect-agent")
})

/** The status of a project file: trusted as it is, trusted once with other content, or never trusted. */
export type Status = "trusted" | "changed" | "untrusted"

/** Every entry of the trust file in `dir`; none when there is no file. */
export const entries = Effect.fn("TrustStore.entries")(function*(dir: string) {
  const fs = yield* FileSystem.FileSystem
  const file = NodePath.join(dir, fileName)
  const text = yield* fs.readFileString(file).pipe(
    Effect.map(Option.some),
    Effect.catchAll((error) =>
      error._tag === "SystemError" && error.reason === "NotFound"
        ? Effect.succeed(Option.none<string>())
        : Effect.fail(new SettingsError({ reason: "unreadable", message: `${file}: cannot be read (${error._tag === "SystemError" ? error.reason : "bad argument"})` }))
    )
  )
  if (Option.isNone(text)) return [] as ReadonlyArray<Entry>
  const parsed = SettingsFile.parse(TrustFile, text.value, file)
  if (Either.isLeft(parsed)) return yield* new SettingsError({ reason: "invalid", message: parsed.left })
  return parsed.right.trusted
})

/** The status of the project file at `path` whose content hashes to `hash`. */
export const status = (trusted: ReadonlyArray<Entry>, path: string, hash: string): Status => {
  const ofPath = trusted.filter((entry) => entry.path === path)
  return ofPath.some((entry) => entry.sha256 === hash) ? "trusted" : ofPath.length > 0 ? "changed" : "untrusted"
}

const save = (dir: string, trusted: ReadonlyArray<Entry>) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const file = NodePath.join(dir, fileName)
    const fail = (what: string) => (error: { readonly message: string }) =>
      new SettingsError({ reason: "unreadable", message: `${file}: cannot be ${what} (${error.message})` })
    yield* fs.makeDirectory(dir, { recursive: true, mode: 0o700 }).pipe(Effect.mapError(fail("written")))
    const text = JSON.stringify({ version: 1, trusted }, null, 2) + "\n"
    // A temporary file of a random name, created exclusively: `<file>.<pid>.<n>.tmp` could be a link
    // planted in advance, and was written through.
    yield* Effect.try({ try: () => PlainFiles.replace(file, text), catch: (error) => error as Error }).pipe(Effect.mapError(fail("written")))
  })

/** Records that the user trusts the file at `path` with content hashing to `hash` (replacing what was trusted there before). */
export const trust = Effect.fn("TrustStore.trust")(function*(dir: string, path: string, hash: string) {
  const trusted = yield* entries(dir)
  const now = yield* Clock.currentTimeMillis
  yield* save(dir, [...trusted.filter((entry) => entry.path !== path), { path, sha256: hash, trustedAt: new Date(now).toISOString() }])
})

/** Forgets the file at `path`; how many entries were removed (0: it was not trusted). */
export const revoke = Effect.fn("TrustStore.revoke")(function*(dir: string, path: string) {
  const trusted = yield* entries(dir)
  const kept = trusted.filter((entry) => entry.path !== path)
  if (kept.length !== trusted.length) yield* save(dir, kept)
  return trusted.length - kept.length
})
