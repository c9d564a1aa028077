/**
 * A rotated runner certificate needs no restart (docs/scaling.md): `serve --cluster` with TLS reads
 * its three files again on SIGHUP, and the connections its port accepts after present the new
 * certificate — real TLS on loopback, against the built CLI as a subprocess. A file that cannot be
 * used (not a certificate, a key that is not the certificate's) keeps the certificate the runner has,
 * and one line on stderr says why, naming the flag, never the folder. It used to read them once, at
 * start: SIGHUP ended the process (Node's default) and a new certificate needed a restart.
 */
import { X509Certificate } from "node:crypto"
import { chmodSync, copyFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as Tls from "node:tls"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freePort } from "../../bench/support/ports.js"
import { type Certificates, makeCertificates } from "../../bench/support/certificates.js"
import { testCluster } from "./processes.js"

const token = "runner-tls-reload-token-0123456789abcdef"
const cluster = testCluster("runner_tls_reload", { token, writerLeaseTtl: "8 seconds" })
const { dir, launch, writeScript } = cluster

let certificates: Certificates
beforeAll(() => {
  certificates = makeCertificates()
})
afterAll(() => certificates?.remove())

const fingerprintOf = (pem: string) => new X509Certificate(pem).fingerprint256

/** The fingerprint of the certificate the runners' port at `port` presents to a runner of the cluster. */
const presented = (port: number) =>
  new Promise<string>((resolve, reject) => {
    const client = certificates.runnerB
    const socket = Tls.connect({
      host: "127.0.0.1",
      port,
      cert: client.certificate as string,
      key: readFileSync(join(certificates.dir, "runner-b.key"), "utf8"),
      ca: client.ca as string
    })
    socket.once("secureConnect", () => {
      const fingerprint = socket.getPeerX509Certificate()?.fingerprint256
      socket.destroy()
      fingerprint === undefined ? reject(new Error("no certificate presented")) : resolve(fingerprint)
    })
    socket.once("error", reject)
  })

describe("serve --cluster: the runners' TLS files read again", () => {
  it("SIGHUP: new connections get the new certificate; a bad file keeps the old one, saying why", { timeout: 180_000 }, async () => {
    const files = join(dir, "tls")
    mkdirSync(files, { recursive: true })
    const cert = join(files, "tls.crt")
    const key = join(files, "tls.key")
    const ca = join(files, "ca.crt")
    const put = (name: string) => {
      copyFileSync(join(certificates.dir, `${name}.crt`), cert)
      copyFileSync(join(certificates.dir, `${name}.key`), key)
      chmodSync(key, 0o600)
    }
    put("runner-a")
    copyFileSync(join(certificates.dir, "cluster-ca.crt"), ca)
    const port = await freePort()
    const quick = writeScript("quick.json", { responses: [] })
    const runner = await launch(port, [
      "serve", "--port", "0", "--cluster", "--store", "postgres", "--runner-port", String(port), "--shards-per-group", "4",
      "--shard-lock-ttl", "3", "--script", quick, "--runner-tls-cert", cert, "--runner-tls-key", key, "--runner-tls-ca", ca
    ])
    const fingerprintA = fingerprintOf(readFileSync(join(certificates.dir, "runner-a.crt"), "utf8"))
    const fingerprintB = fingerprintOf(readFileSync(join(certificates.dir, "runner-b.crt"), "utf8"))
    expect(await presented(port)).toBe(fingerprintA)

    // Rotated in place, then SIGHUP: the next connection gets B's certificate.
    put("runner-b")
    runner.process.child.kill("SIGHUP")
    await runner.process.waitForStderr(/the runners' TLS certificate, key and CA were read again \(SIGHUP\): new connections use them/)
    expect(await presented(port)).toBe(fingerprintB)

    // Not a certificate: refused, named by its flag; B's certificate stays.
    writeFileSync(cert, "not a certificate\n")
    runner.process.child.kill("SIGHUP")
    await runner.process.waitForStderr(/the runners' TLS files were not reloaded \(SIGHUP\): --runner-tls-cert: the file holds no PEM certificate \([^)]*\); the runner keeps the certificate it has/)
    expect(await presented(port)).toBe(fingerprintB)

    // A's certificate with B's key: refused too.
    copyFileSync(join(certificates.dir, "runner-a.crt"), cert)
    runner.process.child.kill("SIGHUP")
    await runner.process.waitForStderr(/not reloaded \(SIGHUP\): --runner-tls-key: the key is not the one of --runner-tls-cert's certificate/)
    expect(await presented(port)).toBe(fingerprintB)
    expect(runner.stderr()).not.toContain(files)
    expect(runner.stderr()).not.toContain("PRIVATE KEY")
    expect(runner.process.child.exitCode).toBe(null)
  })
})
