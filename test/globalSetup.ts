/**
 * Builds `dist/` once before the suite as `npm run build` does (tsc, then the CLI bundle), so
 * subprocess tests run the built CLI (`node dist/cli/bin.js`) as users do, instead of compiling the
 * sources on every spawn.
 */
import { execFileSync } from "node:child_process"
import { existsSync } from "node:fs"
import { createRequire } from "node:module"
import { resolve } from "node:path"

const root = resolve(import.meta.dirname, "..")

export default function setup() {
  const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc")
  try {
    execFileSync(process.execPath, [tsc, "-p", "tsconfig.build.json"], { cwd: root, stdio: "pipe" })
  } catch (error) {
    // tsc still emits on type errors; the suite's own `tsc --noEmit` reports them. Only a missing build is fatal.
    if (!existsSync(resolve(root, "dist/cli/bin.js"))) throw error
  }
  // The bin as shipped: the bundle over tsc's unbundled bin.js (see scripts/bundle-cli.mjs). If the
  // sources cannot be bundled, tsc's bin still runs (slower) and the suite's `tsc --noEmit` says why;
  // `npm run build` (CI) and the packaging test fail on it.
  try {
    execFileSync(process.execPath, [resolve(root, "scripts/bundle-cli.mjs")], { cwd: root, stdio: "pipe" })
  } catch (error) {
    const why = String((error as { stderr?: unknown }).stderr ?? error).split("\n").slice(0, 4).join("\n")
    process.stderr.write(`globalSetup: the CLI bundle failed, the tests run tsc's unbundled dist/cli/bin.js:\n${why}\n`)
  }
}
