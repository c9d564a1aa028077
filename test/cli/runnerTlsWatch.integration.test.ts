/**
 * `RunnerTlsFiles.watch` without a signal: a file that changed (looked at every `watchEvery`, here on
 * a `TestClock`) is read again and handed to the runner; files that did not change are not read; a
 * change that cannot be used is said once, not at every look. Real files and certificates (made by
 * `openssl`: an integration test).
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as TestClock from "effect/TestClock"
import { X509Certificate } from "node:crypto"
import { copyFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { makeCertificates } from "../../bench/support/certificates.js"
import * as RunnerTlsFiles from "../../src/cli/RunnerTlsFiles.js"
import { RunnerTls } from "../../src/cluster.js"

/** Until the watcher waits for its next look (a gate, not a sleep). */
const untilWaiting = Effect.gen(function*() {
  while ((yield* TestClock.sleeps()).length === 0) yield* Effect.yieldNow()
})

describe("RunnerTlsFiles.watch", () => {
  it.scoped("a changed file is read again at the next look; an unchanged one is not; a bad change is tried once", () =>
    Effect.gen(function*() {
      const certificates = makeCertificates()
      yield* Effect.addFinalizer(() => Effect.sync(() => certificates.remove()))
      const cert = join(certificates.dir, "watched.crt")
      const key = join(certificates.dir, "watched.key")
      copyFileSync(join(certificates.dir, "runner-a.crt"), cert)
      copyFileSync(join(certificates.dir, "runner-a.key"), key)
      const flags = { runnerTlsCert: Option.some(cert), runnerTlsKey: Option.some(key), runnerTlsCa: Option.some(join(certificates.dir, "cluster-ca.crt")) }
      const given: Array<string> = []
      // As the runner takes them: checked first (RunnerTls.check), then used.
      const fiber = yield* Effect.fork(RunnerTlsFiles.watch(flags, (material) =>
        RunnerTls.check(material).pipe(Effect.map(() => void given.push(new X509Certificate(material.certificate).subject)))))
      const look = Effect.gen(function*() {
        yield* untilWaiting
        yield* TestClock.adjust(RunnerTlsFiles.watchEvery)
        yield* untilWaiting
      })
      yield* look
      expect(given).toEqual([])
      copyFileSync(join(certificates.dir, "runner-b.crt"), cert)
      copyFileSync(join(certificates.dir, "runner-b.key"), key)
      yield* look
      expect(given).toEqual(["CN=runner-b"])
      yield* look
      expect(given).toEqual(["CN=runner-b"])
      // Half written: not handed over, and not tried again until the next change.
      writeFileSync(cert, "-----BEGIN CERTIFICATE-----\n")
      yield* look
      yield* look
      expect(given).toEqual(["CN=runner-b"])
      copyFileSync(join(certificates.dir, "runner-b.crt"), cert)
      yield* look
      expect(given).toEqual(["CN=runner-b", "CN=runner-b"])
      yield* Fiber.interrupt(fiber)
    }))
})
