/**
 * TLS material for the runners' port in tests and benchmarks (bench/runner-tls.ts), never for use:
 * made with `openssl` at run time in a temporary folder (removed by `remove`): a cluster CA, runner
 * certificates it signs for 127.0.0.1 (IP SAN), one it signs for another name only, and a second CA
 * with a certificate of its own (not the cluster's). EC P-256 keys: quick to make. As docs/scaling.md tells operators to make them.
 */
import { execFileSync } from "node:child_process"
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Redacted from "effect/Redacted"
import type { RunnerTls } from "../../src/cluster.js"

/** Runs openssl in `dir`, quietly; a failure throws with its stderr. */
const openssl = (dir: string, args: ReadonlyArray<string>) => execFileSync("openssl", args, { cwd: dir, stdio: ["ignore", "pipe", "pipe"] })

const makeCa = (dir: string, name: string) => {
  openssl(dir, ["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", `${name}.key`])
  openssl(dir, ["req", "-x509", "-new", "-key", `${name}.key`, "-sha256", "-days", "2", "-subj", `/CN=${name}`, "-out", `${name}.crt`])
}

/** A certificate for `san` (e.g. `IP:127.0.0.1`) signed by the CA `ca`, usable by both sides of a connection. */
const makeCertificate = (dir: string, name: string, ca: string, san: string) => {
  openssl(dir, ["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", `${name}.key`])
  chmodSync(join(dir, `${name}.key`), 0o600)
  openssl(dir, ["req", "-new", "-key", `${name}.key`, "-subj", `/CN=${name}`, "-out", `${name}.csr`])
  writeFileSync(join(dir, `${name}.ext`), `subjectAltName=${san}\nextendedKeyUsage=serverAuth,clientAuth\n`)
  openssl(dir, ["x509", "-req", "-in", `${name}.csr`, "-CA", `${ca}.crt`, "-CAkey", `${ca}.key`, "-CAcreateserial", "-days", "2", "-sha256", "-extfile", `${name}.ext`, "-out", `${name}.crt`])
}

/** A runner's material as the library takes it, read from `dir`. */
const material = (dir: string, name: string, ca: string): RunnerTls.RunnerTls => ({
  certificate: readFileSync(join(dir, `${name}.crt`), "utf8"),
  key: Redacted.make(readFileSync(join(dir, `${name}.key`), "utf8")),
  ca: readFileSync(join(dir, `${ca}.crt`), "utf8")
})

/** The test's certificates, and the folder of their files (for the CLI's flags). */
export interface Certificates {
  readonly dir: string
  /** Runners of the cluster, for 127.0.0.1. */
  readonly runnerA: RunnerTls.RunnerTls
  readonly runnerB: RunnerTls.RunnerTls
  /** Signed by the cluster CA, but for another name only (`elsewhere.invalid`). */
  readonly misnamed: RunnerTls.RunnerTls
  /** For 127.0.0.1, signed by another CA (and trusting that CA only). */
  readonly foreign: RunnerTls.RunnerTls
  readonly remove: () => void
}

export const makeCertificates = (): Certificates => {
  const dir = mkdtempSync(join(tmpdir(), "effect-agent-runner-tls-"))
  makeCa(dir, "cluster-ca")
  makeCa(dir, "other-ca")
  makeCertificate(dir, "runner-a", "cluster-ca", "IP:127.0.0.1")
  makeCertificate(dir, "runner-b", "cluster-ca", "IP:127.0.0.1")
  makeCertificate(dir, "misnamed", "cluster-ca", "DNS:elsewhere.invalid")
  makeCertificate(dir, "foreign", "other-ca", "IP:127.0.0.1")
  return {
    dir,
    runnerA: material(dir, "runner-a", "cluster-ca"),
    runnerB: material(dir, "runner-b", "cluster-ca"),
    misnamed: material(dir, "misnamed", "cluster-ca"),
    foreign: material(dir, "foreign", "other-ca"),
    remove: () => rmSync(dir, { recursive: true, force: true })
  }
}
