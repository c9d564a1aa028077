/**
 * The engine the subagent tests drive: the scripted model, a memory store, the workspace tools and
 * `task` (TaskTool) under an empty permission policy; and a filter of a log's events by type.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as Layer from "effect/Layer"
import type { AgentEvent, EventOfType } from "../../src/domain/AgentEvent.js"
import type { Options } from "../../src/engine/SessionEngine.js"
import type * as FakeModelProvider from "../../src/layers/FakeModelProvider.js"
import * as MemoryEventStore from "../../src/layers/MemoryEventStore.js"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import * as TaskTool from "../../src/layers/TaskTool.js"
import * as WorkspaceTools from "../../src/layers/WorkspaceTools.js"
import { engineLayer } from "../helpers.js"

export const withTools = (model: FakeModelProvider.Options, options: Options = {}) =>
  engineLayer(MemoryEventStore.layer, model, options).pipe(
    Layer.provideMerge(TaskTool.layer.pipe(Layer.provide(WorkspaceTools.layer().pipe(Layer.provide(NodeContext.layer))))),
    Layer.provideMerge(PermissionPolicy.layer({}))
  )

export const ofType = <T extends AgentEvent["type"]>(events: ReadonlyArray<AgentEvent>, type: T) =>
  events.filter((e): e is EventOfType<T> => e.type === type)
