/**
 * `serve --cluster`'s TLS flags (docs/scaling.md), on the built CLI as a subprocess: all three or
 * none; a file that cannot be read, a key file every user can read and material that does not
 * build are refused at start, naming the flag, never a path or the key. Two runners with TLS start
 * (saying so, and that the traffic is encrypted when the port is on the network) and a session
 * owned by one is driven through the other — over TLS, end to end.
 */
import { execFileSync } from "node:child_process"
import { chmodSync, copyFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { run } from "../cli/subprocess.js"
import { freePort } from "../../bench/support/ports.js"
import { type Certificates, makeCertificates } from "../../bench/support/certificates.js"
import { testCluster, until } from "./processes.js"

const token = "runner-tls-cli-token-0123456789abcdef"
const shards = 6
const cluster = testCluster("runner_tls_cli", { token, writerLeaseTtl: "8 seconds" })
const { cwd, env, launch, post, runnersTail, untilEvent, writeScript } = cluster

let certificates: Certificates
beforeAll(() => {
  certificates = makeCertificates()
})
afterAll(() => certificates?.remove())

/** The TLS flags of the runner whose files are `name`.crt/.key in the certificates' folder. */
const tlsFlags = (name: string) => [
  "--runner-tls-cert", join(certificates.dir, `${name}.crt`),
  "--runner-tls-key", join(certificates.dir, `${name}.key`),
  "--runner-tls-ca", join(certificates.dir, "cluster-ca.crt")
]

const runnerArgs = (runnerPort: number, script: string, extra: ReadonlyArray<string> = []) => [
  "serve", "--port", "0", "--cluster", "--store", "postgres", "--runner-port", String(runnerPort),
  "--shards-per-group", String(shards), "--shard-lock-ttl", "3", "--script", script, ...extra
]

/** Refused at start: exit 1, saying `message`, showing neither the folder of the files nor a key. */
const expectRefused = (result: { readonly code: number | null; readonly stderr: string }, message: string) => {
  expect(result.code).toBe(1)
  expect(result.stderr).toContain(message)
  expect(result.stderr).not.toContain(certificates.dir)
  expect(result.stderr).not.toContain("PRIVATE KEY")
}

describe("serve --cluster with TLS between runners", () => {
  it("refuses one or two of the three flags, a file it cannot read, a key every user can read, and material that does not build", { timeout: 120_000 }, async () => {
    const quick = writeScript("quick-flags.json", { responses: [] })
    const [cert, certPath, key, keyPath, ca, caPath] = tlsFlags("runner-a")
    const partial = await run(runnerArgs(await freePort(), quick, [cert!, certPath!, ca!, caPath!]), { cwd, env: env() })
    expectRefused(partial, "--runner-tls-cert, --runner-tls-key and --runner-tls-ca go together (all three for TLS between runners, none without): --runner-tls-key missing")
    const alone = await run(runnerArgs(await freePort(), quick, [key!, keyPath!]), { cwd, env: env() })
    expectRefused(alone, "--runner-tls-cert and --runner-tls-ca missing")

    // A special file: /dev/zero never ends (it was read until memory ran out), a FIFO blocks its opener.
    const endless = await run(runnerArgs(await freePort(), quick, [cert!, "/dev/zero", key!, keyPath!, ca!, caPath!]), { cwd, env: env() })
    expectRefused(endless, "--runner-tls-cert: not a regular file")
    const fifo = join(certificates.dir, "fifo.crt")
    execFileSync("mkfifo", [fifo])
    const blocking = await run(runnerArgs(await freePort(), quick, [cert!, certPath!, key!, keyPath!, ca!, fifo]), { cwd, env: env() })
    expectRefused(blocking, "--runner-tls-ca: not a regular file")

    const unreadable = await run(runnerArgs(await freePort(), quick, [cert!, certPath!, key!, join(certificates.dir, "no-such.key"), ca!, caPath!]), { cwd, env: env() })
    expectRefused(unreadable, "--runner-tls-key: the file cannot be read (ENOENT)")

    const everyone = join(certificates.dir, "everyone.key")
    copyFileSync(keyPath!, everyone)
    chmodSync(everyone, 0o644)
    const readable = await run(runnerArgs(await freePort(), quick, [cert!, certPath!, key!, everyone, ca!, caPath!]), { cwd, env: env() })
    expectRefused(readable, "--runner-tls-key: the key file is readable by every user of this machine (mode 0644): make it readable by the runner's user only (chmod 600)")

    // Another runner's key with this certificate: the material does not build, and the runner does not start.
    const mismatched = await run(runnerArgs(await freePort(), quick, [cert!, certPath!, key!, join(certificates.dir, "runner-b.key"), ca!, caPath!]), { cwd, env: env() })
    // Each names the flag whose file is wrong (docs/scaling.md: "naming the flag and OpenSSL's code"):
    // an operator with three files must not have to guess which one.
    expectRefused(mismatched, "--runner-tls-key: the key is not the one of --runner-tls-cert's certificate")
    const garbage = join(certificates.dir, "garbage.crt")
    writeFileSync(garbage, "not a certificate\n")
    const notPem = await run(runnerArgs(await freePort(), quick, [cert!, garbage, key!, keyPath!, ca!, caPath!]), { cwd, env: env() })
    expectRefused(notPem, "--runner-tls-cert: the file holds no PEM certificate (")
    const garbageKey = join(certificates.dir, "garbage.key")
    writeFileSync(garbageKey, "not a key\n", { mode: 0o600 })
    const notKey = await run(runnerArgs(await freePort(), quick, [cert!, certPath!, key!, garbageKey, ca!, caPath!]), { cwd, env: env() })
    expectRefused(notKey, "--runner-tls-key: the file holds no PEM private key (")
    // A CA file with no certificate in it (OpenSSL alone would skip it, and every handshake fail later).
    const noCa = await run(runnerArgs(await freePort(), quick, [cert!, certPath!, key!, keyPath!, ca!, garbage]), { cwd, env: env() })
    expectRefused(noCa, "--runner-tls-ca: the file holds no PEM certificate (")
  })

  it("starts two runners over TLS and drives a session owned by one through the other", { timeout: 300_000 }, async () => {
    const quick = writeScript("quick.json", { responses: [] })
    // A listens on every interface (allowed on purpose): its line says the traffic is encrypted.
    const portA = await freePort()
    const a = await launch(portA, runnerArgs(portA, quick, [...tlsFlags("runner-a"), "--runner-listen", "0.0.0.0", "--runner-listen-wildcard"]))
    const portB = await freePort()
    const b = await launch(portB, runnerArgs(portB, quick, tlsFlags("runner-b")))
    expect(a.stderr()).toContain("cluster secret from the cluster database) over TLS (mutual, certificates of the cluster CA)")
    expect(a.stderr()).toMatch(/the runners' port 0\.0\.0\.0:\d+ is on the network; its traffic is encrypted \(TLS\)/)
    expect(a.stderr()).not.toContain("has no TLS")
    expect(b.stderr()).toContain("over TLS (mutual, certificates of the cluster CA)")
    // A session B drives, its turn started and followed through A: A reached B's port over TLS.
    const sessionId = await until("a session driven by runner B", async () => {
      const created = await post(a.http, "/sessions", { cwd })
      expect(created.status).toBe(201)
      const id = created.body["sessionId"] as string
      const started = await post(a.http, `/sessions/${id}/turns`, { message: "over TLS" })
      expect(started.status, JSON.stringify(started.body)).toBe(202)
      await untilEvent(a.http, id, (event) => event.type === "turn.completed")
      return b.owned().includes(id) ? id : undefined
    }, 150_000, runnersTail)
    const completed = await untilEvent(a.http, sessionId, (event) => event.type === "turn.completed")
    expect(completed).toMatchObject({ payload: { stopReason: "final" } })
    // No handshake between the two failed. A client that spoke no TLS at all (`ERR_SSL_WRONG_VERSION_NUMBER`)
    // is neither runner — both speak TLS — but another test's process reaching a port it was handed
    // before this one (the suite runs files side by side; the clean-clone CI saw one): not this test's.
    const refusals = (a.stderr() + b.stderr()).split("\n").filter((line) => line.includes("in the TLS handshake (") && !line.includes("(ERR_SSL_WRONG_VERSION_NUMBER)"))
    expect(refusals).toEqual([])
  })
})
