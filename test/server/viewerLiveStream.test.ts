/**
 * The viewer's SSE parser (`sseParser` in the page's liveStream.js, run here in Node): the page reads
 * `/live` with `fetch` so that it can send its key, and parses the stream itself. The server's own
 * encoding (`Live.encode`) read back, whatever the cuts between chunks; the WHATWG rules for line
 * ends, comments and fields.
 */
import { describe, expect, it } from "vitest"
import { AgentEvent } from "../../src/index.js"
import { Live } from "../../src/server.js"
// @ts-expect-error The page's own module (plain JavaScript, no types).
import { sseParser } from "../../src/server/viewer/liveStream.js"

interface Parsed {
  readonly id: string
  readonly event: string
  readonly data: string
}

const parse = (chunks: ReadonlyArray<string>): Array<Parsed> => {
  const seen: Array<Parsed> = []
  const parser = sseParser((event: Parsed) => seen.push(event))
  for (const chunk of chunks) parser.feed(chunk)
  return seen
}

const event = (sequence: number, text: string): AgentEvent.AgentEvent =>
  ({
    id: `evt_${sequence}`,
    sessionId: "sess_1",
    turnId: "turn_1",
    sequence,
    timestamp: "2026-01-01T00:00:00.000Z",
    type: "model.delta",
    payload: { text }
  }) as AgentEvent.AgentEvent

describe("the viewer's SSE parser", () => {
  it("reads back what the server writes, cut between chunks anywhere", () => {
    const events = [event(1, "one"), event(2, "two\nlines and a \r in it"), event(3, "ünïcödé ✓")]
    const stream = ": connected\n\n" + events.map(Live.encode).join(": keep-alive\n\n")
    const expected = events.map((e) => ({ id: String(e.sequence), event: e.type, data: AgentEvent.encodeJson(e) }))
    expect(parse([stream])).toEqual(expected)
    for (let cut = 1; cut < stream.length; cut++) expect(parse([stream.slice(0, cut), stream.slice(cut)]), `cut at ${cut}`).toEqual(expected)
    expect(parse(Array.from(stream))).toEqual(expected)
  })

  it("follows the WHATWG rules: CR LF and CR line ends, data over several lines, comments, no data no event", () => {
    expect(parse(["id: 7\r\nevent: a\r\ndata: x\r\ndata:  y\r\n\r\n"])).toEqual([{ id: "7", event: "a", data: "x\n y" }])
    // A CR last in a chunk may be half of a CR LF: the line it ends is read once the next chunk says.
    expect(parse(["data: x\r", "\r", "data: y\r\r", "\n"])).toEqual([{ id: "", event: "message", data: "x" }, { id: "", event: "message", data: "y" }])
    expect(parse(["data: z\r", "\n\r", "\n"])).toEqual([{ id: "", event: "message", data: "z" }])
    expect(parse([": only a comment\n\nevent: b\n\ndata\n\n"])).toEqual([{ id: "", event: "message", data: "" }])
    // The last id stays until another is given; one holding NUL is ignored.
    expect(parse(["id: 1\ndata: a\n\ndata: b\n\nid: 2\u0000\ndata: c\n\n"]).map((e) => e.id)).toEqual(["1", "1", "1"])
    // An event not ended by a blank line is not dispatched.
    expect(parse(["data: unfinished\n"])).toEqual([])
  })

  it("a line of 4 MiB in 64 KiB chunks is read whole", () => {
    const big = "x".repeat(4 * 1024 * 1024)
    const stream = `id: 1\nevent: e\ndata: ${big}\n\n`
    const chunks: Array<string> = []
    for (let at = 0; at < stream.length; at += 65536) chunks.push(stream.slice(at, at + 65536))
    const [only] = parse(chunks)
    expect(only?.data.length).toBe(big.length)
  })
})
