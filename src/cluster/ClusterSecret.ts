/**
 * The cluster secret: the key a connection to the runners' port proves it knows (see `RunnerPort`).
 *
 * By default the cluster's database holds it: the first runner to start writes 32 random bytes to a
 * one-row table, and every runner reads the row back, so the runners share it with no
 * configuration and it is as private as the database (whoever can read the table can join the
 * runners' traffic). An operator may give one instead (`Runner.Options.clusterSecret`,
 * `EFFECT_AGENT_CLUSTER_SECRET`); then the table is not used. The secret is `Redacted` throughout:
 * never in logs, events or errors.
 *
 * @since 0.2.0
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import { randomBytes } from "node:crypto"
import { Security } from "../server.js"

/** The key of the runners' handshake. */
export class ClusterSecret extends Context.Tag("effect-agent/cluster/ClusterSecret")<ClusterSecret, Redacted.Redacted<Uint8Array>>() {}

/** The secret could not be read or written, or the one given is too short. */
export class ClusterSecretUnavailable extends Schema.TaggedError<ClusterSecretUnavailable>()("ClusterSecretUnavailable", {
  detail: Schema.String
}) {
  override get message(): string {
    return `The cluster secret is unavailable: ${this.detail}`
  }
}

/** The shortest secret an operator may give: guessing it must be out of reach. */
export const minimumLength = 16

/** The default table of the cluster secret. */
export const defaultTable = "effect_agent_cluster_secret"

/**
 * The secret of the cluster's database: written when the table has none yet (32 random bytes, as
 * hex), then read back. Two runners starting at once on an empty database: one row wins, and both
 * read it.
 */
export const fromDatabase = (
  options: { readonly table?: string } = {}
): Effect.Effect<Redacted.Redacted<Uint8Array>, ClusterSecretUnavailable, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const table = sql(options.table ?? defaultTable)
    yield* sql`CREATE TABLE IF NOT EXISTS ${table} (id INTEGER PRIMARY KEY, secret TEXT NOT NULL)`
    yield* sql`INSERT INTO ${table} (id, secret) VALUES (1, ${randomBytes(32).toString("hex")}) ON CONFLICT (id) DO NOTHING`
    const rows = yield* sql<{ secret: string }>`SELECT secret FROM ${table} WHERE id = 1`
    const secret = rows[0]?.secret
    if (secret === undefined || !/^[0-9a-f]{64}$/.test(secret)) {
      return yield* new ClusterSecretUnavailable({ detail: `the table ${options.table ?? defaultTable} holds no secret of 32 bytes` })
    }
    return Redacted.make(new Uint8Array(Buffer.from(secret, "hex")))
  }).pipe(
    // Two runners creating the table at once: one of them fails on PostgreSQL's catalog and tries again.
    Effect.retry({ while: (error) => error._tag === "SqlError", times: 3, schedule: Schedule.spaced(Duration.millis(200)) }),
    Effect.catchTag("SqlError", () => Effect.fail(new ClusterSecretUnavailable({ detail: "the cluster's database could not be read or written" })))
  )

/**
 * A secret an operator gave: its UTF-8 bytes, at least `minimumLength` characters and as strong as
 * `serve` asks its own token to be (`Security.minTokenBits`): whoever guesses it joins the runners.
 */
export const fromGiven = (given: Redacted.Redacted<string>): Effect.Effect<Redacted.Redacted<Uint8Array>, ClusterSecretUnavailable> => {
  const secret = Redacted.value(given)
  if (secret.length < minimumLength) {
    return Effect.fail(new ClusterSecretUnavailable({ detail: `the secret given is shorter than ${minimumLength} characters` }))
  }
  const bits = Security.tokenBits(secret)
  return bits < Security.minTokenBits
    ? Effect.fail(new ClusterSecretUnavailable({
      detail: `the secret given (EFFECT_AGENT_CLUSTER_SECRET) is too weak (about ${bits} bits, at least ${Security.minTokenBits}: e.g. 22 random letters and digits, or \`openssl rand -base64 32\`)`
    }))
    : Effect.succeed(Redacted.make(new TextEncoder().encode(secret)))
}

/** The secret given, else the cluster database's. */
export const layer = (given?: Redacted.Redacted<string>): Layer.Layer<ClusterSecret, ClusterSecretUnavailable, SqlClient.SqlClient> =>
  Layer.effect(ClusterSecret, given === undefined ? fromDatabase() : fromGiven(given))
