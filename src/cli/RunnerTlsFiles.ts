/**
 * `serve --cluster`'s TLS flags (`--runner-tls-cert`, `--runner-tls-key`, `--runner-tls-ca`): the
 * files, read at start as the runner's `RunnerTls` material, and read again (`watch`) on SIGHUP or
 * when one of them changed, so a rotated certificate needs no restart. All three or none (none: the
 * runners' port without TLS). The key file must not be readable by every user of the machine
 * (mode `o+r`), as ssh refuses such a key: a runner's key is the cluster's membership, and a key
 * anyone can read is no one's. Group-readable is allowed (a group of the runner's service, a
 * Kubernetes secret's `defaultMode: 0440`).
 *
 * Errors name the flag and the system's code, never a path or a byte of the files: they are shown
 * where the runner starts, and may be collected with its logs.
 *
 * @since 0.2.0
 */
import * as Console from "effect/Console"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Redacted from "effect/Redacted"
import { closeSync, constants, fstatSync, openSync, readFileSync, statSync } from "node:fs"
import type * as Cluster from "../cluster.js"
import { CliError } from "./CliError.js"

/** The material as the runner takes it (`RunnerTls.RunnerTls`), without loading the cluster's code here. */
export interface Material {
  readonly certificate: Uint8Array
  readonly key: Redacted.Redacted<Uint8Array>
  readonly ca: Uint8Array
}

const invalid = (message: string) => new CliError({ reason: "invalid_arguments", message })

const codeOf = (error: unknown) => {
  const code = (error as { readonly code?: unknown }).code
  return typeof code === "string" ? code : "unusable"
}

/** More than any PEM of a certificate chain, a key or a CA: a file past it is not one. */
const maxFileBytes = 1024 * 1024

/**
 * A file's bytes, and its mode as read from the same descriptor (no window between the check and the
 * read). A regular file only: opened without blocking (a FIFO would wait for a writer) and refused
 * unless regular (`/dev/zero` never ends), and at most `maxFileBytes`.
 */
const read = (flag: string, path: string) =>
  Effect.try({
    try: () => {
      const fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK)
      try {
        const stats = fstatSync(fd)
        if (!stats.isFile()) return invalid(`--${flag}: not a regular file`)
        if (stats.size > maxFileBytes) return invalid(`--${flag}: the file is over ${maxFileBytes} bytes, more than a PEM certificate or key`)
        return { bytes: new Uint8Array(readFileSync(fd)), mode: stats.mode }
      } finally {
        closeSync(fd)
      }
    },
    catch: (error) => invalid(`--${flag}: the file cannot be read (${codeOf(error)})`)
  }).pipe(Effect.flatMap((read) => read instanceof CliError ? Effect.fail(read) : Effect.succeed(read)))

/** `RunnerTls.keyMismatch`, held to it by its type (the cluster's code is loaded only with `--cluster`). */
const keyMismatch: typeof Cluster.RunnerTls.keyMismatch = "ERR_OSSL_X509_KEY_VALUES_MISMATCH"

const flagOf = { certificate: "runner-tls-cert", key: "runner-tls-key", ca: "runner-tls-ca" } as const

/**
 * `RunnerTls.check`'s refusal of the files, naming the flag whose file is wrong (OpenSSL's code
 * only): an operator with three files should not have to guess.
 */
export const refusal = (error: Cluster.RunnerTls.InvalidTls): CliError => {
  if (error.input === undefined) return invalid(error.message)
  if (error.input === "key") {
    return invalid(error.code === keyMismatch ? "--runner-tls-key: the key is not the one of --runner-tls-cert's certificate" : `--runner-tls-key: the file holds no PEM private key (${error.code})`)
  }
  return invalid(`--${flagOf[error.input]}: the file holds no PEM certificate (${error.code})`)
}

