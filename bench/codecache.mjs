/**
 * The code-cache prototype of docs/benchmarks.md ("The floor, and the lever left"): not how the CLI
 * ships, a measurement of what a V8 code cache would take off a start.
 *
 *   node bench/codecache.mjs            bundles the CLI as one CommonJS file, .cache/codecache/main.cjs,
 *                                       and writes its launcher, .cache/codecache/launch.cjs
 *   node .cache/codecache/launch.cjs sessions --data-dir /tmp/empty
 *
 * The launcher compiles main.cjs with `vm.Script`, handing V8 the code cache an earlier run of the
 * same command left (`main.cjs.<command>.cache`, made with `createCachedData()` at exit, so it holds
 * every function that run compiled); the first run of a command writes it. `EFFECT_AGENT_NO_CACHE=1`
 * runs the same file without a cache. Compare with bench/instructions.sh or interleaved timings
 * against `node dist/cli/bin.js …`. What shipping it would take is in docs/benchmarks.md.
 */
import * as esbuild from "esbuild"
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { join, resolve } from "node:path"
import { barrelImports, srcBarrel } from "../scripts/barrel-imports.mjs"

const root = resolve(import.meta.dirname, "..")
const out = join(root, ".cache", "codecache")
const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"))
// The same split as scripts/bundle-cli.mjs: Effect's ecosystem bundled, the other dependencies and the drivers imported.
const external = [...Object.keys(pkg.dependencies).filter((name) => name !== "effect" && !name.startsWith("@effect/")), "better-sqlite3", "pg", "pg-*"]

rmSync(out, { recursive: true, force: true })
mkdirSync(out, { recursive: true })
await esbuild.build({
  absWorkingDir: root,
  entryPoints: { main: "src/cli/Main.ts" },
  outdir: out,
  outExtension: { ".js": ".cjs" },
  bundle: true,
  // One file: each module imported with `import()` stays behind an initialiser that runs on first import.
  format: "cjs",
  platform: "node",
  target: "node20",
  external,
  minifyWhitespace: true,
  minifySyntax: true,
  define: { "import.meta.url": "__importMetaUrl" },
  banner: { js: "var __importMetaUrl=require(\"node:url\").pathToFileURL(__filename).href;" },
  plugins: [barrelImports(srcBarrel(root))],
  logLevel: "error"
})
writeFileSync(join(out, "launch.cjs"), `"use strict"
const vm = require("node:vm"), fs = require("node:fs"), path = require("node:path"), Module = require("node:module")
const file = path.join(__dirname, "main.cjs")
const cacheFile = \`\${file}.\${process.argv[2] ?? "none"}.cache\`
const useCache = process.env.EFFECT_AGENT_NO_CACHE !== "1"
let cachedData
if (useCache) try { cachedData = fs.readFileSync(cacheFile) } catch {}
const script = new vm.Script(Module.wrap(fs.readFileSync(file, "utf8")), { filename: file, cachedData, importModuleDynamically: vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER })
const module_ = { exports: {} }
script.runInThisContext().call(module_.exports, module_.exports, require, module_, file, __dirname)
if (useCache && (cachedData === undefined || script.cachedDataRejected)) process.on("exit", () => fs.writeFileSync(cacheFile, script.createCachedData()))
`)
console.log(`wrote ${join(out, "main.cjs")} and launch.cjs`)
