/**
 * Batches of events the engine built, as the engine tells its store: a store may then write the
 * payloads whose shape one builder fixes without checking them against the schema again. Internal
 * (not exported by the package): a batch marked by anyone else could put a line no reader accepts
 * into a log.
 *
 * @since 0.4.0
 * @internal
 */
import type { AgentEvent } from "../domain/AgentEvent.js"

const builtBatches = new WeakSet<ReadonlyArray<AgentEvent>>()

/**
 * Marks a batch as built by the engine's commit: envelopes in the schema's field order, payloads
 * from the engine's builders (`engine/EventDraft.ts`). Returns the batch.
 */
export const markBuilt = <A extends ReadonlyArray<AgentEvent>>(events: A): A => {
  builtBatches.add(events)
  return events
}

/** Whether the engine built this batch (see {@link markBuilt}). */
export const isBuilt = (events: ReadonlyArray<AgentEvent>): boolean => builtBatches.has(events)
