/**
 * Tools of your own without writing a `ToolRouter`: describe each tool with a `Schema` for its
 * arguments and an Effect that runs it, then serve them alone (`layer`) or beside the router already
 * provided, such as the workspace tools (`extend`). Arguments are decoded before the permission
 * engine sees the call; a call that fails its schema ends `invalid_arguments` with the reason.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as JSONSchema from "effect/JSONSchema"
import * as Layer from "effect/Layer"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import type { Risk } from "../domain/AgentEvent.js"
import type { JsonObject } from "../domain/Json.js"
import {
  type PreparedCall,
  unknownTool,
  type ToolCallInput,
  type ToolContext,
  type ToolDefinition,
  ToolFailure,
  type ToolOutput,
  ToolRouter
} from "../services/ToolRouter.js"

/** One tool: its name and description for the model, its arguments, its risk, and what it does. */
export interface Tool<A, I, R> {
  readonly name: string
  readonly description: string
  /** The arguments; their JSON Schema is what the model is shown. */
  readonly parameters: Schema.Schema<A, I>
  /** What the permission engine judges (default `"write"`: the default mode asks before it runs). */
  readonly risk?: Risk | ((input: A) => Risk)
  /** A sequential tool never runs beside another tool call. */
  readonly sequential?: boolean
  /** Runs the call; a plain string is its result. Fail with `ToolFailure` to tell the model what went wrong. */
  readonly run: (input: A, context: ToolContext) => Effect.Effect<ToolOutput | string, ToolFailure, R>
}

/** Any tool, whatever its argument types. */
export type Any = Tool<any, any, any>

/**
 * What running a list of tools needs. An empty list needs nothing: its element type is `never`, and
 * inferring `R` from `never` would give `unknown`, a requirement no context meets.
 */
export type Requirements<Tools extends ReadonlyArray<Any>> =
  [Tools[number]] extends [never] ? never : Tools[number] extends Tool<any, any, infer R> ? R : never

/** Declares a tool; the identity, for inference of its argument types. */
export const tool = <A, I, R = never>(definition: Tool<A, I, R>): Tool<A, I, R> => definition

const definitionOf = (t: Any): ToolDefinition => {
  const { $schema: _, ...inputSchema } = JSONSchema.make(t.parameters) as unknown as JsonObject & { $schema?: string }
  return { name: t.name, description: t.description, inputSchema, sequential: t.sequential === true }
}

/**
 * A router of `tools`, falling back to `base` for the names it does not know. Without `base`, an
 * unknown name ends `unknown_tool`, listing the tools there are.
 */
export const make = <const Tools extends ReadonlyArray<Any>>(
  tools: Tools,
  base?: ToolRouter.Service
): Effect.Effect<ToolRouter.Service, never, Requirements<Tools>> =>
  Effect.map(Effect.context<Requirements<Tools>>(), (context) => {
    const byName = new Map<string, Any>(tools.map((t) => [t.name, t]))
    const definitions = [...(base?.definitions ?? []).filter((d) => !byName.has(d.name)), ...tools.map(definitionOf)]

    const prepare = (call: ToolCallInput, cwd: string): Effect.Effect<PreparedCall, ToolFailure> => {
      const t = byName.get(call.tool)
      if (t === undefined) {
        return base !== undefined
          ? base.prepare(call, cwd)
          : Effect.fail(unknownTool(call.tool, definitions.map((d) => d.name)))
      }
      return Schema.decodeUnknown(t.parameters)(call.args, { onExcessProperty: "error" }).pipe(
        Effect.mapError((error) => new ToolFailure({ errorCode: "invalid_arguments", message: ParseResult.TreeFormatter.formatErrorSync(error) })),
        Effect.map((input): PreparedCall => ({
          ...call,
          risk: typeof t.risk === "function" ? t.risk(input) : t.risk ?? "write",
          sequential: t.sequential === true,
          paths: [],
          scope: t.name,
          input
        }))
      )
    }

    const execute = (call: PreparedCall, toolContext: ToolContext): Effect.Effect<ToolOutput, ToolFailure> => {
      const t = byName.get(call.tool)
      if (t === undefined) return base!.execute(call, toolContext)
      return t.run(call.input, toolContext).pipe(
        Effect.map((output) => (typeof output === "string" ? { result: output } : output)),
        Effect.provide(context as Context.Context<unknown>)
      ) as Effect.Effect<ToolOutput, ToolFailure>
    }

    return ToolRouter.of({ definitions, prepare, execute, ...(base?.sources === undefined ? {} : { sources: base.sources }) })
  })

/** `tools` as the `ToolRouter`. */
export const layer = <const Tools extends ReadonlyArray<Any>>(tools: Tools): Layer.Layer<ToolRouter, never, Requirements<Tools>> =>
  Layer.effect(ToolRouter, make(tools))

/**
 * `tools` added to the `ToolRouter` provided below this layer — for instance
 * `Toolkit.extend([weather]).pipe(Layer.provide(WorkspaceTools.layer()))`. A tool of the same name
 * replaces the one below.
 */
export const extend = <const Tools extends ReadonlyArray<Any>>(
  tools: Tools
): Layer.Layer<ToolRouter, never, ToolRouter | Requirements<Tools>> =>
  Layer.effect(ToolRouter, Effect.flatMap(ToolRouter, (base) => make(tools, base)))
