/**
 * The id generator port, and its two implementations: random ids for real use and sequential ids
 * that make every event log of a test reproducible byte for byte.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

/** The kinds of id: a session, a turn, an event. */
export type IdKind = "session" | "turn" | "event"

/** The prefix of each kind of id. */
export const prefixes: Readonly<Record<IdKind, string>> = { session: "sess_", turn: "turn_", event: "evt_" }

/** The id generator port. */
export class IdGenerator extends Context.Tag("effect-agent/IdGenerator")<
  IdGenerator,
  { readonly next: (kind: IdKind) => Effect.Effect<string> }
>() {}

// Crockford's base32: ids sort by creation time and read unambiguously.
const alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

const encodeTime = (millis: number): string => {
  let out = ""
  for (let i = 0, t = millis; i < 10; i++, t = Math.floor(t / 32)) out = alphabet[t % 32] + out
  return out
}

const randomPart = (): string => {
  const bytes = globalThis.crypto.getRandomValues(new Uint8Array(16))
  let out = ""
  for (const byte of bytes) out += alphabet[byte % 32]
  return out
}

/**
 * Random ids: prefix, then a ULID-like body (the creation time from `Clock`, then 16 random
 * characters), so ids of one kind sort roughly by creation time.
 */
export const layer: Layer.Layer<IdGenerator> = Layer.succeed(IdGenerator, {
  next: (kind) => Effect.map(Effect.clockWith((clock) => clock.currentTimeMillis), (now) => prefixes[kind] + encodeTime(now) + randomPart())
})

/** Deterministic ids for tests: `sess_1`, `turn_1`, `evt_1`, … one counter per kind, per layer build. */
export const layerSequential: Layer.Layer<IdGenerator> = Layer.sync(IdGenerator, () => {
  const counters: Record<IdKind, number> = { session: 0, turn: 0, event: 0 }
  return { next: (kind) => Effect.sync(() => `${prefixes[kind]}${++counters[kind]}`) }
})
