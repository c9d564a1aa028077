/**
 * Builds `dist/` — tsc (`tsconfig.build.json`), then the CLI bundle (`scripts/bundle-cli.mjs`) over
 * tsc's unbundled `dist/cli/bin.js` — and records what it was built from, so the test suite's global
 * setup can skip a build that is already current.
 *
 *   node scripts/build.mjs              `npm run build`: always builds; fails on a type error
 *   node scripts/build.mjs --if-stale   `prepack`: builds only when dist is not the build of the
 *                                       current inputs (so `npm pack` in the packaging test does not
 *                                       rewrite the dist other tests are running)
 *
 * The suite's global setup (test/globalSetup.ts) calls `build({ ifStale: true, lenient: true })`.
 *
 * "Current" is decided by content, never by clocks: the stamp (`.cache/dist-stamp.json`, outside
 * dist so `npm pack` never ships it) holds a SHA-256 of every input — src/, scripts/, the tsconfigs,
 * package.json and package-lock.json (dependency versions change the bundle) — and the size and
 * mtime of every file the build wrote. A build is skipped only when both match; a changed source, a
 * checkout, an `npm ci` with other versions or a file removed from or rewritten in dist all rebuild.
 * The stamp is written only after tsc and the bundle both succeed.
 *
 * tsc runs incrementally (`.cache/build.tsbuildinfo`): after a change it re-checks what the change
 * can affect (seconds) instead of the whole program. tsc trusts that file and would not re-emit an
 * unchanged module whose output went missing, so it is deleted — a full build — whenever dist is
 * not exactly what the last build wrote.
 */
import { execFileSync } from "node:child_process"
import { createHash } from "node:crypto"
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import { dirname, join, relative, resolve } from "node:path"
import { fileURLToPath } from "node:url"

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..")
const dist = join(root, "dist")
const cache = join(root, ".cache")
const stampFile = join(cache, "dist-stamp.json")
const buildInfo = join(cache, "build.tsbuildinfo")
const inputs = ["src", "scripts", "tsconfig.json", "tsconfig.build.json", "package.json", "package-lock.json"]

export const filesUnder = (path) =>
  !existsSync(path)
    ? []
    : statSync(path).isDirectory()
    ? readdirSync(path).sort().flatMap((name) => filesUnder(join(path, name)))
    : [path]

/** One hash over the inputs' paths and contents (also what `bundle-cli.mjs --if-stale` compares). */
export const inputsHash = () => {
  const hash = createHash("sha256")
  for (const file of inputs.flatMap((input) => filesUnder(join(root, input)))) {
    hash.update(relative(root, file)).update("\0").update(readFileSync(file)).update("\0")
  }
  return hash.digest("hex")
}

/** What a build left in some folders of dist (all of it by default): each file's size and mtime. */
export const outputs = (folders = [dist]) =>
  Object.fromEntries(folders.flatMap(filesUnder).map((file) => {
    const { size, mtimeMs } = statSync(file)
    return [relative(dist, file), `${size}:${mtimeMs}`]
  }))

/** Whether the folders hold exactly the files recorded, unchanged. */
export const sameOutputs = (recorded, folders = [dist]) => {
  const now = outputs(folders)
  const names = Object.keys(recorded ?? {})
  return names.length > 0 && names.length === Object.keys(now).length && names.every((name) => now[name] === recorded[name])
}

export const readStamp = (file = stampFile) => {
  try {
    return JSON.parse(readFileSync(file, "utf8"))
  } catch {
    return undefined
  }
}

const node = (args) => execFileSync(process.execPath, args, { cwd: root, stdio: "pipe", encoding: "utf8" })

/**
 * Builds dist unless (with `ifStale`) it is the build of the current inputs. Returns what it did.
 * With `lenient`, a type error is not fatal (tsc still emits every file; the suite's own type-check
 * reports it), and the bundle failing leaves tsc's unbundled bin of the same sources (slower);
 * neither stamps the build, so the next run tries again.
 */
export const build = ({ ifStale = false, lenient = false } = {}) => {
  const stamp = readStamp()
  const hash = inputsHash()
  const intact = sameOutputs(stamp?.outputs)
  if (ifStale && intact && stamp.inputs === hash) return "current"
  if (!intact) rmSync(buildInfo, { force: true })
  mkdirSync(cache, { recursive: true })
  rmSync(stampFile, { force: true })
  const problems = []
  try {
    node([createRequire(import.meta.url).resolve("typescript/bin/tsc"), "-p", "tsconfig.build.json", "--incremental", "--tsBuildInfoFile", buildInfo])
  } catch (error) {
    // Exit status 2: diagnostics, every output emitted all the same. Anything else emitted nothing (or not all).
    if (!lenient || error.status !== 2) throw new Error(`tsc failed:\n${error.stdout ?? ""}${error.stderr ?? error}`)
    problems.push("tsc reported errors (it still emitted; the suite's type-check names them)")
  }
  try {
    node([join(root, "scripts", "bundle-cli.mjs")])
  } catch (error) {
    const why = String(error.stderr ?? error).split("\n").slice(0, 4).join("\n")
    if (!lenient) throw new Error(`the CLI bundle failed:\n${why}`)
    problems.push(`the CLI bundle failed, the tests run tsc's unbundled dist/cli/bin.js:\n${why}`)
  }
  if (problems.length > 0) return problems.join("\n")
  writeFileSync(stampFile, JSON.stringify({ inputs: hash, outputs: outputs() }))
  return "built"
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  try {
    const result = build({ ifStale: process.argv.includes("--if-stale") })
    if (result !== "built" && result !== "current") process.stderr.write(`${result}\n`)
  } catch (error) {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`)
    process.exit(1)
  }
}
