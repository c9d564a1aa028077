/**
 * `effect-agent/view` is documented as light enough for a browser bundle (docs/embedding.md). Taken
 * from the built package (its `exports` entry, as a bundler resolves it): esbuild bundles it for
 * `platform: "browser"` from the package's own files alone — no Node built-in, no dependency (not
 * even Effect) — and the bundle folds the golden logs, run in a bare JavaScript realm (`node:vm`:
 * no `require`, `process`, `Buffer` or any Node global), to what the package's fold in Node makes.
 * A bare realm is what a browser and Node share; the web viewer's page, bundled from `src/`, is
 * tested in Chromium elsewhere.
 */
import { build } from "esbuild"
import { readFileSync } from "node:fs"
import { isAbsolute, join, relative, resolve } from "node:path"
import { createContext, runInContext } from "node:vm"
import { describe, expect, it } from "vitest"

const root = resolve(import.meta.dirname, "../..")
const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { exports: Record<string, { default: string }> }
const entry = join(root, manifest.exports["./view"]!.default)

const golden = (name: string): Array<unknown> =>
  readFileSync(join(root, "fixtures/golden", `${name}.jsonl`), "utf8").trim().split("\n").map((line) => JSON.parse(line) as unknown)
    .filter((line) => (line as { format?: unknown }).format === undefined)

interface ViewModule {
  readonly SessionView: { readonly fold: (events: ReadonlyArray<unknown>) => unknown }
}

describe("effect-agent/view in a browser", () => {
  it("bundles for the browser from the built package alone and folds a log in a realm without Node", async () => {
    const bundled = await build({
      entryPoints: [entry],
      bundle: true,
      platform: "browser",
      format: "iife",
      globalName: "EffectAgentView",
      write: false,
      metafile: true,
      logLevel: "silent"
    })
    expect(bundled.errors).toEqual([])
    expect(bundled.warnings).toEqual([])
    const inputs = Object.keys(bundled.metafile.inputs)
    // Every input is a file of the package's dist: no `node:` module, no node_modules.
    for (const input of inputs) {
      const path = relative(join(root, "dist"), resolve(process.cwd(), input))
      expect(path.startsWith("..") || isAbsolute(path), input).toBe(false)
    }

    const code = bundled.outputFiles[0]!.text
    const realm = createContext({})
    const view = runInContext(`${code}\nEffectAgentView`, realm) as ViewModule
    expect(runInContext("[typeof require, typeof process, typeof Buffer, typeof setTimeout].join()", realm)).toBe("undefined,undefined,undefined,undefined")

    const inNode = (await import(entry)) as ViewModule
    for (const name of ["minimal", "tools", "compaction"]) {
      const log = golden(name)
      expect(log.length).toBeGreaterThan(3)
      // Objects of another realm: compared as the JSON a page would hold.
      realm.log = JSON.stringify(log)
      const folded = JSON.stringify(view.SessionView.fold(runInContext("JSON.parse(log)", realm) as Array<unknown>))
      expect(folded, name).toBe(JSON.stringify(inNode.SessionView.fold(log)))
      expect(JSON.parse(folded), name).toMatchObject({ lastSequence: log.length })
    }
  })
})
