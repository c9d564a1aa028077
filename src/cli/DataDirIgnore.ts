/**
 * A data dir's `.gitignore`: the CLI's default data dir is `.effect-agent/` in the project, beside
 * the project's `settings.json` (meant to be committed and shared), so its session logs and blobs —
 * which hold what the tools read, secrets included — showed as untracked in `git status`, one
 * `git add .` away from a commit. The store's folder gets a `.gitignore` that ignores everything in
 * it but `settings.json`, as tools with a folder of their own do (a virtualenv, pytest's cache).
 *
 * Written by the runtime, never by the model (the folder is protected from the tools); never over a
 * file that is there — the user's own, or a link a repository shipped (`wx` neither replaces nor
 * follows one) — so an empty `.gitignore` of the user's keeps it from being written.
 *
 * @since 0.14.0
 */
import { closeSync, lstatSync, openSync, writeSync } from "node:fs"
import * as NodePath from "node:path"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

/** The folder name a data dir has by default, and the only one a `.gitignore` is written into. */
const folderName = ".effect-agent"

/** What the file says: why, then the rules (the folder's own files only; `settings.json` kept for git). */
export const content = [
  "# Written by effect-agent: its session logs and blobs hold what the tools read, secrets included.",
  "# .effect-agent/settings.json is meant to be shared; everything else here is this machine's.",
  "*",
  "!settings.json",
  ""
].join("\n")

/**
 * Writes `<dataDir>/.gitignore` when the data dir is a folder named `.effect-agent` (not a link) and
 * has none; any failure leaves things as they are. Only a folder of that name: a `--data-dir .` (or
 * any folder of the user's own choosing, which may be a project's root) must never have all its
 * files ignored.
 */
export const ensure = (dataDir: string): void => {
  if (NodePath.basename(NodePath.resolve(dataDir)) !== folderName) return
  try {
    if (!lstatSync(dataDir).isDirectory()) return
    const fd = openSync(NodePath.join(dataDir, ".gitignore"), "wx", 0o644)
    try {
      writeSync(fd, content)
    } finally {
      closeSync(fd)
    }
  } catch {
    // No data dir yet, a file there already (EEXIST), or a folder this user cannot write: nothing to do.
  }
}

/**
 * Ensures the `.gitignore` of a store's data dir for as long as the store is open: when it opens (a
 * data dir from an earlier version) and when it closes (one its first session made).
 */
export const layer = (dataDir: string): Layer.Layer<never> =>
  Layer.scopedDiscard(Effect.acquireRelease(Effect.sync(() => ensure(dataDir)), () => Effect.sync(() => ensure(dataDir))))
