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
const randomChars = (n: number): string => {
  const bytes = globalThis.crypto.getRandomValues(new Uint8Array(n))
  let out = ""
  for (const byte of bytes) out += alphabet[byte & 31]
  return out
}
const counterSpan = 32 ** 6
let stem = randomChars(10)
let counter = 0

const randomPart = (): string => {
  if (counter === counterSpan) {
    stem = randomChars(10)
    counter = 0
  }
  let n = counter++
  let tail = ""
  for (let i = 0; i < 6; i++, n = Math.floor(n / 32)) tail = alphabet[n % 32] + tail
  return stem + tail
}

// Sessions and turns, made rarely, keep 16 fresh random characters: their ids say nothing of each other.
const randomId = (kind: IdKind, now: number): string => prefixes[kind] + encodeTime(now) + (kind === "event" ? randomPart() : randomChars(16))

/**
 * Random ids: prefix, then a ULID-like body (the creation time from `Clock`, then 16 characters:
 * random for sessions and turns; for events, the hot path, a random stem per process and a
 * counter), so ids of one kind sort roughly by creation time and never repeat.
 */
export const layer: Layer.Layer<IdGenerator> = Layer.succeed(IdGenerator, {
  next: (kind) => Effect.map(Effect.clockWith((clock) => clock.currentTimeMillis), (now) => randomId(kind, now)),
  nextMany: (kind, count) =>
    Effect.map(Effect.clockWith((clock) => clock.currentTimeMillis), (now) => {
      const time = encodeTime(now)
      return Array.from({ length: count }, () => prefixes[kind] + time + (kind === "event" ? randomPart() : randomChars(16)))
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
