/**
 * `PromptCache.partHashes` hashes a request's tools as sent; the engine's steps send one list, so the
 * list's JSON is written once, not for every response that reports its usage (failed before: the
 * JSON was written at every call). A different list, or a list of other tools, hashes as its content.
 */
import { describe, expect, it } from "vitest"
import * as PromptCache from "../../src/engine/PromptCache.js"
import type { ModelRequest } from "../../src/services/ModelProvider.js"

const spec = (name: string, reads: { count: number }) => ({
  name,
  description: `the ${name} tool`,
  get inputSchema() {
    reads.count++
    return { type: "object", properties: { path: { type: "string" } } }
  }
})

const hashes = (tools: ReadonlyArray<unknown>) =>
  PromptCache.partHashes({ parts: [], request: { system: "", messages: [], tools } as unknown as ModelRequest })

describe("the hash of a request's tools", () => {
  it("writes one list's JSON once", () => {
    const reads = { count: 0 }
    const tools = [spec("read_file", reads)]
    const first = hashes(tools)
    const second = hashes(tools)
    expect(second).toEqual(first)
    expect(reads.count).toBe(1)
  })

  it("is the content's: an equal list hashes alike, another list otherwise", () => {
    const reads = { count: 0 }
    const [a] = hashes([spec("read_file", reads)])
    const [b] = hashes([spec("read_file", reads)])
    const [c] = hashes([spec("write_file", reads)])
    expect(a).toEqual({ part: "tool definitions", source: "tools", hash: b!.hash })
    expect(c!.hash).not.toBe(a!.hash)
  })
})
