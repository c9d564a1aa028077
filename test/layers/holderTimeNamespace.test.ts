/**
 * redact40 (review40 F5): on a kernel without time namespaces (before Linux 5.6: RHEL 8's 4.18,
 * Ubuntu 20.04's 5.4, Amazon Linux 2's) `/proc/self/ns/time` does not exist and every process of a
 * boot reads one CLOCK_MONOTONIC — yet no holder recorded a time namespace, so none was ever judged
 * on that clock: every lease of another container of the boot stayed on the wall clock.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Holder from "../../src/layers/writer/Holder.js"

/** A `readlink` over `links`; any other path fails as the kernel does, with `code`. */
const readlinkOf = (links: Record<string, string>, code = "ENOENT") => (path: string): string => {
  const target = links[path]
  if (target === undefined) throw Object.assign(new Error(`${code}: ${path}`), { code })
  return target
}

const holder = (fields: Partial<Holder.Holder>): Holder.Holder => ({ pid: 1, hostname: "h", startedAt: "2026-01-01T00:00:00.000Z", nonce: "n", ...fields })

describe("a holder's time namespace", () => {
  it("is the link's target where the kernel has time namespaces", () => {
    expect(Holder.timeNamespaceOf(readlinkOf({ "/proc/self/ns/time": "time:[4026531834]", "/proc/self/ns/pid": "pid:[4026531836]" })))
      .toBe("time:[4026531834]")
  })

  it("is recorded as none where the kernel has none (ns/time missing, ns/pid there): two such holders of one boot share the monotonic clock", () => {
    expect(Holder.timeNamespaceOf(readlinkOf({ "/proc/self/ns/pid": "pid:[4026531836]" }))).toBe("none")
    const none = "none"
    const me = { bootId: "boot-1", timeNamespace: none }
    // Another container of the boot: another pid namespace and host name, the same clock.
    expect(Holder.sameMonotonicClock(me, holder({ bootId: "boot-1", timeNamespace: none, pidNamespace: "pid:[4026532999]", hostname: "other" }))).toBe(true)
    // An older version's holder, which records no time namespace: the wall clock, as before.
    expect(Holder.sameMonotonicClock(me, holder({ bootId: "boot-1" }))).toBe(false)
    // Another boot: never.
    expect(Holder.sameMonotonicClock(me, holder({ bootId: "boot-2", timeNamespace: none }))).toBe(false)
  })

  it("is unknown where it cannot be told: no /proc at all, or ns/time unreadable for another reason", () => {
    expect(Holder.timeNamespaceOf(readlinkOf({}))).toBeUndefined()
    expect(Holder.timeNamespaceOf(readlinkOf({ "/proc/self/ns/pid": "pid:[4026531836]" }, "EACCES"))).toBeUndefined()
    const me = { bootId: "boot-1", timeNamespace: undefined }
    expect(Holder.sameMonotonicClock(me, holder({ bootId: "boot-1" }))).toBe(false)
  })
})
