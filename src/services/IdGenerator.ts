/**
 * The id generator port, and its two implementations: random ids for real use and sequential ids
 * that make every event log of a test reproducible byte for byte.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

/** The kinds of id: a session, a turn, an event, a queued follow-up, a compaction. */
export type IdKind = "session" | "turn" | "event" | "queue" | "compaction"

/** The prefix of each kind of id. */
export const prefixes: Readonly<Record<IdKind, string>> = { session: "sess_", turn: "turn_", event: "evt_", queue: "fup_", compaction: "cmp_" }

/** The id generator port. */
export class IdGenerator extends Context.Tag("effect-agent/IdGenerator")<IdGenerator, IdGenerator.Service>() {}

/** The id generator port. */
export declare namespace IdGenerator {
  /** What an id generator does. */
  export interface Service {
    /** A new id of the kind. */
    readonly next: (kind: IdKind) => Effect.Effect<string>
    /**
     * `count` new ids of the kind, in order, as `next` would give them one by one. Optional: the
     * engine asks for the ids of a batch of events at once when it is there.
     */
    readonly nextMany?: (kind: IdKind, count: number) => Effect.Effect<ReadonlyArray<string>>
  }
}

// Crockford's base32: ids sort by creation time and read unambiguously.
const alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

const encodeTime = (millis: number): string => {
  let out = ""
  for (let i = 0, t = millis; i < 10; i++, t = Math.floor(t / 32)) out = alphabet[t % 32] + out
  return out
}

// The 16 characters after the time: 10 random ones drawn once (and again when the counter wraps),
// then a 6-character counter. Unique within a process by the counter, across processes by the
// random part (50 bits); building one costs a few lookups rather than a draw of random bytes.
// Random bytes are drawn from the system a block at a time, each byte used once: a draw costs about
// the same for 16 bytes as for 4 KB (15–25 µs on a busy 2-core machine), and a turn id needs 16.
const pool = new Uint8Array(4096)
let pooled = 0
const randomChars = (n: number): string => {
  if (pooled < n) {
    globalThis.crypto.getRandomValues(pool)
    pooled = pool.length
  }
  let out = ""
  for (let i = 0; i < n; i++) out += alphabet[pool[--pooled]! & 31]
  return out
}
const counterSpan = 32 ** 6
let stem = randomChars(10)
let counter = 0

// The counter's 6 characters as three pairs, each pair looked up (10 bits): an event id costs three
// lookups and a few concatenations, not a loop of one-character strings.
const pairs: ReadonlyArray<string> = Array.from({ length: 1024 }, (_, n) => alphabet[n >> 5]! + alphabet[n & 31]!)

/** The counter part of the next event id, drawing a new stem when the counter wraps. */
const nextTail = (): string => {
  if (counter === counterSpan) {
    stem = randomChars(10)
    counter = 0
  }
  const n = counter++
  return pairs[(n >> 20) & 1023]! + pairs[(n >> 10) & 1023]! + pairs[n & 1023]!
}

// Sessions and turns, made rarely, keep 16 fresh random characters: their ids say nothing of each other.
const randomId = (kind: IdKind, now: number): string => {
  if (kind !== "event") return prefixes[kind] + encodeTime(now) + randomChars(16)
  // The tail first: drawing it may renew the stem.
  const tail = nextTail()
  return flat(prefixes.event + encodeTime(now), stem, tail)
}

/**
 * The id as one flat string. Joined with `+`, an id is a chain of V8 cons strings (two nodes and the
 * tail, about 90 bytes) that every stored event keeps for as long as its log is held; `join` writes
 * one flat string (about 50 bytes).
 */
const flat = (head: string, stem: string, tail: string): string => [head, stem, tail].join("")

/**
 * The next event id of a batch whose ids start with `head` (its kind's prefix and time), as
 * {@link randomId} makes it, from fewer objects: everything but the counter's last pair is the same
 * for 1,024 ids in a row, so it is joined once (flat) and kept, and each id is that and its last pair
 * joined in one array kept for it — one string an id, where an array, the counter's two partial
 * strings and the id were four (perf65stream). Still one flat string: a `+` would make a cons string.
 */
const parts: Array<string> = ["", ""]
let partsMillis = -1
let partsHigh = -1
let partsStem = ""
const batchEventId = (millis: number, head: string): string => {
  if (counter === counterSpan) {
    stem = randomChars(10)
    counter = 0
  }
  const n = counter++
  const high = n >> 10
  if (high !== partsHigh || millis !== partsMillis || stem !== partsStem) {
    parts[0] = flat(head, stem, pairs[(n >> 20) & 1023]! + pairs[high & 1023]!)
    partsHigh = high
    partsMillis = millis
    partsStem = stem
  }
  parts[1] = pairs[n & 1023]!
  return parts.join("")
}

/**
 * Random ids: prefix, then a ULID-like body (the creation time from `Clock`, then 16 characters:
 * random for sessions and turns; for events, the hot path, a random stem per process and a
 * counter), so ids of one kind sort roughly by creation time and never repeat.
 */
export const layer: Layer.Layer<IdGenerator> = Layer.succeed(IdGenerator, {
  // The clock read in the draw's own step: every commit draws its events' ids, and
  // `Effect.map(clock.currentTimeMillis, …)` took 5 Effect operations where this takes 2.
  next: (kind) => Effect.clockWith((clock) => Effect.succeed(randomId(kind, clock.unsafeCurrentTimeMillis()))),
  nextMany: (kind, count) =>
    Effect.clockWith((clock) => {
      const millis = clock.unsafeCurrentTimeMillis()
      const head = prefixes[kind] + encodeTime(millis)
      const ids = new Array<string>(count)
      if (kind === "event") for (let i = 0; i < count; i++) ids[i] = batchEventId(millis, head)
      else for (let i = 0; i < count; i++) ids[i] = head + randomChars(16)
      return Effect.succeed(ids)
    })
})

/** Deterministic ids for tests: `sess_1`, `turn_1`, `evt_1`, … one counter per kind, per layer build. */
export const layerSequential: Layer.Layer<IdGenerator> = Layer.sync(IdGenerator, () => {
  const counters: Record<IdKind, number> = { session: 0, turn: 0, event: 0, queue: 0, compaction: 0 }
  const next = (kind: IdKind) => `${prefixes[kind]}${++counters[kind]}`
  return {
    next: (kind) => Effect.sync(() => next(kind)),
    nextMany: (kind, count) => Effect.sync(() => Array.from({ length: count }, () => next(kind)))
  }
})
