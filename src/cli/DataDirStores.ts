/**
 * What only a data dir's stores use, `import()`ed by FlagLayers when one is chosen: the JSONL store,
 * and for a command that writes, the guard of the sessions this user started (StartedSessions, with
 * the trust store's folder and the settings file's reader it reaches) and the data dir's ignore file.
 *
 * Why a module of its own: imported statically by FlagLayers, every command that names a store —
 * `sessions` and `pending` on SQLite or PostgreSQL among them — evaluated the JSONL store's ~30
 * modules and the settings reader's permission rules (~20 more: shell command patterns, globs, git's
 * options) at its start, though a read-only listing uses none of them (docs/benchmarks.md, "perf63sql").
 *
 * @since 0.13.0
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { type AgentEvent, EventStore, JsonlEventStore, StartedSessions, TrustStore } from "../index.js"
import * as DataDirIgnore from "./DataDirIgnore.js"

/** The JSONL store of `dataDir`. */
export const jsonl = (dataDir: string, readOnly: boolean) => JsonlEventStore.layer({ dataDir, readOnly })

/**
 * A data dir's store for writing: guarded by `StartedSessions` (it drives only the sessions this user
 * started or adopted), and the data dir's logs kept out of git (see DataDirIgnore).
 */
export const writable = <ROut, E, RIn>(
  store: Layer.Layer<ROut | EventStore.EventStore, E, RIn>,
  dataDir: string,
  adoptHint: StartedSessions.AdoptHint
) =>
  Effect.map(TrustStore.configDir, (dir) => store.pipe(StartedSessions.layer({ dir, adoptHint }), (guarded) => Layer.merge(guarded, DataDirIgnore.layer(dataDir))))

/** Fails `untrusted` unless `first`, the session's first event, is that of a session this user started or adopted. */
export const verifyStarted = (sessionId: string, first: AgentEvent.AgentEvent, adoptHint: StartedSessions.AdoptHint) =>
  Effect.flatMap(TrustStore.configDir, (dir) => StartedSessions.verifyFirst(dir, sessionId, first, adoptHint))
