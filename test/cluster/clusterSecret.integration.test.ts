/**
 * The cluster secret (`ClusterSecret`, on the test PostgreSQL): runners starting at once on an
 * empty database agree on one, and two runners started at once route a session's turn to each
 * other with it (each end of their connections proves it to the other). A secret given is used as it
 * is, and one too short is refused.
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import { describe, expect, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import * as Ref from "effect/Ref"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import { ClusterSecret } from "../../src/cluster.js"
import { Security } from "../../src/server.js"
import { freshDatabaseUrl } from "../postgres.js"
import { runnerInProcess } from "./inProcess.js"

describe("ClusterSecret", () => {
  it.live("runners starting at once on an empty database agree on one secret of 32 bytes", () =>
    Effect.gen(function*() {
      const url = yield* freshDatabaseUrl("cluster_secret")
      // Each runner has its own connections: four start at once.
      const read = ClusterSecret.fromDatabase().pipe(Effect.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: 1 })))
      const secrets = yield* Effect.all([read, read, read, read], { concurrency: "unbounded" })
      const first = Redacted.value(secrets[0]!)
      expect(first.length).toBe(32)
      for (const secret of secrets) expect(Redacted.value(secret)).toEqual(first)
      expect(Redacted.value(yield* read)).toEqual(first)
      // Redacted: neither printed nor serialized.
      expect(String(secrets[0])).not.toContain(Buffer.from(first).toString("hex"))
      expect(JSON.stringify({ secret: secrets[0] })).not.toContain(Buffer.from(first).toString("hex"))
    }))

  it.effect("a secret given is its UTF-8 bytes; one shorter than 16 characters is refused", () =>
    Effect.gen(function*() {
      const given = yield* ClusterSecret.fromGiven(Redacted.make("Sixteen chars ok, stronger"))
      expect(Buffer.from(Redacted.value(given)).toString("utf8")).toBe("Sixteen chars ok, stronger")
      const refused = yield* Effect.flip(ClusterSecret.fromGiven(Redacted.make("too short")))
      expect(refused).toBeInstanceOf(ClusterSecret.ClusterSecretUnavailable)
      expect(refused.message).not.toContain("too short")
    }))

  it.effect("a secret given weaker than serve's token minimum (Security.minTokenBits) is refused, naming the variable, never the value (review62b)", () =>
    Effect.gen(function*() {
      for (const weak of ["aaaaaaaaaaaaaaaa", "sixteen chars ok", "0123456789012345678901234567890"]) {
        expect(Security.tokenBits(weak)).toBeLessThan(Security.minTokenBits)
        const refused = yield* Effect.flip(ClusterSecret.fromGiven(Redacted.make(weak)))
        expect(refused.message).toContain("EFFECT_AGENT_CLUSTER_SECRET")
        expect(refused.message).toContain(`at least ${Security.minTokenBits}`)
        expect(refused.message).not.toContain(weak)
      }
      // 22 random letters and digits (about 130 bits) pass, as for EFFECT_AGENT_TOKEN.
      yield* ClusterSecret.fromGiven(Redacted.make("q7Xw2LmR9tKc4VbN8sYh3J"))
    }))

  const routes = (clusterSecret?: Redacted.Redacted<string>) =>
    Effect.gen(function*() {
      const url = yield* freshDatabaseUrl("cluster_secret_runners")
      const owners = yield* Ref.make<ReadonlyMap<string, string>>(new Map())
      const runner = (name: string, responses: ReadonlyArray<{ readonly chunks: ReadonlyArray<string> }>) =>
        runnerInProcess(url, {
          shardsPerGroup: 6,
          shardLockTtl: Duration.seconds(3),
          ...(clusterSecret === undefined ? {} : { clusterSecret }),
          onOwned: (sessionId) => Ref.update(owners, (map) => new Map([...map, [sessionId, name]]))
        }, responses)
      const [here] = yield* Effect.all([runner("here", []), runner("owner", [{ chunks: ["from the owner"] }])], { concurrency: "unbounded" })
      // A session the other runner owns (a cancel with nothing running reaches the owner).
      const sessionId = yield* Effect.gen(function*() {
        const session = yield* here.engine.createSession({ cwd: "/work", client: "test" })
        yield* here.engine.cancelTurn({ sessionId: session.sessionId })
        return (yield* Ref.get(owners)).get(session.sessionId) === "owner" ? session.sessionId : yield* Effect.fail("owned by this runner")
      }).pipe(Effect.retry({ schedule: Schedule.spaced(Duration.millis(50)), times: 400 }), Effect.orDie)
      const events = Chunk.toReadonlyArray(yield* Stream.runCollect(here.engine.runTurn({ sessionId, userMessage: "hello" })))
      expect(events.at(-1)).toMatchObject({ type: "turn.completed", payload: { stopReason: "final" } })
      expect(events.filter((event) => event.type === "model.delta").map((event) => event.payload.text).join("")).toBe("from the owner")
    }).pipe(Effect.scoped)

  it.live("two runners started at once on an empty database route a turn to each other", () => routes(), { timeout: 120_000 })

  it.live("two runners with the same secret given route a turn to each other", () => routes(Redacted.make("a secret the operator chose")), { timeout: 120_000 })
})
