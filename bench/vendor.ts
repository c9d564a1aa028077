/**
 * The fake Anthropic Messages endpoint for the benchmarks (`bench/vendor-server.ts`), run in its own
 * process (so the CPU time the bench measures is the client's alone): every POST streams one answer of
 * BENCH_VENDOR_DELTAS (default 10,000) text deltas, one SSE event per write — unpaced (the next event
 * once the previous reached the socket: the client reads many per socket read) or, with
 * BENCH_VENDOR_PACE_MS, that many ms apart, as a vendor streams tokens. Prints its URL on stdout once
 * listening.
 *
 *   node --import tsx bench/vendor.ts
 */
import { startVendorServer } from "./vendor-server.js"

const { url } = await startVendorServer({ deltas: Number(process.env.BENCH_VENDOR_DELTAS ?? 10_000), paceMs: Number(process.env.BENCH_VENDOR_PACE_MS ?? 0) })
console.log(url)
process.on("disconnect", () => process.exit(0))
