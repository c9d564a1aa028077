/**
 * mend56 (review56 F1): whom a holder's record lets this process judge. A holder of this host name
 * and another boot was "dead" (taken as this machine before a reboot); host names repeat across
 * machines, so it is unknown: a lease waits out its expiry, a JSONL lock is released by hand.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Holder from "../../src/layers/writer/Holder.js"

const holder = (fields: Partial<Holder.Holder>): Holder.Holder => ({ pid: 1, hostname: "h", startedAt: "2026-01-01T00:00:00.000Z", nonce: "n", ...fields })
const me: Holder.Own = { hostname: "h", bootId: "boot-1", pidNamespace: "pid:[4026531836]", utsNamespace: "uts:[4026531838]" }

describe("what a holder's record tells", () => {
  it("this host name, another boot: unknown (another machine of this name, or this one before a reboot), never dead", () => {
    expect(Holder.sameMachine(me, holder({ bootId: "boot-2", pidNamespace: "pid:[4026531836]" }))).toBe("unknown")
  })

  it("this boot and pid namespace: judged by the pid; another pid namespace or host name of another boot: unknown", () => {
    expect(Holder.sameMachine(me, holder({ bootId: "boot-1", pidNamespace: "pid:[4026531836]" }))).toBe("judge by pid")
    expect(Holder.sameMachine(me, holder({ bootId: "boot-1", pidNamespace: "pid:[4026532999]" }))).toBe("unknown")
    expect(Holder.sameMachine(me, holder({ hostname: "other", bootId: "boot-1", pidNamespace: "pid:[4026531836]" }))).toBe("judge by pid")
    expect(Holder.sameMachine(me, holder({ hostname: "other", bootId: "boot-2", pidNamespace: "pid:[4026531836]" }))).toBe("unknown")
  })

  it("stores45: this host name and a boot this machine recorded as its own: dead (that boot is over); a boot it did not record: unknown", () => {
    const recorded: Holder.Own = { ...me, recordedBoot: (bootId, host) => bootId === "boot-0" && host === "h" }
    expect(Holder.sameMachine(recorded, holder({ bootId: "boot-0", pidNamespace: "pid:[4026531836]" }))).toBe("dead")
    expect(Holder.sameMachine(recorded, holder({ bootId: "boot-0", pidNamespace: "pid:[4026532999]" }))).toBe("dead")
    expect(Holder.sameMachine(recorded, holder({ bootId: "boot-2" }))).toBe("unknown")
    // Another host name: never judged by this machine's records.
    expect(Holder.sameMachine(recorded, holder({ hostname: "other", bootId: "boot-0" }))).toBe("unknown")
    // This boot: judged by the pid, as before.
    expect(Holder.sameMachine(recorded, holder({ bootId: "boot-1", pidNamespace: "pid:[4026531836]" }))).toBe("judge by pid")
  })
})