/** The flags' files, read; `undefined` when none is given. */
export const load = (flags: {
  readonly runnerTlsCert: Option.Option<string>
  readonly runnerTlsKey: Option.Option<string>
  readonly runnerTlsCa: Option.Option<string>
}): Effect.Effect<Material | undefined, CliError> =>
  Effect.gen(function*() {
    const given = { "runner-tls-cert": flags.runnerTlsCert, "runner-tls-key": flags.runnerTlsKey, "runner-tls-ca": flags.runnerTlsCa }
    const missing = Object.entries(given).filter(([, path]) => Option.isNone(path)).map(([flag]) => `--${flag}`)
    if (missing.length === 3) return undefined
    if (missing.length > 0) {
      return yield* invalid(
        `--runner-tls-cert, --runner-tls-key and --runner-tls-ca go together (all three for TLS between runners, none without): ${missing.join(" and ")} missing`
      )
    }
    const certificate = yield* read("runner-tls-cert", Option.getOrThrow(flags.runnerTlsCert))
    const key = yield* read("runner-tls-key", Option.getOrThrow(flags.runnerTlsKey))
    const ca = yield* read("runner-tls-ca", Option.getOrThrow(flags.runnerTlsCa))
    // Windows has no such mode bits: its ACLs are the operator's to set.
    if (process.platform !== "win32" && (key.mode & 0o004) !== 0) {
      return yield* invalid(
        `--runner-tls-key: the key file is readable by every user of this machine (mode ${(key.mode & 0o777).toString(8).padStart(4, "0")}): make it readable by the runner's user only (chmod 600)`
      )
    }
    return { certificate: certificate.bytes, key: Redacted.make(key.bytes), ca: ca.bytes }
  })

/** How often `watch` looks whether a file changed. */
export const watchEvery = Duration.seconds(30)

/**
 * What a file is now, cheaply: its inode, size and times (a renamed-in file, a rewritten one, a link
 * switched to another target as a Kubernetes secret's volume does); or why it cannot be looked at.
 */
const stamp = (paths: ReadonlyArray<string>) =>
  paths.map((path) => {
    try {
      const stats = statSync(path)
      return `${stats.ino}:${stats.size}:${stats.mtimeMs}:${stats.ctimeMs}`
    } catch (error) {
      return codeOf(error)
    }
  }).join("|")

/**
 * Reads the files again on SIGHUP, and when one of them changed (looked at every `every`), and gives
 * the material to `replace` (the runner's `RunnerTls.Reloadable`): the connections made after use
 * it. Refused — a file missing or half written, a key that is not the certificate's, a key file every
 * user can read — the runner keeps what it has and one line on stderr says why (once per change:
 * the next change, or SIGHUP, tries again). Runs until its scope closes.
 */
export const watch = (
  flags: { readonly runnerTlsCert: Option.Option<string>; readonly runnerTlsKey: Option.Option<string>; readonly runnerTlsCa: Option.Option<string> },
  replace: (material: Material) => Effect.Effect<void, Cluster.RunnerTls.InvalidTls>,
  options: { readonly every?: Duration.DurationInput } = {}
) =>
  Effect.gen(function*() {
    const paths = [flags.runnerTlsCert, flags.runnerTlsKey, flags.runnerTlsCa].flatMap((path) => Option.isSome(path) ? [path.value] : [])
    const hangups = yield* Queue.sliding<void>(1)
    const onHangup = () => Queue.unsafeOffer(hangups, undefined)
    yield* Effect.acquireRelease(Effect.sync(() => process.on("SIGHUP", onHangup)), () => Effect.sync(() => process.off("SIGHUP", onHangup)))
    const every = Duration.decode(options.every ?? watchEvery)
    let seen = stamp(paths)
    const reload = (why: string) =>
      load(flags).pipe(
        Effect.flatMap((material) => material === undefined ? Effect.void : Effect.mapError(replace(material), refusal)),
        Effect.zipRight(Console.error(`effect-agent serve: the runners' TLS certificate, key and CA were read again (${why}): new connections use them`)),
        Effect.catchAll((error) =>
          Console.error(`effect-agent serve: the runners' TLS files were not reloaded (${why}): ${error.message}; the runner keeps the certificate it has`)
        ),
        // The watcher outlives anything one reading does: the next change or SIGHUP tries again.
        Effect.catchAllDefect(() => Console.error(`effect-agent serve: the runners' TLS files were not reloaded (${why}): they could not be used; the runner keeps the certificate it has`))
      )
    const next = Effect.raceFirst(Effect.as(Queue.take(hangups), "SIGHUP" as const), Effect.as(Effect.sleep(every), "poll" as const))
    return yield* Effect.forever(Effect.gen(function*() {
      const woke = yield* next
      const now = stamp(paths)
      const changed = now !== seen
      seen = now
      if (woke === "SIGHUP") return yield* reload("SIGHUP")
      if (changed) yield* reload("a file changed")
    }))
  })
