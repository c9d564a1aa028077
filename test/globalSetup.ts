/**
 * Builds `dist/` before the integration tests as `npm run build` does (tsc, then the CLI bundle), so
 * subprocess tests run the built CLI (`node dist/cli/bin.js`) as users do, instead of compiling the
 * sources on every spawn. Skipped when dist already is the build of the current sources
 * (scripts/build.mjs decides by content: a stale dist is never used).
 */
import { build } from "../scripts/build.mjs"

export default function setup() {
  const result = build({ ifStale: true, lenient: true })
  if (result !== "built" && result !== "current") process.stderr.write(`globalSetup: ${result}\n`)
}
