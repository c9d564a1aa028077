/**
 * The suite's own machinery, where it touches what CI sees: a run with a failing test must exit
 * non-zero (`.ci/run` exits with `npm test`'s status).
 */
import { spawnSync } from "node:child_process"
import { resolve } from "node:path"
import { pathToFileURL } from "node:url"
import { describe, expect, it } from "vitest"

const root = resolve(import.meta.dirname, "..")

describe("the integration project's global setup", () => {
  it("leaves a failing run's exit code alone once its PostgreSQL module is loaded", () => {
    // As vitest ends a run with failures: exit code 1, then the event loop empties.
    const setup = pathToFileURL(resolve(root, "test/postgresSetup.ts")).href
    const ended = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", `await import(${JSON.stringify(setup)}); process.exitCode = 1`], {
      cwd: root,
      encoding: "utf8"
    })
    expect(ended.status, ended.stderr).toBe(1)
  })
})
