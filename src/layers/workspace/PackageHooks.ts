/**
 * `package.json`'s keys that git hook runners read at the user's next commit (or install), outside
 * the sandbox, as they read `.husky/` and the hook managers' configs (`RunsLater`): lint-staged's and
 * nano-staged's `lint-staged`/`nano-staged` (run by a husky hook), husky 4's `husky.hooks`, yorkie's
 * `gitHooks`, the `pre-commit`/`pre-push` packages' `pre-commit`/`precommit`/`pre-push` (which
 * name scripts to run), ghooks' `config.ghooks`, and simple-git-hooks' `simple-git-hooks` (written
 * into `.git/hooks` by the `prepare`/`postinstall` the user's next `npm install` runs).
 *
 * `scripts` is not among them: its lifecycle scripts (`prepare`, `postinstall`) run at the user's
 * `npm install`, which runs the project's and its dependencies' code anyway, as `npm test` does; a
 * commit is not known to run anything. One definition, read by the file tools (an edit that changes
 * these keys asks), rewinds (which never restore such a change) and the command sandbox (which puts
 * them back as they were after a command).
 *
 * @since 0.1.0
 * @internal
 */
import * as NodePath from "node:path"

/** The top-level keys (and `config.ghooks`) read by git hook runners. */
const hookKeys = ["lint-staged", "nano-staged", "simple-git-hooks", "husky", "gitHooks", "pre-commit", "precommit", "pre-push", "prepush"] as const

/** Whether `path` names a `package.json` (in any case: a case-insensitive file system reads `Package.json` as it). */
export const isPackageJson = (path: string): boolean => NodePath.basename(path).toLowerCase() === "package.json"

/** A package.json's content as its readers parse it (a BOM dropped, as npm and Node's `require` drop it): an object, or `undefined`. */
const parsed = (text: string): Record<string, unknown> | undefined => {
  try {
    const value: unknown = JSON.parse(text.replace(/^\uFEFF/, ""))
    return typeof value === "object" && value !== null && !Array.isArray(value) ? value as Record<string, unknown> : undefined
  } catch {
    return undefined
  }
}

/** The hook runners' settings of a package.json's content, by key (`config.ghooks` included), as JSON text; none for a file no runner can parse. */
const settingsOf = (text: string | undefined): ReadonlyMap<string, string> => {
  const settings = new Map<string, string>()
  const json = text === undefined ? undefined : parsed(text)
  if (json === undefined) return settings
  for (const key of hookKeys) if (Object.hasOwn(json, key)) settings.set(key, JSON.stringify(json[key]))
  const config = json.config
  if (typeof config === "object" && config !== null && Object.hasOwn(config, "ghooks")) settings.set("config.ghooks", JSON.stringify((config as Record<string, unknown>).ghooks))
  return settings
}

/** The hook runners' keys whose settings differ between two contents of a package.json (`undefined`: no file). */
export const changedKeys = (before: string | undefined, after: string | undefined): ReadonlyArray<string> => {
  const [was, is] = [settingsOf(before), settingsOf(after)]
  return [...new Set([...was.keys(), ...is.keys()])].filter((key) => was.get(key) !== is.get(key))
}

/**
 * The hook runners' keys that `after` has with other settings than `before` (`undefined`: no file):
 * what a write would give a runner to run. A key only taken away is not among them (what a rewind
 * may do: a runner then runs less).
 */
export const keysGiven = (before: string | undefined, after: string | undefined): ReadonlyArray<string> => {
  const [was, is] = [settingsOf(before), settingsOf(after)]
  return [...is.keys()].filter((key) => was.get(key) !== is.get(key))
}

/** Why a change of these keys is protected (for `PathAccess.runsLater`). */
export const reason = (keys: ReadonlyArray<string>): string =>
  `package.json's ${keys.join(", ")} ${keys.length === 1 ? "is" : "are"} read by git hook runners, which run the commands it names at your next commit or install, outside the sandbox`

/**
 * `after` with the hook runners' keys put back as they are in `before` (a key `before` has not is
 * removed), indented as `after` is; `undefined` when `after` is no object a runner reads. With
 * `only`, those keys alone (`config.ghooks` by that name).
 */
export const keptAsBefore = (before: string | undefined, after: string, only?: ReadonlySet<string>): string | undefined => {
  const json = parsed(after)
  if (json === undefined) return undefined
  const was = (before === undefined ? undefined : parsed(before)) ?? {}
  const put = (into: Record<string, unknown>, from: Record<string, unknown>, key: string) => {
    if (Object.hasOwn(from, key)) into[key] = from[key]
    else delete into[key]
  }
  for (const key of hookKeys) if (only === undefined || only.has(key)) put(json, was, key)
  const config = json.config
  if (only !== undefined && !only.has("config.ghooks")) {
    // `config.ghooks` left as `after` has it.
  } else if (typeof config === "object" && config !== null && !Array.isArray(config)) {
    const wasConfig = was.config
    put(config as Record<string, unknown>, typeof wasConfig === "object" && wasConfig !== null ? wasConfig as Record<string, unknown> : {}, "ghooks")
  } else if (settingsOf(before).has("config.ghooks")) {
    json.config = { ghooks: (was.config as Record<string, unknown>).ghooks }
  }
  const indent = /^\{\r?\n([ \t]+)/.exec(after.replace(/^\uFEFF/, ""))?.[1] ?? 2
  return `${JSON.stringify(json, null, indent)}${after.endsWith("\n") ? "\n" : ""}`
}

/**
 * What a package.json's hook runners' keys are to be put back to after a command, once a file tool
 * wrote `after` over `before` while it ran (`ApprovedWrites`): `base` (the text they were to be put
 * back to until then) with the keys that write changed as it left them — a change the user allowed,
 * or one that left them alone — and every other key as in `base`. The write's own text when that is
 * all it differs by (byte for byte, for a put-back of the whole file); else `after` re-serialised
 * with those other keys as in `base` (a key the command changed before the write, which an edit
 * carried over, is not the write's). A key the write changed is its own only when the write found
 * it as in `base`: an edit of one entry of a key the command had added to carries the command's
 * entries (review 60a), so that key is put back to `base` too, and named in `reverted` (the user
 * may redo the edit).
 */
export const approvedOnto = (
  base: string | undefined,
  before: string | undefined,
  after: string
): { readonly text: string; readonly reverted: ReadonlyArray<string> } => {
  const [was, found] = [settingsOf(base), settingsOf(before)]
  const changed = changedKeys(before, after)
  const own = new Set(changed.filter((key) => found.get(key) === was.get(key)))
  const reverted = changed.filter((key) => !own.has(key))
  const others = changedKeys(base, after).filter((key) => !own.has(key))
  return { text: others.length === 0 ? after : keptAsBefore(base, after, new Set(others)) ?? after, reverted }
}
