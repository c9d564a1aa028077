/**
 * The PostgreSQL driver loaded without Node's fetch (cli/PgLoad.ts): when `pg` loads it asks
 * whether it runs in a Cloudflare Worker, and where there is no `navigator` (Node 20) answering
 * builds a `Response`, which loads undici — tens of milliseconds of every `--store postgres`
 * command. Each case runs in a fresh process (this one may have loaded fetch already).
 */
import { spawnSync } from "node:child_process"
import { createRequire } from "node:module"
import { resolve } from "node:path"
import { pathToFileURL } from "node:url"
import { describe, expect, it } from "vitest"

const tsx = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href
const child = resolve(import.meta.dirname, "pgLoadChild.ts")

const load = (how: "guarded" | "plain") => {
  const result = spawnSync(process.execPath, ["--import", tsx, child, how], { encoding: "utf8" })
  expect(result.status, result.stderr).toBe(0)
  return JSON.parse(result.stdout.trim()) as { hadNavigator: boolean; navigator: boolean; undici: boolean }
}

describe("loading the PostgreSQL driver", () => {
  it("loads no fetch, and leaves the globals as it found them", { timeout: 60_000 }, () => {
    const guarded = load("guarded")
    expect(guarded.undici).toBe(false)
    expect(guarded.navigator).toBe(guarded.hadNavigator)
    // What it spares: without it, a runtime with no `navigator` of its own (Node 20) loads fetch.
    const plain = load("plain")
    if (!plain.hadNavigator) expect(plain.undici).toBe(true)
  })
})
