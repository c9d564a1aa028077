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
import * as EventDraft from "./EventDraft.js"

/** What is wrong with a piece, for the kinds a reader tells apart before reading the piece's fields. */
export const faults = {
  notObject: "a chunk that is not an object",
  unknownTag: "a chunk of no known _tag",
  text: "a TextDelta whose text is not a string",
  thinking: "a ThinkingDelta whose text is not a string",
  // A getter that throws (an adapter's object, a Proxy): read once, in a try, like the SDKs' events.
  unreadable: "a chunk whose fields cannot be read"
} as const

/** Every finish reason the port's type allows (an adapter maps a vendor's other reasons to `other`). */
const finishReasons: ReadonlySet<unknown> = new Set<FinishReason>(["stop", "tool_calls", "length", "content_filter", "other"])

/**
 * What is wrong with a `ToolCall` piece, or `undefined`; `args` is the arguments as they would be
 * stored (`callArguments`: `undefined` when they are not JSON).
 */
export const callFault = (piece: { readonly toolCallId: unknown; readonly tool: unknown }, args: Json.Json | undefined): string | undefined =>
  typeof piece.toolCallId !== "string"
    ? "a ToolCall whose toolCallId is not a string"
    : typeof piece.tool !== "string"
    ? "a ToolCall whose tool is not a string"
    : args === undefined
    ? "a ToolCall whose args are not JSON"
    : undefined

/**
 * A call's arguments read once into plain data of their own (or `undefined` when they are not JSON):
 * what is stored and what the tool is given are then one value. A provider's object is not kept —
 * the store serialises it and the tool decodes it, each read answering anew (a getter, a Proxy), so
 * what is stored could differ from what runs and from what was checked. Each property is read once;
 * arguments nested deeper than `EventDraft.maxArgumentDepth` become the string saying so
 * (`EventDraft.toolArguments`) without being walked further; an object reached twice (shared or a
 * cycle, which parsed JSON never has) is not JSON. Keys keep their order, `__proto__` an own key as
 * JSON.parse makes it. An `undefined` inside them is what JSON.stringify makes of it (a JS object's
 * optional field left unset): a property dropped, an array's item null; the arguments themselves
 * `undefined`, a function, a symbol or a BigInt are not JSON.
 */
export const callArguments = (args: unknown): Json.Json | undefined => {
  const root: { value: Json.Json } = { value: null }
  const seen = new Set<object>()
  // Each value with where its copy goes: an own key of a copied object or array, defined (not set:
  // a `__proto__` key set would replace the copy's prototype).
  const pending: Array<readonly [unknown, number, object, string]> = [[args, 0, root, "value"]]
  while (pending.length > 0) {
    const [next, depth, into, key] = pending.pop()!
    let copy: Json.Json
    switch (typeof next) {
      case "string":
      case "boolean":
        copy = next
        break
      case "number":
        if (!Number.isFinite(next)) return undefined
        copy = next
        break
      case "object": {
        if (next === null) {
          copy = null
          break
        }
        if (depth >= EventDraft.maxArgumentDepth) return EventDraft.toolArguments(next)
        if (seen.has(next)) return undefined
        seen.add(next)
        if (Array.isArray(next)) {
          const items: ReadonlyArray<unknown> = Array.prototype.slice.call(next)
          const array = new Array<Json.Json>(items.length).fill(null)
          // An `undefined` item (or a hole) stays null, as JSON.stringify sends it.
          items.forEach((item, index) => item !== undefined && pending.push([item, depth + 1, array, String(index)]))
          copy = array
          break
        }
        const proto: unknown = Object.getPrototypeOf(next)
        if (proto !== Object.prototype && proto !== null) return undefined
        const object: Record<string, Json.Json> = {}
        // Each key's descriptor read once, its value from it (a getter called once): `Object.entries`
        // reads a Proxy's key twice, its descriptor (is it enumerable?) and then its value.
        for (const name of Reflect.ownKeys(next)) {
          if (typeof name !== "string") continue
          const property = Reflect.getOwnPropertyDescriptor(next, name)
          if (property === undefined || property.enumerable !== true) continue
          const value: unknown = "value" in property ? property.value : property.get?.call(next)
          // An `undefined` property (an optional field left unset) has no key, as JSON.stringify sends it.
          if (value === undefined) continue
          ownValue(object, name, null)
          pending.push([value, depth + 1, object, name])
        }
        copy = object
        break
      }
      default:
        return undefined
    }
    ownValue(into, key, copy)
  }
  return root.value
}

/** Defines `key` of `into` as a plain data property holding `value` (its place among the keys kept when it was there). */
const ownValue = (into: object, key: string, value: Json.Json) =>
  Object.defineProperty(into, key, { value, writable: true, enumerable: true, configurable: true })

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
 * `EventDraft.usageOf` makes them counts before a total adds them (a turn's, a summary's) or an
 * event stores them.
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
 * A `ThinkingBlock` piece's signature and redacted data, each read once and a string when present,
 * or what is wrong with it.
 */
export const thinkingEnd = (piece: { readonly signature?: unknown; readonly redacted?: unknown }): { readonly signature?: string; readonly redacted?: string } | string => {
  const { redacted, signature } = piece
  if (signature !== undefined && typeof signature !== "string") return "a ThinkingBlock whose signature is not a string"
  if (redacted !== undefined && typeof redacted !== "string") return "a ThinkingBlock whose redacted data is not a string"
  return { ...(signature === undefined ? {} : { signature }), ...(redacted === undefined ? {} : { redacted }) }
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
      case "ThinkingDelta": {
        const { text } = chunk as { readonly text?: unknown }
        return typeof text === "string" ? { _tag: "ThinkingDelta", text } : faults.thinking
      }
      case "ThinkingBlock": {
        const end = thinkingEnd(chunk as { readonly signature?: unknown; readonly redacted?: unknown })
        return typeof end === "string" ? end : { _tag: "ThinkingBlock", ...end }
      }
      case "ToolCall": {
        const { tool, toolCallId } = chunk as { readonly toolCallId: unknown; readonly tool: unknown }
        const args = callArguments((chunk as { readonly args?: unknown }).args)
        return callFault({ toolCallId, tool }, args) ?? { _tag: "ToolCall", toolCallId: toolCallId as string, tool: tool as string, args: args! }
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
