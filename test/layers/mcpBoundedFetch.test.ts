/**
 * The cap on an HTTP MCP server's event stream counts one event — to the blank line that ends it,
 * as the SDK's parser joins its `data:` lines — whatever the chunks it arrives in. Before, it
 * counted bytes since the last line end: an event of many short lines passed any cap.
 */
import { describe, expect, it } from "vitest"
import * as BoundedFetch from "../../src/layers/mcp/BoundedFetch.js"

const limit = 32

/** What the capped fetch reads of a response in these chunks, or its error's message. */
const read = (chunks: ReadonlyArray<string>, type = "text/event-stream") => {
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(new TextEncoder().encode(chunk))
      controller.close()
    }
  })
  const capped = BoundedFetch.make(limit, () => Promise.resolve(new Response(body, { headers: { "content-type": type } })))
  return capped("http://127.0.0.1/mcp").then((response) => response.text()).then((text) => text.length, (error: Error) => error.message)
}

const over = `the server's answer is over ${limit} bytes in one event`

describe("BoundedFetch on an event stream", () => {
  it("one event of many short data: lines past the cap is refused, in one chunk or many", async () => {
    const event = Array.from({ length: 10 }, () => "data: 12\n").join("")
    expect(await read([event + "\n"])).toBe(over)
    expect(await read([...event])).toBe(over)
  })

  for (const [name, end] of [["LF", "\n\n"], ["CRLF", "\r\n\r\n"], ["CR", "\r\r"], ["mixed", "\r\n\n"], ["mixed", "\n\r\n"]] as const) {
    it(`many events under the cap each, ended by a blank line (${name} ${JSON.stringify(end)}), are read whole`, async () => {
      const stream = Array.from({ length: 100 }, () => `data: 1234567890${end}`).join("")
      expect(await read([stream])).toBe(stream.length)
      // Cut after every byte: a line end's two bytes in two chunks are still one line end, or two.
      expect(await read([...stream])).toBe(stream.length)
    })
  }

  it("a CRLF split across chunks is one line end, not a blank line: the event goes on and is refused", async () => {
    const chunks = Array.from({ length: 10 }, () => ["data: 12\r", "\n"]).flat()
    expect(await read(chunks)).toBe(over)
  })

  it("a JSON answer with text/event-stream in a parameter of its type is counted whole", async () => {
    const body = Array.from({ length: 10 }, () => "1,\n\n").join("")
    expect(await read([body], "application/json; profile=\"text/event-stream\"")).toBe(`the server's answer is over ${limit} bytes`)
    expect(await read([body], "Text/Event-Stream; charset=utf-8")).toBe(body.length)
  })
})
