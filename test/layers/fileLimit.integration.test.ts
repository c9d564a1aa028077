/**
 * A store's failure when the disk refuses a write, by the failure kinds of the contract: the same
 * cause is the same kind on every store, and the kind is the disk's, never that of what the store
 * did after it.
 *
 * fileLimitChild.ts runs under a soft file-size limit (`ulimit -S -f`, SIGXFSZ ignored: a write past
 * it fails `EFBIG`, a real file on a real file system). SQLite reports `EFBIG` as SQLITE_IOERR_WRITE;
 * an INSERT of 16 MiB spills its pages to the WAL inside the statement, and SQLite then rolls the
 * whole transaction back itself, so @effect/sql's ROLLBACK fails "no transaction is active".
 * PostgreSQL: a statement that fails inside BEGIN aborts the transaction (25P02 for any later
 * statement), and its ROLLBACK then succeeds: a trigger of the test raises 53100 (disk_full) there.
 */
import { execFile } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { createRequire } from "node:module"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { pathToFileURL } from "node:url"
import * as SqlClient from "@effect/sql/SqlClient"
import * as PgClient from "@effect/sql-pg/PgClient"
import { describe, expect, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import { afterAll } from "vitest"
import type { AgentEvent } from "../../src/domain/AgentEvent.js"
import * as PostgresEventStore from "../../src/layers/PostgresEventStore.js"
import { EventStore } from "../../src/services/EventStore.js"
import { freshSchemaUrl } from "../postgres.js"
import { ownedByTest } from "../processes.js"

const dir = mkdtempSync(join(tmpdir(), "effect-agent-file-limit-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const tsx = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href
const childScript = resolve(import.meta.dirname, "fileLimitChild.ts")

interface Outcome {
  readonly ok?: true
  readonly tag?: string
  readonly reason?: string
  readonly detail?: string
}

/** The child's outcomes under a 1 MiB file-size limit. */
const underLimit = (kind: "jsonl" | "sqlite", what: "batch" | "single") =>
  new Promise<{ readonly first: Outcome; readonly after: Outcome }>((done, fail) => {
    const dataDir = mkdtempSync(join(dir, `${kind}-${what}-`))
    const child = execFile(
      "bash",
      ["-c", `trap '' XFSZ; ulimit -S -f 1024; exec "$@"`, "bash", process.execPath, "--import", tsx, childScript, kind, dataDir, what],
      (error, stdout, stderr) => error === null ? done(JSON.parse(stdout.trim().split("\n").at(-1)!)) : fail(new Error(`${error.message}: ${stderr}`))
    )
    ownedByTest(child)
  })

describe("a file at its size limit", () => {
  it("sqlite: a statement failing in a transaction SQLite rolled back keeps its own error, not the ROLLBACK's", async () => {
    const { after, first } = await underLimit("sqlite", "batch")
    // Before, the append failed `unavailable` with "Failed to execute statement (SQLITE_ERROR)": the ROLLBACK's.
    expect(first.tag).toBe("EventStoreFailure")
    expect(first.detail).toContain("(SQLITE_IOERR_WRITE)")
    expect(after).toEqual({ ok: true })
  })

  for (const kind of ["jsonl", "sqlite"] as const) {
    for (const what of ["single", "batch"] as const) {
      it(`${kind}: an append (${what}) that meets it is disk_full, and a small one after it works`, async () => {
        const { after, first } = await underLimit(kind, what)
        expect({ tag: first.tag, reason: first.reason }).toEqual({ tag: "EventStoreFailure", reason: "disk_full" })
        expect(after).toEqual({ ok: true })
      })
    }
  }
})

const at = (n: number) => `2026-01-01T00:00:${String(n).padStart(2, "0")}.000Z`
const event = (sequence: number, type: string, payload: object) =>
  ({ id: `e${sequence}`, sessionId: "s", sequence, timestamp: at(sequence), type, payload, ...(sequence === 1 ? {} : { turnId: "turn_1" }) }) as AgentEvent

describe("postgres: a statement failing inside BEGIN", () => {
  it.scoped("keeps its own error (53100 is disk_full), the aborted transaction rolled back, the connection reused", () =>
    Effect.gen(function*() {
      const url = Redacted.make(yield* freshSchemaUrl("aborted_tx"))
      // One connection: the append after the failure runs on the one the failed transaction used.
      const client = yield* Layer.build(PgClient.layer({ url, maxConnections: 1 }))
      const store = Context.get(yield* Layer.build(PostgresEventStore.layerFromClient().pipe(Layer.provide(Layer.succeedContext(client)))), EventStore)
      const sql = Context.get(client, SqlClient.SqlClient)
      yield* sql.unsafe(`
        CREATE FUNCTION refuse_third() RETURNS trigger AS $$
        BEGIN
          IF NEW.sequence = 3 AND NEW.body LIKE '%refuse%' THEN RAISE EXCEPTION 'no room' USING ERRCODE = '53100'; END IF;
          RETURN NEW;
        END $$ LANGUAGE plpgsql`)
      yield* sql.unsafe(`CREATE TRIGGER refuse_third BEFORE INSERT ON events FOR EACH ROW EXECUTE FUNCTION refuse_third()`)
      yield* store.append(event(1, "session.created", { cwd: "/w", client: "test" }))
      const failed = yield* Effect.flip(store.appendAll([
        event(2, "turn.started", { promptPreview: "p" }),
        event(3, "model.delta", { text: "refuse" }),
        event(4, "model.delta", { text: "never" })
      ]))
      expect(failed).toMatchObject({ _tag: "EventStoreFailure", reason: "disk_full" })
      // Nothing of the batch stayed, and the same connection takes the next batch.
      yield* store.appendAll([event(2, "turn.started", { promptPreview: "p" }), event(3, "model.delta", { text: "ok" })])
      const [{ last }] = yield* sql<{ last: number }>`SELECT MAX(sequence)::integer AS last FROM events`
      expect(last).toBe(3)
    }))
})
