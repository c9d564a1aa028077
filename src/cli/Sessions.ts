/**
 * `effect-agent sessions [--cwd <dir>] [--search <text>]`: the stored sessions, most recently
 * active first, one line each with its title; `effect-agent sessions rename <id> <title>` names one
 * (`session.titled`); `effect-agent pending [<id>]` lists the calls waiting for approval. The
 * handlers; the commands are in commands/Sessions.ts.
 *
 * @since 0.1.0
 */
import { existsSync, realpathSync } from "node:fs"
import { resolve } from "node:path"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { EventStore, Plural, Session, UsageText } from "../index.js"
import { CliError } from "./CliError.js"
import * as FlagLayers from "./FlagLayers.js"
import * as Flags from "./Flags.js"
import * as NodeServices from "./NodeServices.js"
import * as PromptExit from "./PromptExit.js"
import type { ListInput, PendingInput, RenameInput } from "./commands/Sessions.js"
import * as Render from "./Render.js"
import { repairHint } from "./RepairHint.js"

/** One line per session whose log cannot be read; the others are listed all the same. */
export const warnDamaged = (damaged: EventStore.Listing["damaged"]) =>
  Effect.forEach(damaged, (d) => Console.error(`effect-agent: session ${d.sessionId} cannot be read: ${d.failure.message}${repairHint(d.failure)}`), { discard: true })

/** A directory as sessions store it: absolute, links resolved when it still exists (a removed one is kept as given). */
const storedDirectory = (dir: string): string => {
  const absolute = resolve(dir)
  try {
    return realpathSync(absolute)
  } catch {
    return absolute
  }
}

/**
 * A session's line: id, last activity, turns, client, cwd, what it used and cost (when its turns
 * reported usage), then its title — each made safe for the terminal. The listing writes the same
 * text straight into its bytes (`listingBytes`); this is the line as text, which the tests hold
 * the bytes to.
 */
export const line = (s: Session.SessionSummary): string => {
  const totals = UsageText.totalsText(s)
  // Every text field is made safe, the time and the client too: a listing may come from a
  // repository's index (`.effect-agent/index.json`), which holds them as any string.
  let text = `${s.sessionId}  ${Render.terminalSafe(s.lastActivityAt)}  ${Plural.count(s.turnCount, "turn")}  ${Render.terminalSafe(s.client)}  ${Render.terminalSafe(s.cwd)}`
  if (totals !== undefined) text += `  ${Render.terminalSafe(totals)}`
  if (s.title !== undefined) text += `  ${Render.terminalSafe(s.title)}`
  return text
}

/** The separators of the totals that are not ASCII, as UTF-8. */
const dot = Buffer.from(" · ", "utf8")
const dash = Buffer.from(" — ", "utf8")
/** The cost of a session that cost nothing (every one whose models have no price), as `UsageText.dollars` writes it. */
const noCost = Buffer.from(UsageText.dollars(0), "utf8")

/**
 * The listing as the UTF-8 bytes written: each session's `line` and a newline, written field by
 * field into one buffer. No line is made as a string: 10,000 lines built of template pieces,
 * numbers and totals made ~10 MB of short-lived strings, whose scavenges copied the listing's
 * 10,000 summaries (alive until the end) each time — more than the lines themselves cost. Nor is
 * any other string made for a session whose fields need no escape (perf62list): its counts' digits
 * are written as they are computed, a cost of nothing is a constant, the unpriced models are written
 * one by one, and the terminal check is made in the copy itself. The ~110 bytes of heap a session
 * that `String`, `join` and the dollars' text took were enough, over 10,000 sessions, to fill the
 * young generation once more after the listing: a scavenge copying every summary still young, as
 * much as the rest of the listing's bytes cost (docs/benchmarks.md, "perf62list").
 *
 * ASCII is copied here; a field with anything else is encoded by Node's UTF-8 writer from its first
 * such character, so the bytes are those of `Buffer.from(lines.join(""))`. A field with a character
 * `Render.terminalSafe` changes, or any that is not ASCII, is written as `terminalSafe` makes it
 * (the rare case that allocates). The totals are `UsageText.totalsText`'s text, written in the same
 * order (test/cli/listingBytes.test.ts holds the bytes to `line` for every kind of summary);
 * `terminalSafe` maps character by character, so making the cwd, the title and each model's name
 * safe one by one is making the line's parts safe.
 */
