/**
 * A scripted model for pi-agent-core that does what our `FakeModelProvider` does with a request: nothing.
 * It answers each request with the next scripted message, handed over whole (a tool call's arguments
 * in its `toolcall_end`, a text in one delta), as our fake hands the engine a response in one chunk.
 *
 * pi-ai's faux provider does more per request than either agent loop: it serializes the whole
 * context to a string (`serializeContext`, every earlier message and the tools' JSON Schema, so
 * quadratic over a turn) to estimate usage, `structuredClone`s the scripted message, and streams a
 * tool call's arguments 4 characters a delta, a microtask each. Row 19 measured our engine against
 * pi-agent-core *plus* that work, where our fake does none of it (docs/benchmarks.md, "row19b").
 * Agent loops are compared here, each over a model that costs next to nothing.
 */
import type { StreamFn } from "@mariozechner/pi-agent-core"
import { type AssistantMessage, createAssistantMessageEventStream, fauxAssistantMessage, fauxToolCall, type Model } from "@mariozechner/pi-ai"

/** The model object the scripted stream is given (pi's `Agent` needs one; nothing reads it but the stream). */
export const scriptedModel: Model<"scripted"> = {
  id: "scripted",
  name: "scripted",
  api: "scripted",
  provider: "scripted",
  baseUrl: "http://localhost:0",
  reasoning: false,
  input: ["text"],
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
  contextWindow: 128_000,
  maxTokens: 16_384
}

/** A stream function answering each request with the next of `responses` (an error message when they run out). */
export const scriptedStreamFn = (responses: ReadonlyArray<AssistantMessage>): StreamFn => {
  let next = 0
  return () => {
    const stream = createAssistantMessageEventStream()
    const message = responses[next++]
    if (message === undefined) {
      const error: AssistantMessage = { ...responses[responses.length - 1]!, content: [], stopReason: "error", errorMessage: "no more scripted responses" }
      stream.push({ type: "error", reason: "error", error })
      stream.end(error)
      return stream
    }
    const partial: AssistantMessage = { ...message, content: [] }
    stream.push({ type: "start", partial })
    message.content.forEach((block, contentIndex) => {
      partial.content = message.content.slice(0, contentIndex + 1)
      if (block.type === "toolCall") {
        stream.push({ type: "toolcall_start", contentIndex, partial })
        stream.push({ type: "toolcall_end", contentIndex, toolCall: block, partial })
      } else if (block.type === "text") {
        stream.push({ type: "text_start", contentIndex, partial })
        stream.push({ type: "text_delta", contentIndex, delta: block.text, partial })
        stream.push({ type: "text_end", contentIndex, content: block.text, partial })
      }
    })
    const reason = message.stopReason === "toolUse" || message.stopReason === "length" ? message.stopReason : "stop"
    stream.push({ type: "done", reason, message })
    stream.end(message)
    return stream
  }
}

/** Row 19's answers on pi's side: `steps` calls of `read_file` of `a.txt`, then "done". */
export const readFileScript = (steps: number): Array<AssistantMessage> => [
  ...Array.from({ length: steps }, (_, i) => fauxAssistantMessage(fauxToolCall("read_file", { path: "a.txt" }, { id: `call_${i}` }), { stopReason: "toolUse" })),
  fauxAssistantMessage("done")
]

/**
 * A stream function answering every request with `deltas` as text, one delta per microtask (rows 1–2's
 * pi side): what pi-ai's real providers hand the agent — one `text_delta` per SSE event, `partial`
 * shared and grown in place — without pi-ai's faux provider's extra work per delta (a `{...partial}`
 * copy, `structuredClone`, `serializeContext`), as our side's model does none of it either.
 */
export const perDeltaStreamFn = (deltas: ReadonlyArray<string>): StreamFn => () => {
  const stream = createAssistantMessageEventStream()
  const message = fauxAssistantMessage(deltas.join(""))
  const text = { type: "text" as const, text: "" }
  const partial: AssistantMessage = { ...message, content: [text] }
  void (async () => {
    stream.push({ type: "start", partial })
    stream.push({ type: "text_start", contentIndex: 0, partial })
    for (const delta of deltas) {
      await new Promise<void>((resolve) => queueMicrotask(resolve))
      text.text += delta
      stream.push({ type: "text_delta", contentIndex: 0, delta, partial })
    }
    stream.push({ type: "text_end", contentIndex: 0, content: text.text, partial })
    stream.push({ type: "done", reason: "stop", message })
    stream.end(message)
  })()
  return stream
}
