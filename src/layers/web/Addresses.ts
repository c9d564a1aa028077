/**
 * Which addresses `web_fetch` may connect to without the user's allowance: public unicast only.
 * Refused: "this" network and the unspecified addresses (`0.0.0.0/8`, `::`), loopback, private
 * (RFC 1918, IPv6 unique local), link-local (the cloud metadata service 169.254.169.254 among
 * them), CGNAT `100.64.0.0/10`, benchmarking, documentation and reserved ranges, multicast and
 * broadcast, and every IPv4-mapped IPv6 address (`::ffff:127.0.0.1` is 127.0.0.1) — every range
 * IANA's special-purpose registries say is not globally reachable, local-use NAT64
 * `64:ff9b:1::/48` and the IETF protocol assignments `2001::/23` (Teredo `2001::/32` among them,
 * whose relays tunnel to the IPv4 address it carries) but their reachable exceptions. IPv6 forms that embed an IPv4 address (NAT64 `64:ff9b::/96`, 6to4
 * `2002::/16`) are judged by that address.
 *
 * The check uses Node's own `net.BlockList`; an address is judged after DNS resolution, and the
 * connection is made to the address that was judged (see `WebFetch`).
 *
 * @since 0.5.0
 * @internal
 */
import { BlockList, isIPv4, isIPv6 } from "node:net"

// Two lists: Node's BlockList checks an IPv4 address against IPv6 rules too (as IPv4-mapped), so
// `::ffff:0:0/96` in the same list would refuse every IPv4 address.
const blocked = new BlockList()
const blocked6 = new BlockList()
for (
  const [network, prefix] of [
    ["0.0.0.0", 8],
    ["10.0.0.0", 8],
    ["100.64.0.0", 10],
    ["127.0.0.0", 8],
    ["169.254.0.0", 16],
    ["172.16.0.0", 12],
    ["192.0.0.0", 24],
    ["192.0.2.0", 24],
    ["192.88.99.0", 24],
    ["192.168.0.0", 16],
    ["198.18.0.0", 15],
    ["198.51.100.0", 24],
    ["203.0.113.0", 24],
    ["224.0.0.0", 4],
    ["240.0.0.0", 4]
  ] as const
) blocked.addSubnet(network, prefix, "ipv4")
for (
  const [network, prefix] of [
    ["::", 128],
    ["::1", 128],
    ["::ffff:0:0", 96],
    ["::", 96],
    // NAT64 for a site's own translator (RFC 8215): what it reaches is the site's, private addresses included.
    ["64:ff9b:1::", 48],
    ["100::", 64],
    ["100:0:0:1::", 64],
    // IETF protocol assignments, Teredo 2001::/32 among them: a relay tunnels a Teredo address to the
    // IPv4 address its last 32 bits carry (inverted), which can be a private one on the relay's side.
    // The globally reachable exceptions are in `reachable6`.
    ["2001::", 23],
    ["2001:db8::", 32],
    ["3fff::", 20],
    ["5f00::", 16],
    ["fc00::", 7],
    ["fe80::", 10],
    ["fec0::", 10],
    ["ff00::", 8]
  ] as const
) blocked6.addSubnet(network, prefix, "ipv6")
// IANA's "globally reachable" exceptions inside 2001::/23: anycast DNS/PCP/SRP, AMT, AS112, ORCHIDv2, drone IDs.
const reachable6 = new BlockList()
for (
  const [network, prefix] of [
    ["2001:1::1", 128],
    ["2001:1::2", 128],
    ["2001:1::3", 128],
    ["2001:3::", 32],
    ["2001:4:112::", 48],
    ["2001:20::", 28],
    ["2001:30::", 28]
  ] as const
) reachable6.addSubnet(network, prefix, "ipv6")

/** The 8 groups of an IPv6 address, or undefined when it is not one. */
const groupsOf = (address: string): ReadonlyArray<number> | undefined => {
  if (!isIPv6(address)) return undefined
  let text = address.toLowerCase().replace(/%.*$/, "")
  // A trailing dotted IPv4 part is two groups.
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text)
  if (dotted !== null) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number]
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`
  }
  const [head, tail] = text.includes("::") ? text.split("::") as [string, string] : [text, undefined]
  const left = head === "" ? [] : head.split(":")
  const right = tail === undefined || tail === "" ? [] : tail.split(":")
  const fill = tail === undefined ? [] : Array.from({ length: 8 - left.length - right.length }, () => "0")
  return [...left, ...fill, ...right].map((group) => parseInt(group, 16))
}

/** The IPv4 address an IPv6 one carries (NAT64 `64:ff9b::/96`, 6to4 `2002::/16`), if any. */
const embeddedIPv4 = (address: string): string | undefined => {
  const g = groupsOf(address)
  if (g === undefined) return undefined
  const v4 = (high: number, low: number) => `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`
  if (g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((x) => x === 0)) return v4(g[6]!, g[7]!)
  if (g[0] === 0x2002) return v4(g[1]!, g[2]!)
  return undefined
}

/** Whether `address` (an IP literal) is one `web_fetch` refuses without the user's allowance. Not an IP: refused. */
export const isPrivate = (address: string): boolean => {
  const bare = address.replace(/^\[|\]$/g, "")
  if (isIPv4(bare)) return blocked.check(bare, "ipv4")
  if (!isIPv6(bare)) return true
  const unzoned = bare.replace(/%.*$/, "")
  if (blocked6.check(unzoned, "ipv6")) return !reachable6.check(unzoned, "ipv6")
  const inner = embeddedIPv4(unzoned)
  return inner !== undefined && blocked.check(inner, "ipv4")
}

/**
 * Whether an address is refused under the user's allowance: `true` allows every address, a list
 * allows those addresses and networks (`"127.0.0.1"`, `"10.0.0.0/8"`, `"::1"`) only.
 */
export const refusedUnder = (allow: boolean | ReadonlyArray<string>): ((address: string) => boolean) => {
  if (allow === true) return () => false
  if (allow === false || allow.length === 0) return isPrivate
  const allowed = new BlockList()
  for (const entry of allow) {
    const [network, prefix] = entry.split("/") as [string, string | undefined]
    const type = isIPv4(network) ? "ipv4" : isIPv6(network) ? "ipv6" : undefined
    if (type === undefined) throw new Error(`${entry} is not an address or network`)
    if (prefix === undefined) allowed.addAddress(network, type)
    else allowed.addSubnet(network, Number(prefix), type)
  }
  return (address) => {
    const bare = address.replace(/^\[|\]$/g, "").replace(/%.*$/, "")
    const type = isIPv4(bare) ? "ipv4" : "ipv6"
    return isPrivate(bare) && !allowed.check(bare, type)
  }
}