export const listingBytes = (summaries: ReadonlyArray<Session.SessionSummary>): Buffer => {
  // A listing's line is ~190 bytes; the buffer doubles when a field does not fit.
  let bytes = Buffer.allocUnsafe(Math.max(64 * 1024, summaries.length * 256))
  let end = 0
  const room = (length: number) => {
    if (end + length > bytes.length) {
      const grown = Buffer.allocUnsafe(Math.max(bytes.length * 2, end + length))
      bytes.copy(grown, 0, 0, end)
      bytes = grown
    }
  }
  const text = (value: string) => {
    const length = value.length
    // At most three bytes per UTF-16 unit.
    room(length * 3)
    for (let i = 0; i < length; i++) {
      const c = value.charCodeAt(i)
      if (c >= 0x80) {
        end += i + bytes.write(i === 0 ? value : value.slice(i), end + i, "utf8")
        return
      }
      bytes[end + i] = c
    }
    end += length
  }
  // A field shown safe for the terminal: printable ASCII, tab and newline copied as they are (what
  // `terminalSafe` keeps); at anything else, the field is written again from its start as
  // `terminalSafe` makes it (nothing of it was counted yet).
  const safe = (value: string) => {
    const length = value.length
    room(length)
    for (let i = 0; i < length; i++) {
      const c = value.charCodeAt(i)
      if (c >= 0x20 ? c >= 0x7f : c !== 0x09 && c !== 0x0a) return text(Render.terminalSafe(value))
      bytes[end + i] = c
    }
    end += length
  }
  // A count's digits, as `String` writes them, for the counts a summary holds (safe integers, not
  // negative); anything else through `String`. In small integers throughout (`(rest - digit) / 10`
  // is exact): a division with a fraction makes a heap number in code not yet optimized.
  const count = (n: number) => {
    if (!(n >= 0 && Number.isSafeInteger(n))) return text(String(n))
    let digits = 1
    for (let power = 10; power <= n; power *= 10) digits++
    room(digits)
    for (let i = end + digits - 1, rest = n; i >= end; i--) {
      const digit = rest % 10
      bytes[i] = 48 + digit
      rest = (rest - digit) / 10
    }
    end += digits
  }
  const raw = (constant: Buffer) => {
    room(constant.length)
    constant.copy(bytes, end)
    end += constant.length
  }
  const gap = () => {
    room(2)
    bytes[end++] = 32
    bytes[end++] = 32
  }
  // By index: a `for … of` makes an iterator result a session until the loop is optimized.
  for (let k = 0; k < summaries.length; k++) {
    const s = summaries[k]!
    text(s.sessionId)
    gap()
    safe(s.lastActivityAt)
    gap()
    count(s.turnCount)
    text(s.turnCount === 1 ? " turn" : " turns")
    gap()
    safe(s.client)
    gap()
    safe(s.cwd)
    // UsageText.totalsText: `tokens in 14 · out 10 · cache read 103 — $0.25; cost unknown for model-x`.
    const usage = s.usage
    if (usage !== undefined) {
      gap()
      text("tokens in ")
      count(usage.inputTokens)
      raw(dot)
      text("out ")
      count(usage.outputTokens)
      if (usage.cacheReadTokens !== undefined) {
        raw(dot)
        text("cache read ")
        count(usage.cacheReadTokens)
      }
      if (usage.cacheWriteTokens !== undefined) {
        raw(dot)
        text("cache write ")
        count(usage.cacheWriteTokens)
      }
      raw(dash)
      const unknown = s.costUnknown
      const anyUnknown = unknown !== undefined && unknown.length > 0
      const known = UsageText.hasKnownCost(s)
      // As `UsageText.totalsText`: no dollars when nothing could be priced.
      if (!anyUnknown || known) {
        const cost = s.cost ?? 0
        if (cost === 0) raw(noCost)
        else text(UsageText.dollars(cost))
      }
      if (anyUnknown) {
        text(known ? "; cost unknown for " : "cost unknown for ")
        // `unknown.join(", ")` made safe: each name made safe, joined (the separator needs nothing).
        for (let i = 0; i < unknown.length; i++) {
          if (i > 0) text(", ")
          safe(unknown[i]!)
        }
      }
    }
    if (s.title !== undefined) {
      gap()
      safe(s.title)
    }
    room(1)
    bytes[end++] = 10
  }
  return bytes.subarray(0, end)
}

/**
 * The store the options chose, opened for reading. A listing needs no engine: `sessions` and
 * `pending` (until a session waits) load neither the engine nor the tools (see Lazy.ts).
 */
