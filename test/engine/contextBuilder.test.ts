import { describe, expect, it } from "@effect/vitest"
import * as FastCheck from "effect/FastCheck"
import * as Transcript from "../../src/domain/Transcript.js"
import * as ContextBuilder from "../../src/services/ContextBuilder.js"

const text = FastCheck.string({ maxLength: 12 })
const call = FastCheck.record({
  toolCallId: FastCheck.string({ minLength: 1, maxLength: 4 }),
  tool: FastCheck.constantFrom("read_file", "shell"),
  args: FastCheck.dictionary(FastCheck.string({ maxLength: 3 }), FastCheck.oneof(FastCheck.integer(), text)),
  result: FastCheck.option(FastCheck.record({ content: text, isError: FastCheck.boolean() }), { nil: undefined })
}).map(({ result, ...rest }) => (result === undefined ? rest : { ...rest, result }))
const entry: FastCheck.Arbitrary<Transcript.TranscriptEntry> = FastCheck.oneof(
  FastCheck.record({ role: FastCheck.constant("user" as const), turnId: FastCheck.constant("turn_1"), content: text }),
  FastCheck.record({ role: FastCheck.constant("assistant" as const), turnId: FastCheck.constant("turn_1"), content: text, toolCalls: FastCheck.array(call, { maxLength: 3 }) })
)
const transcript: FastCheck.Arbitrary<Transcript.Transcript> = FastCheck.record({
  entries: FastCheck.array(entry, { maxLength: 12 }),
  open: FastCheck.option(entry.filter((e): e is Transcript.AssistantEntry => e.role === "assistant"), { nil: undefined })
})

const input = (t: Transcript.Transcript): ContextBuilder.ContextInput => ({
  sessionId: "sess_1",
  cwd: "/w",
  transcript: t,
  tools: [{ name: "read_file", description: "reads", inputSchema: { type: "object" } }]
})

describe("requests built from kept renderings", () => {
  it("the estimate equals estimating the whole request, before and after entries change", () =>
    FastCheck.assert(FastCheck.property(transcript, text, (t, added) => {
      const built = ContextBuilder.buildWith([{ id: "base", source: "base", priority: 0, content: "Be brief." }], input(t))
      expect(built.tokens).toEqual(ContextBuilder.estimate(built.request))
      expect(JSON.stringify(built.request.messages).length).toBe(Transcript.rendered(t).jsonLength)
      // A later request, with one entry replaced and one added: the kept renderings of the others still add up.
      const changed: Transcript.Transcript = {
        entries: [...t.entries.map((e, i) => (i === 0 ? { ...e, content: e.content + added } : e)), { role: "user", turnId: "turn_2", content: added }],
        open: undefined
      }
      const again = ContextBuilder.buildWith([], input(changed))
      expect(again.tokens).toEqual(ContextBuilder.estimate(again.request))
      expect(again.request.messages[0]).toMatchObject(changed.entries[0]!.role === "user" ? { content: changed.entries[0]!.content } : {})
    })))
})
