// An edit as the viewer shows it: diff lines. Its own module (no DOM), so Node tests import it.

import { diffLines } from "diff"
import { Edit } from "./viewer.js"

/**
 * How long the line diff may run (ms). The model writes both sides: two long, wholly different
 * texts took the diff minutes (20,000 lines: 223 s) and froze the tab. Past it, the edit is shown
 * as all of the old text removed, then all of the new added.
 */
const diffTimeLimit = 250

const lines = (text) => {
  const all = text.split("\n")
  return all.at(-1) === "" ? all.slice(0, -1) : all
}

/**
 * An edit as diff lines, each `{ kind: "add" | "remove" | "same", text }`: `edit_file` the replaced
 * text against its replacement, `write_file` the content it writes (its earlier content is not in the
 * log). `undefined` for other calls, or arguments that are not an edit's.
 */
export const editDiff = (tool, args) => {
  const edit = Edit.of(tool, args)
  if (edit === undefined) return undefined
  if (edit.oldText === null) return lines(edit.newText).map((text) => ({ kind: "add", text }))
  const parts = diffLines(edit.oldText, edit.newText, { timeout: diffTimeLimit }) ?? [
    { removed: true, value: edit.oldText },
    { added: true, value: edit.newText }
  ]
  return parts.flatMap((part) => lines(part.value).map((text) => ({ kind: part.added ? "add" : part.removed ? "remove" : "same", text })))
}
