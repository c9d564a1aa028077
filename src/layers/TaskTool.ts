/**
 * The `task` tool beside the tools provided below it: the model starts a subagent — a child
 * session with its own log — to do a task and answer. This layer describes the tool and prepares
 * its calls: the arguments decoded, the working directory resolved (symlinks followed) and refused
 * when it leads outside the session's, tools the router does not have and a mode wider than the
 * parent's refused by name. The session engine runs a prepared call (see the engine's `Subagents`):
 * running a session is the engine's work, not a tool's.
 *
 * @since 0.10.0
 */
import * as NodeFs from "node:fs/promises"
import * as NodePath from "node:path"
import * as Effect from "effect/Effect"
import * as JSONSchema from "effect/JSONSchema"
import * as Layer from "effect/Layer"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as FileNames from "../domain/FileNames.js"
import type { JsonObject } from "../domain/Json.js"
import * as Task from "../domain/Task.js"
import { type PreparedCall, type ToolCallInput, type ToolDefinition, ToolFailure, ToolRouter } from "../services/ToolRouter.js"
import * as Paths from "./workspace/Paths.js"

const description = [
  "Delegate a self-contained task to a subagent: a new session that works on its own (in this working directory or one inside it,",
  "with these tools or fewer, never with wider permissions) and answers. Its final answer is this call's result.",
  "Several task calls in one response run at the same time."
].join(" ")

/** The tool's definition, as the model is shown it. */
export const definition: ToolDefinition = (() => {
  const { $schema: _, ...inputSchema } = JSONSchema.make(Task.Args) as unknown as JsonObject & { $schema?: string }
  return Task.markDefinition({ name: Task.toolName, description, inputSchema, sequential: false })
})()

const refuse = (errorCode: string, message: string) => Effect.fail(new ToolFailure({ errorCode, message }))

const isDirectory = (path: string) => Effect.promise(() => NodeFs.stat(path).then((s) => s.isDirectory(), () => false))

/** Prepares a `task` call of a session whose cwd is `cwd`, offered beside `available` tools. */
const prepareTask = (call: ToolCallInput, cwd: string, available: ReadonlySet<string>): Effect.Effect<PreparedCall, ToolFailure> =>
  Effect.gen(function*() {
    const args = yield* Schema.decodeUnknown(Task.Args)(call.args, { onExcessProperty: "error" }).pipe(
      Effect.mapError((error) => new ToolFailure({ errorCode: "invalid_arguments", message: ParseResult.TreeFormatter.formatErrorSync(error) }))
    )
    const mode = args.mode ?? "inherit"
    if (!Schema.is(Task.Mode)(mode)) {
      return yield* refuse("mode_not_allowed", `A subagent's mode is "inherit" (this session's permissions) or "readOnly"; "${mode}" is refused: a subagent never gets wider permissions than its parent.`)
    }
    const unknown = (args.tools ?? []).filter((t) => !available.has(t))
    if (unknown.length > 0) {
      return yield* refuse("tool_not_allowed", `A subagent can only have tools this session has; not: ${unknown.join(", ")}.`)
    }
    const requested = args.cwd ?? "."
    // Checked here, not in the schema: the schema the model is shown stays as it was.
    const unnamable = FileNames.unnamable(requested)
    if (unnamable !== undefined) return yield* refuse("invalid_arguments", `cwd cannot name a directory: ${unnamable}`)
    const root = yield* Paths.realCwd(cwd)
    const absolute = NodePath.isAbsolute(requested) ? requested : `${NodePath.resolve(cwd)}/${requested}`
    const real = yield* Effect.promise(() => Paths.realPath(absolute))
    // What the path resolves to decides, links followed: a name inside that leads outside is outside.
    if (!real.exact || !Paths.isInside(NodePath, root, real.path)) {
      return yield* refuse("cwd_outside", `The subagent's working directory must be this session's or one inside it; "${requested}" is not.`)
    }
    if (!(yield* isDirectory(real.path))) {
      return yield* refuse("invalid_arguments", `The subagent's working directory "${requested}" is not a directory.`)
    }
    const input: Task.Input = {
      description: args.description,
      prompt: args.prompt,
      cwd: real.path,
      tools: args.tools,
      mode,
      maxSteps: args.maxSteps
    }
    return {
      ...call,
      // Starting a subagent touches nothing: each of its own calls is decided as it comes.
      risk: "read",
      sequential: false,
      paths: [{ requested, resolved: real.path, insideCwd: true, relative: NodePath.relative(root, real.path) || ".", access: "read" }],
      scope: Task.toolName,
      input
    }
  })

/** `base` with the `task` tool beside its tools. */
export const make = (base: ToolRouter.Service): ToolRouter.Service => {
  const withTask = (router: ToolRouter.Service): ToolRouter.Service => {
    const others = router.definitions.filter((d) => d.name !== Task.toolName)
    const available = new Set([...others.map((d) => d.name), Task.toolName])
    return ToolRouter.of({
      definitions: [...others, definition],
      prepare: (call, cwd) => call.tool === Task.toolName ? prepareTask(call, cwd, available) : router.prepare(call, cwd),
      execute: (call, context) =>
        call.tool === Task.toolName
          ? refuse("subagents_unavailable", "The task tool runs inside a session engine; this router cannot run it.")
          : router.execute(call, context),
      ...(router.sources === undefined ? {} : { sources: router.sources })
    })
  }
  const router = withTask(base)
  const forSession = base.forSession
  return forSession === undefined ? router : { ...router, forSession: (sessionId) => withTask(forSession(sessionId)) }
}

/**
 * The `task` tool added to the `ToolRouter` provided below this layer — for instance
 * `TaskTool.layer.pipe(Layer.provide(WorkspaceTools.layer()))`.
 */
export const layer: Layer.Layer<ToolRouter, never, ToolRouter> = Layer.effect(ToolRouter, Effect.map(ToolRouter, make))
