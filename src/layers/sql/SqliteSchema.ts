/**
 * The schema the SQLite store's migrations make (`SqliteEventStore.migrations`), as `sqlite_master`
 * lists it (type, name, table, SQL; ordered by type and name): what a database opened by the store
 * is checked against. Written out rather than made by migrating an empty database in memory in
 * every process that opens a store (that cost `pending --store sqlite` over 10,000 sessions 5 % of
 * its instructions, 1.045 → 0.991·10⁹); test/layers/sqliteSchema.test.ts holds it equal to what the
 * migrations make, so a new migration fails that test until this list is brought along.
 *
 * @since 0.1.0
 * @internal
 */

/** One object of a schema, as `sqlite_master` has it. */
export interface SchemaObject {
  readonly type: string
  readonly name: string
  readonly tbl_name: string
  readonly sql: string | null
}

/** The migrations' schema, in `ORDER BY type, name`. */
export const expected: ReadonlyArray<SchemaObject> = [
  {
    type: "index",
    name: "sessions_by_activity",
    tbl_name: "sessions",
    sql: "CREATE INDEX sessions_by_activity ON sessions (last_activity_at DESC)"
  },
  {
    type: "table",
    name: "awaiting_approvals",
    tbl_name: "awaiting_approvals",
    sql: "CREATE TABLE awaiting_approvals (\n        session_id TEXT NOT NULL,\n        tool_call_id TEXT NOT NULL,\n        sequence INTEGER NOT NULL,\n        PRIMARY KEY (session_id, tool_call_id)\n      ) WITHOUT ROWID"
  },
  {
    type: "table",
    name: "blobs",
    tbl_name: "blobs",
    sql: "CREATE TABLE blobs (hash TEXT PRIMARY KEY, size INTEGER NOT NULL, bytes BLOB NOT NULL) WITHOUT ROWID"
  },
  {
    type: "table",
    name: "effect_agent_migrations",
    tbl_name: "effect_agent_migrations",
    sql: "CREATE TABLE \"effect_agent_migrations\" (\n  migration_id integer PRIMARY KEY NOT NULL,\n  created_at datetime NOT NULL DEFAULT current_timestamp,\n  name VARCHAR(255) NOT NULL\n)"
  },
  {
    type: "table",
    name: "events",
    tbl_name: "events",
    sql: "CREATE TABLE events (\n        session_id TEXT NOT NULL,\n        sequence INTEGER NOT NULL,\n        type TEXT NOT NULL,\n        timestamp TEXT NOT NULL,\n        format_version INTEGER NOT NULL,\n        body TEXT NOT NULL,\n        PRIMARY KEY (session_id, sequence)\n      ) WITHOUT ROWID"
  },
  {
    type: "table",
    name: "session_usage",
    tbl_name: "session_usage",
    sql: "CREATE TABLE session_usage (\n      session_id TEXT NOT NULL,\n      unknown_model TEXT NOT NULL,\n      first_sequence INTEGER NOT NULL,\n      input_tokens INTEGER NOT NULL,\n      output_tokens INTEGER NOT NULL,\n      cache_read_tokens INTEGER,\n      cache_write_tokens INTEGER,\n      cost REAL NOT NULL,\n      PRIMARY KEY (session_id, unknown_model)\n    )"
  },
  {
    type: "table",
    name: "sessions",
    tbl_name: "sessions",
    sql: "CREATE TABLE sessions (\n        session_id TEXT PRIMARY KEY,\n        cwd TEXT,\n        client TEXT,\n        created_at TEXT NOT NULL,\n        last_activity_at TEXT NOT NULL,\n        turn_count INTEGER NOT NULL,\n        last_sequence INTEGER NOT NULL\n      , title TEXT)"
  },
  {
    type: "table",
    name: "writer_leases",
    tbl_name: "writer_leases",
    sql: "CREATE TABLE writer_leases (\n        session_id TEXT PRIMARY KEY,\n        token TEXT NOT NULL,\n        holder TEXT NOT NULL,\n        expires_at INTEGER NOT NULL\n      )"
  },
  {
    type: "trigger",
    name: "events_summarize",
    tbl_name: "events",
    sql: "CREATE TRIGGER events_summarize AFTER INSERT ON events BEGIN\n        INSERT INTO sessions (session_id, cwd, client, created_at, last_activity_at, turn_count, last_sequence)\n        VALUES (\n          NEW.session_id,\n          CASE WHEN NEW.type = 'session.created' THEN json_extract(NEW.body, '$.payload.cwd') END,\n          CASE WHEN NEW.type = 'session.created' THEN json_extract(NEW.body, '$.payload.client') END,\n          NEW.timestamp, NEW.timestamp, 0, NEW.sequence\n        )\n        ON CONFLICT (session_id) DO UPDATE SET\n          last_activity_at = NEW.timestamp,\n          last_sequence = NEW.sequence,\n          turn_count = turn_count + (NEW.type = 'turn.started');\n      END"
  }
]