const readingStore = (storage: Flags.Storage) => FlagLayers.storeLayer(storage, { readOnly: true }).pipe(Layer.provide(NodeServices.layer))

/** The engine's module (and its service's tag): loaded only by the commands that need more than the listing. */
const engineModule = Effect.promise(() => import("./Engine.js"))

/** `sessions rename`. Naming a session stores one event: no model is called. */
export const rename = ({ sessionId, title, ...storage }: RenameInput) =>
  Effect.flatMap(engineModule, ({ SessionEngine, storeOnlyEngineLayer }) =>
    Effect.gen(function*() {
      const engine = yield* SessionEngine.SessionEngine
      const renamed = yield* engine.renameSession({ sessionId, title })
      yield* Console.log(`${sessionId}  ${Render.terminalSafe(renamed.title)}`)
    }).pipe(Effect.provide(storeOnlyEngineLayer(storage))))

/** `sessions`: the store's listing (what `SessionEngine.sessionListing` answers), without an engine. */
export const list = ({ cwd, search, ...options }: ListInput) =>
  Effect.gen(function*() {
    const store = yield* EventStore.EventStore
    const { damaged, sessions: summaries } = yield* store.listing
    yield* warnDamaged(damaged)
    const shown = Session.filterSummaries(summaries, {
      cwd: Option.getOrUndefined(Option.map(cwd, storedDirectory)),
      search: Option.getOrUndefined(search)
    })
    if (shown.length === 0) {
      // A folder that is gone can still have sessions (they are listed above); one that never was is
      // most likely a typo — in an empty store too (review 59c: `--cwd ./srcc` there exited 0).
      if (Option.isSome(cwd) && !existsSync(cwd.value)) {
        return yield* new CliError({ reason: "invalid_arguments", message: `--cwd ${Render.terminalSafe(cwd.value)}: no such folder, and no session ran there` })
      }
      if (summaries.length === 0 && damaged.length === 0) return yield* Console.error(`No sessions in ${Flags.storeName(options)}.`)
      if (summaries.length > 0) yield* Console.error("No session matches.")
      return
    }
    // One write for the whole list: 10,000 sessions are 10,000 lines, not 10,000 writes.
    const bytes = listingBytes(shown)
    yield* Effect.sync(() => process.stdout.write(bytes))
  }).pipe(
    Effect.provide(readingStore(options)),
    // Nothing is left running once the store is closed: the process need not wait for the loop to run dry.
    Effect.zipLeft(PromptExit.request)
  )

/**
 * `pending`: every store's listing says which sessions wait (`awaitingApproval`; the SQL stores
 * answer that alone, `awaitingListing`): only theirs are read, by the engine, which is loaded only
 * when one waits (or a session is named).
 */
export const pending = ({ sessionId, ...options }: PendingInput) =>
  Effect.gen(function*() {
    let ids: ReadonlyArray<string>
    if (Option.isSome(sessionId)) {
      ids = [sessionId.value]
    } else {
      // A store that can answer for the waiting sessions alone does (the SQL stores: no row of a session that does not wait).
      const listing = yield* Effect.flatMap(EventStore.EventStore, (store) => store.awaitingListing ?? store.listing)
      yield* warnDamaged(listing.damaged)
      ids = listing.sessions.filter((s) => s.awaitingApproval !== undefined).map((s) => s.sessionId)
    }
    let found = 0
    if (ids.length > 0) {
      const { readingEngineOnStore, SessionEngine } = yield* engineModule
      yield* Effect.gen(function*() {
        const engine = yield* SessionEngine.SessionEngine
        for (const id of ids) {
          for (const call of yield* engine.pendingApprovals({ sessionId: id })) {
            found++
            // The call's id is the log's (a repository's data dir can say any string): shown safe for the terminal.
            yield* Console.log(`${Render.terminalSafe(id)}  ${Render.terminalSafe(call.toolCallId)}  ${Render.describeCall(call)}${call.risk === undefined ? "" : `  (${call.risk})`}`)
          }
        }
      }).pipe(Effect.provide(readingEngineOnStore))
    }
    if (found === 0) yield* Console.error("No tool calls are waiting for approval.")
  }).pipe(
    Effect.provide(readingStore(options)),
    // As `sessions`: the store (and the engine, if one was loaded) closed, nothing is left running.
    Effect.zipLeft(PromptExit.request)
  )
