/**
 * The default context builder: a system prompt composed of named parts — `base` (what the agent
 * is), `workspace` (the session's cwd), `tools` (how to use them), `session`, `user` (your own
 * rules) — each with a source and a priority, so every line of the prompt can be traced to where it
 * came from — and the project's instructions (`AGENTS.md`, `CLAUDE.md`, the user's own file; see
 * `ProjectInstructions`), read once per turn.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { buildWith, ContextBuilder, type ContextInput, type PromptPart } from "../services/ContextBuilder.js"
import * as ProjectInstructions from "./instructions/ProjectInstructions.js"

/** Options of the composer. */
export interface Options {
  /** The `base` part; `false` leaves it out. */
  readonly base?: string | false
  /** Your own rules, as the `user` part. */
  readonly instructions?: string
  /** Further parts (project rules, session notes), placed by their priority. */
  readonly parts?: ReadonlyArray<PromptPart>
  /**
   * The project's instructions files (`AGENTS.md`, else `CLAUDE.md`, from the repository's root down
   * to the session's cwd) and the user's own file when `userFile` is given; on by default, `false`
   * leaves them out.
   */
  readonly projectInstructions?: ProjectInstructions.Options | false | undefined
}

/** The default `base` part. */
export const defaultBase =
  "You are a coding agent working in the user's workspace. Read before you change things, make the smallest change that does the job, and say briefly what you did."

/** The parts of the system prompt for one request, before they are joined. */
export const partsFor = (options: Options, input: ContextInput): ReadonlyArray<PromptPart> => {
  const parts: Array<PromptPart> = []
  const base = options.base ?? defaultBase
  if (base !== false) parts.push({ id: "base", source: "base", priority: 0, content: base })
  parts.push({ id: "workspace", source: "workspace", priority: 10, content: `Working directory: ${input.cwd}` })
  if (input.tools.length > 0) {
    parts.push({
      id: "tools",
      source: "tools",
      priority: 20,
      content: `Tools: ${input.tools.map((t) => t.name).join(", ")}. Paths are relative to the working directory. ` +
        "A call may be denied or need the user's approval; when it fails, read the reason and adapt."
    })
  }
  if (options.instructions !== undefined && options.instructions.trim() !== "") {
    parts.push({ id: "user", source: "user", priority: 40, content: options.instructions })
  }
  return [...parts, ...(options.parts ?? [])]
}

/** How many sessions' instructions are kept for the rest of their turn. */
const cachedSessions = 256

/** Builds the composer. */
export const make = (options: Options = {}): Effect.Effect<ContextBuilder.Service> =>
  Effect.sync(() => {
    const instructions = options.projectInstructions
    if (instructions === false) return { build: (input) => Effect.sync(() => buildWith(partsFor(options, input), input)) }
    // The instructions of each session's current turn: a turn's later steps (and a rebuild after a
    // compaction) send what its first step read, so a file changed mid-turn changes the next turn.
    const read = new Map<string, { readonly turnId: string; readonly parts: ReadonlyArray<PromptPart> }>()
    const instructionsFor = (input: ContextInput) =>
      Effect.suspend(() => {
        const kept = read.get(input.sessionId)
        if (input.turnId !== undefined && kept?.turnId === input.turnId) return Effect.succeed(kept.parts)
        return ProjectInstructions.load(input.cwd, { ...instructions, leaveOut: input.leaveOut }).pipe(Effect.tap((parts) =>
          Effect.sync(() => {
            if (input.turnId === undefined) return
            read.delete(input.sessionId)
            read.set(input.sessionId, { turnId: input.turnId, parts })
            if (read.size > cachedSessions) read.delete(read.keys().next().value!)
          })
        ))
      })
    return {
      build: (input) =>
        Effect.map(instructionsFor(input), (parts) => buildWith([...partsFor(options, input), ...parts], input))
    }
  })

/** The composer as the context builder. */
export const layer = (options: Options = {}): Layer.Layer<ContextBuilder> => Layer.effect(ContextBuilder, make(options))
