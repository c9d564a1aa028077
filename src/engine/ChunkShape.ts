/**
 * What the engine checks of a chunk a `ModelProvider` hands it before anything of it is stored. The
 * port is public: an embedder's or a third party's adapter may hand over what its type does not
 * allow (text that is a number, a call of no name, NaN tokens), and a stored event of that shape
 * breaks the log for every reader after it. Plain `typeof` checks, no Effect and no schema decode: a
 * delta is the hot path, and a text's check is inlined where deltas are read (`ModelResponse`).
 *
 * @since 0.2.0
 * @internal
 */
import { ProviderFailure } from "../domain/Errors.js"
import * as Json from "../domain/Json.js"
import type { Usage } from "../domain/AgentEvent.js"
import type { FinishReason, ModelChunk } from "../services/ModelProvider.js"

/** What is wrong with a piece, for the kinds a reader tells apart before reading the piece's fields. */
export const faults = {
  notObject: "a chunk that is not an object",
  unknownTag: "a chunk of no known _tag",
  text: "a TextDelta whose text is not a string",
  // A getter that throws (an adapter's object, a Proxy): read once, in a try, like the SDKs' events.
  unreadable: "a chunk whose fields cannot be read"
} as const

/** Every finish reason the port's type allows (an adapter maps a vendor's other reasons to `other`). */
const finishReasons: ReadonlySet<unknown> = new Set<FinishReason>(["stop", "tool_calls", "length", "content_filter", "other"])

/**
 * What is wrong with a `ToolCall` piece, or `undefined`; `args` is the arguments as they would be
 * stored (too deep already replaced, `EventDraft.toolArguments`).
 */
export const callFault = (piece: { readonly toolCallId: unknown; readonly tool: unknown }, args: unknown): string | undefined =>
  typeof piece.toolCallId !== "string"
    ? "a ToolCall whose toolCallId is not a string"
    : typeof piece.tool !== "string"
    ? "a ToolCall whose tool is not a string"
    : Json.isJson(args)
    ? undefined
    : "a ToolCall whose args are not JSON"

/**
 * What is wrong with a `Finish` piece, or `undefined`. Its usage must be an object; its counts are
 * not checked here: an odd one (NaN, negative, fractional, no number) is stored as a count
 * (`EventDraft.usageOf`), the turn keeping its answer — what the adapters rely on for a vendor's.
 */
export const finishFault = (piece: { readonly reason: unknown; readonly usage?: unknown }): string | undefined =>
  !finishReasons.has(piece.reason)
    ? "a Finish of a reason the port does not know"
    : piece.usage === undefined || (typeof piece.usage === "object" && piece.usage !== null)
    ? undefined
    : "a Finish whose usage is not an object"

/**
 * A usage's known counts, each read once, into an object of its own: a provider's usage is not
 * kept (its other keys — `__proto__`, `constructor`, 10,000 more — never reach a turn's total; a
 * getter is not read again where the total is priced and stored). The counts are taken as they are:
 * `EventDraft.usageOf` makes them counts where they are stored.
 */
export const usageCounts = (usage: Usage): Usage => {
  const { cacheReadTokens, cacheWriteTokens, inputTokens, outputTokens } = usage
  return {
    inputTokens,
    outputTokens,
    ...(cacheReadTokens === undefined ? {} : { cacheReadTokens }),
    ...(cacheWriteTokens === undefined ? {} : { cacheWriteTokens })
  }
}

/**
 * Any piece read once into a chunk of its own, or what is wrong with it (a string): for a reader
 * off the hot path (a compaction's summary). A turn's response checks each kind where it reads it
 * (`ModelResponse`).
 */
export const read = (piece: unknown): ModelChunk | string => {
  if (typeof piece !== "object" || piece === null) return faults.notObject
  try {
    const chunk = piece as { readonly _tag?: unknown }
    switch (chunk._tag) {
      case "TextDelta": {
        const { text } = chunk as { readonly text?: unknown }
        return typeof text === "string" ? { _tag: "TextDelta", text } : faults.text
      }
      case "ToolCall": {
        const { args, tool, toolCallId } = chunk as { readonly toolCallId: unknown; readonly tool: unknown; readonly args?: unknown }
        return callFault({ toolCallId, tool }, args) ?? { _tag: "ToolCall", toolCallId: toolCallId as string, tool: tool as string, args: args as Json.Json }
      }
      case "Finish": {
        const { reason, usage } = chunk as { readonly reason: unknown; readonly usage?: unknown }
        return finishFault({ reason, usage }) ??
          (usage === undefined
            ? { _tag: "Finish", reason: reason as FinishReason }
            : { _tag: "Finish", reason: reason as FinishReason, usage: usageCounts(usage as Usage) })
      }
      default:
        return faults.unknownTag
    }
  } catch {
    return faults.unreadable
  }
}

/**
 * The failure a response ends with at a chunk of a shape its type does not allow: `server`, as the
 * SDK adapters end one at an unreadable vendor event — what came before it stands, nothing of it or
 * after it is read, and a request none of whose response was stored is sent again. The detail names
 * the field, never its value (a hostile value in a log line) nor where in the code it was found.
 */
export const refused = (fault: string): ProviderFailure =>
  ProviderFailure.of("server", `the model provider handed over a chunk its type does not allow: ${fault}`)
