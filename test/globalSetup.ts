/**
 * Builds `dist/` once before the suite, so subprocess tests run the built CLI (`node dist/cli/bin.js`)
 * as users do, instead of compiling the sources on every spawn.
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
}
