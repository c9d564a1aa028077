/**
 * The `task` tool's arguments and what a prepared call carries: a subagent — a child session with
 * its own log — given a task (`prompt`), a working directory inside its parent's, a subset of its
 * parent's tools, a permission mode never wider than its parent's, and a step limit of its own.
 *
 * @since 0.10.0
 */
import * as Schema from "effect/Schema"

/** The tool's name, as the model calls it. */
export const toolName = "task"

const ownDefinitions = new WeakSet<object>()

/**
 * Marks `definition` as the library's own `task` tool (TaskTool's). The engine starts subagents only
 * for a definition marked here: an embedder's own tool named `task` runs through its router.
 */
export const markDefinition = <A extends object>(definition: A): A => {
  ownDefinitions.add(definition)
  return definition
}

/** Whether `definition` is the library's own `task` tool (see `markDefinition`). */
export const isOwnDefinition = (definition: object): boolean => ownDefinitions.has(definition)

/** How deep subagents nest by default: a child (depth 1) may start tasks, a grandchild (depth 2) may not. */
export const defaultMaxDepth = 2

/** The arguments the model gives. `mode` is checked after decoding, so a wider one is refused by name. */
export const Args = Schema.Struct({
  description: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200)).annotations({
    description: "A short label for the task (a few words), shown to the user with the subagent's questions."
  }),
  prompt: Schema.String.pipe(Schema.minLength(1)).annotations({
    description: "The task for the subagent, complete: it sees nothing of this conversation. Its final answer is this call's result."
  }),
  cwd: Schema.optional(Schema.String).annotations({
    description: "The subagent's working directory: this session's (the default) or a directory inside it."
  }),
  tools: Schema.optional(Schema.Array(Schema.String)).annotations({
    description: "The tools it may use, among this session's (default: the same)."
  }),
  mode: Schema.optional(Schema.String).annotations({
    description: "\"inherit\" (the default: this session's permissions) or \"readOnly\" (no writes, no commands that write)."
  }),
  maxSteps: Schema.optional(Schema.Int.pipe(Schema.between(1, 100))).annotations({
    description: "At most this many model requests (default: the engine's limit)."
  })
})
/** The arguments the model gives. */
export type Args = typeof Args.Type

/** The modes a subagent may have: its parent's, or read-only. */
export const Mode = Schema.Literal("inherit", "readOnly")
/** The modes a subagent may have. */
export type Mode = typeof Mode.Type

/** A prepared call's input: the arguments with the working directory resolved (its real path) and the mode checked. */
export interface Input {
  readonly description: string
  readonly prompt: string
  /** The real absolute path of the subagent's cwd, inside its parent's. */
  readonly cwd: string
  readonly tools: ReadonlyArray<string> | undefined
  readonly mode: Mode
  readonly maxSteps: number | undefined
}

/**
 * A budget for a turn and every subagent it starts: the tree stops (`turn.completed` with
 * `errorCode: "budget_exceeded"`) at the first step boundary after it has used more.
 */
export interface Budget {
  /** Tokens: input (cache reads and writes included) plus output, over the tree's model responses. */
  readonly maxTokens?: number | undefined
  /** US dollars, as priced by the engine's price table. */
  readonly maxCost?: number | undefined
  /** Model requests (steps) of every session of the tree together. */
  readonly maxSteps?: number | undefined
}

/**
 * Two budgets as one: each limit the smaller of the two (a limit only one of them sets is kept). A
 * turn's own budget (`runTurn({ budget })`, a server client's) tightens the engine's, never lifts it:
 * a client's `{maxSteps: 50}` under `serve --max-cost 0.01` keeps the cost cap.
 */
export const tighter = (a: Budget | undefined, b: Budget | undefined): Budget | undefined => {
  if (a === undefined || b === undefined) return a ?? b
  const least = (x: number | undefined, y: number | undefined) => x === undefined ? y : y === undefined ? x : Math.min(x, y)
  const merged: { -readonly [K in keyof Budget]: Budget[K] } = {}
  for (const key of ["maxTokens", "maxCost", "maxSteps"] as const) {
    const value = least(a[key], b[key])
    if (value !== undefined) merged[key] = value
  }
  return merged
}
