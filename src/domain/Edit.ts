/**
 * What an edit call does to its file, read from its arguments — the one reading the CLI, the ACP
 * agent and the viewer show as a diff. Carries nothing of Effect (the viewer's page bundles it).
 *
 * @since 0.6.0
 */

/**
 * An edit: `write_file` writes `newText` (its file's earlier content is not in the call, so
 * `oldText` is `null`), `edit_file` replaces `oldText` with `newText`. `path` as the model gave it.
 */
export interface Edit {
  readonly path: string
  readonly oldText: string | null
  readonly newText: string
}

const field = (args: unknown, name: string): string | undefined => {
  if (typeof args !== "object" || args === null || Array.isArray(args)) return undefined
  const value = (args as Record<string, unknown>)[name]
  return typeof value === "string" ? value : undefined
}

/** The edit a call makes; `undefined` for other tools, or arguments that are not an edit's (a model's garbage). */
export const of = (tool: string, args: unknown): Edit | undefined => {
  const path = field(args, "path")
  if (path === undefined) return undefined
  if (tool === "write_file") {
    const newText = field(args, "content")
    return newText === undefined ? undefined : { path, oldText: null, newText }
  }
  if (tool === "edit_file") {
    const oldText = field(args, "oldString")
    const newText = field(args, "newString")
    return oldText === undefined || newText === undefined ? undefined : { path, oldText, newText }
  }
  return undefined
}
