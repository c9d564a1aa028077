/**
 * reach45: what listing a server's tools costs the agent when each tool has an output schema. The
 * SDK's client compiled every one with Ajv inside `listTools` (synchronously, before the agent's
 * bounds saw the list); `McpConnection.lazyOutputValidator` compiles a tool's schema at its first
 * result instead. The two are alternated, round by round, in one process, each listing the same
 * server (test/fixtures/mcp/wide.mjs: `tools` tools, each output schema an object of `properties`
 * properties with a pattern and a format; 10,000 × 5 is a 4 MB answer, under the 10 MiB line bound).
 * Per contender: the client's CPU for `listTools`, the event loop's longest stall meanwhile (the
 * compile is synchronous: no timer, no other session, no cancel runs), and the heap the connected
 * client keeps (after a GC). Not part of `npm run bench`; no timing is asserted anywhere:
 *
 *   node --expose-gc --import tsx bench/mcp-output-schemas.ts [rounds=4] [tools=10000] [properties=5]
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { lazyOutputValidator } from "../src/layers/mcp/McpConnection.js"
import { StdioTransport } from "../src/layers/mcp/StdioTransport.js"
import { median } from "./measure.js"

const [rounds = 4, tools = 10_000, properties = 5] = process.argv.slice(2).map(Number)
const server = new URL("../test/fixtures/mcp/wide.mjs", import.meta.url).pathname
const env = { TOOLS: String(tools), OUTPUT_PROPERTIES: String(properties), PATH: process.env.PATH ?? "" }

interface Sample {
  readonly cpuMs: number
  readonly stallMs: number
  readonly heapMb: number
  readonly listed: number
}

const gc = () => (globalThis as { gc?: () => void }).gc?.()

const once = async (lazy: boolean): Promise<Sample> => {
  const client = new Client({ name: "bench", version: "0" }, { capabilities: {}, ...(lazy ? { jsonSchemaValidator: lazyOutputValidator() } : {}) })
  await client.connect(new StdioTransport({ command: process.execPath, args: [server], env, cwd: process.cwd() }))
  gc()
  const heapBefore = process.memoryUsage().heapUsed
  // The longest gap between a 5 ms timer's runs while the list is read.
  let stall = 0
  let last = performance.now()
  const probe = setInterval(() => {
    const now = performance.now()
    stall = Math.max(stall, now - last)
    last = now
  }, 5)
  const cpu = process.cpuUsage()
  const listed = await client.listTools({}, { timeout: 10 * 60 * 1000 })
  const used = process.cpuUsage(cpu)
  clearInterval(probe)
  stall = Math.max(stall, performance.now() - last)
  gc()
  const heapMb = (process.memoryUsage().heapUsed - heapBefore) / 1024 / 1024
  await client.close()
  return { cpuMs: (used.user + used.system) / 1000, stallMs: stall, heapMb, listed: listed.tools.length }
}

// The transport's close waits on unref'd timers (the agent's other work keeps it running): held here.
const held = setInterval(() => {}, 1000)
const samples: Record<"eager" | "lazy", Array<Sample>> = { eager: [], lazy: [] }
for (let round = 0; round < rounds; round++) {
  // The order alternates each round.
  for (const lazy of round % 2 === 0 ? [false, true] : [true, false]) samples[lazy ? "lazy" : "eager"].push(await once(lazy))
}
const line = (name: string, list: ReadonlyArray<Sample>) =>
  `${name.padEnd(5)}  cpu ${median(list.map((s) => s.cpuMs)).toFixed(0)} ms  stall ${median(list.map((s) => s.stallMs)).toFixed(0)} ms  kept ${
    median(list.map((s) => s.heapMb)).toFixed(1)
  } MB  (${list[0]!.listed} tools; medians of ${list.length})`
console.log(`${tools} tools, output schemas of ${properties} properties`)
console.log(line("eager", samples.eager))
console.log(line("lazy", samples.lazy))
clearInterval(held)
