import { describe, expect, it } from "@effect/vitest"
import * as Addresses from "../../src/layers/web/Addresses.js"

describe("web_fetch's address rules", () => {
  it("refuses loopback, private, link-local, CGNAT, metadata, multicast, unspecified and mapped forms", () => {
    for (
      const address of [
        "127.0.0.1", "127.8.9.10", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.0.1", "169.254.169.254", "100.64.0.1",
        "100.127.255.255", "0.0.0.0", "0.1.2.3", "224.0.0.1", "239.255.255.250", "255.255.255.255", "198.18.0.1",
        "::", "::1", "[::1]", "fe80::1", "fe80::1%eth0", "fc00::1", "fd12:3456::1", "ff02::1",
        "::ffff:127.0.0.1", "::ffff:7f00:1", "::ffff:8.8.8.8", "64:ff9b::7f00:1", "64:ff9b::10.0.0.1", "2002:7f00:1::1",
        "not an address"
      ]
    ) expect([address, Addresses.isPrivate(address)]).toEqual([address, true])
  })

  it("refuses the IPv6 ranges IANA's registry says are not globally reachable", () => {
    // 64:ff9b:1::/48 is NAT64 for a site's own translator (RFC 8215): 64:ff9b:1::a00:1 can be 10.0.0.1 there.
    // The others: benchmarking (2001:2::/48), documentation (3fff::/20), SRv6 SIDs (5f00::/16), dummy prefix (100:0:0:1::/64).
    for (const address of ["64:ff9b:1::a00:1", "64:ff9b:1:ffff::1", "2001:2::1", "3fff::1", "3fff:fff::1", "5f00::1", "100:0:0:1::1"]) {
      expect([address, Addresses.isPrivate(address)]).toEqual([address, true])
    }
    for (const address of ["64:ff9b:2::1", "2001:3::1", "4000::1", "5f01::1"]) expect([address, Addresses.isPrivate(address)]).toEqual([address, false])
  })

  it("refuses Teredo (2001::/32) and the rest of 2001::/23 but its globally reachable exceptions", () => {
    // Teredo's last 32 bits are the client's IPv4 address inverted: a relay tunnels to it over UDP, so
    // 2001:0:4136:e378:8000:63bf:f5ff:fffe is 10.0.0.1 as the relay sees it. IANA: 2001::/23 is not
    // globally reachable, 2001::/32 "N/A"; the exceptions below are.
    for (const address of ["2001:0:4136:e378:8000:63bf:f5ff:fffe", "2001::1", "2001:0:5ef5:79fd:0:0:f7f7:f7f7", "2001:1::4", "2001:100::1", "2001:1ff::1"]) {
      expect([address, Addresses.isPrivate(address)]).toEqual([address, true])
    }
    for (const address of ["2001:1::1", "2001:1::2", "2001:1::3", "2001:3::1", "2001:4:112::1", "2001:20::1", "2001:30::1", "2001:200::1", "2001:4860::8888"]) {
      expect([address, Addresses.isPrivate(address)]).toEqual([address, false])
    }
  })

  it("allows public unicast, IPv4 and IPv6, NAT64 of a public address", () => {
    for (const address of ["8.8.8.8", "93.184.216.34", "100.63.255.255", "100.128.0.1", "172.32.0.1", "2606:4700::1111", "64:ff9b::808:808"]) {
      expect([address, Addresses.isPrivate(address)]).toEqual([address, false])
    }
  })

  it("the user's allowance: all, or the addresses and networks listed only", () => {
    expect(Addresses.refusedUnder(true)("127.0.0.1")).toBe(false)
    const some = Addresses.refusedUnder(["127.0.0.1", "10.1.0.0/16"])
    expect(some("127.0.0.1")).toBe(false)
    expect(some("10.1.200.3")).toBe(false)
    expect(some("127.0.0.2")).toBe(true)
    expect(some("10.2.0.1")).toBe(true)
    expect(some("8.8.8.8")).toBe(false)
    expect(() => Addresses.refusedUnder(["nope"])).toThrow(/not an address/)
  })
})
