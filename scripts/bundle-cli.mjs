/**
 * Bundles the CLI into `dist/cli/bin.js` (the package's `bin`) plus lazy chunks in `dist/cli/chunks/`,
 * and the web viewer's page into `dist/server/viewer/` (see the end of this file).
 *
 * Why: unbundled, a cold start resolves, reads and compiles some 600 ES modules of Effect,
 * @effect/cli and @effect/platform before the first byte of an answer (~440 ms against ~50 ms for
 * `node -e ''`); Node 20 has no module compile cache. One bundle in a few files starts in well under
 * half that.
 *
 * What is in it: the CLI, the engine and everything of Effect's ecosystem (effect, @effect/*), so the
 * CLI runs on one copy of Effect whatever the app around it installed. What is not: the package's
 * other dependencies (the vendor SDKs, the ACP SDK, zod) and database drivers (better-sqlite3, pg):
 * they are imported from node_modules, and only by the chunks that need them — a chunk is loaded by
 * a dynamic `import()` in the sources (a provider's module, `sqlite.js`, `acp.js`, …), so a command
 * loads a vendor SDK, SQLite or the ACP code only when it is used. The same holds for the commands
 * themselves: the program loads the command tree (`src/cli/commands/`: names, flags, descriptions)
 * and each command's handler is `import()`ed when it runs (`src/cli/Lazy.ts`), so `--help` loads no
 * engine and `sessions` only its store. A new subcommand follows that split; a new driver of native
 * code belongs in `drivers` below. Imports from the library's barrel (`src/index.ts`) are bundled as
 * imports of the modules they name (barrel-imports.mjs): through the barrel, every chunk would reach
 * the whole library.
 *
 * Also `dist/cli/main.cjs`: the same program as one CommonJS file, which bin.js runs on Node 20 with
 * V8's code cache (src/cli/CodeCache.ts); the launcher is told its content hash (the cache's key).
 *
 * Run by `npm run build` after `tsc` (which also emits an unbundled `dist/cli/bin.js`, overwritten
 * here) and by the test suite's global setup; `npm run agent` runs it as `--if-stale` first.
 *
 * `--if-stale` bundles only when the CLI in dist is not the bundle of the current sources: it is
 * current when a stamp — `.cache/cli-stamp.json`, written after each bundle, or build.mjs's
 * `.cache/dist-stamp.json` of a whole build — holds the SHA-256 of the current inputs (src/,
 * scripts/, the tsconfigs, package.json and the lock: see build.mjs) and the size and mtime of
 * every file the bundle wrote, still there unchanged. Content, not clocks: a stale CLI never runs
 * (an edit, a checkout, a dist rewritten by tsc all bundle again), and a current one costs a hash
 * of ~1.5 MB instead of a bundle (3–10 s on a busy machine). It prints nothing on stdout, so
 * `npm run -s agent -- export-script <id> > file` writes the command's output only.
 */
import * as esbuild from "esbuild"
import { createHash } from "node:crypto"
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { join, resolve } from "node:path"
import { barrelImports, srcBarrel } from "./barrel-imports.mjs"
import { inputsHash, outputs, readStamp, sameOutputs } from "./build.mjs"

const root = resolve(import.meta.dirname, "..")
const outdir = join(root, "dist", "cli")
const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"))

const cliStamp = join(root, ".cache", "cli-stamp.json")
/** What this script writes: the CLI bundle and the viewer's page. */
const written = [outdir, join(root, "dist", "server", "viewer")]
// Hashed before bundling: a source edited meanwhile makes the next `--if-stale` bundle again.
const inputs = inputsHash()
if (process.argv.includes("--if-stale")) {
  const whole = readStamp()
  const cli = readStamp(cliStamp)
  if ((whole?.inputs === inputs && sameOutputs(whole.outputs)) || (cli?.inputs === inputs && sameOutputs(cli.outputs, written))) process.exit(0)
}
rmSync(cliStamp, { force: true })

const effectEcosystem = (name) => name === "effect" || name.startsWith("@effect/")
/** Drivers of the optional stores: native code, installed with the store's peer packages. */
const drivers = ["better-sqlite3", "pg", "pg-*"]
const external = [...Object.keys(pkg.dependencies ?? {}).filter((name) => !effectEcosystem(name)), ...drivers]
/**
 * What `main.cjs` leaves outside: the same, but for PostgreSQL's driver, which it carries (`pg` and
 * its pure-JavaScript packages, ~200 KB): a package `require`d from node_modules is compiled from
 * source on every start (Node 20 has no compile cache), while the bundle's code is under the CLI's
 * code cache (`pg` was 0.09·10⁹ instructions of every `--store postgres` command). `pg-native` (native
 * code, which `pg` loads only when asked for) and `pg-cloudflare` (Cloudflare Workers only) stay out.
 */
const externalOfMainCjs = [...external.filter((name) => name !== "pg" && name !== "pg-*"), "pg-native", "pg-cloudflare"]

// The same program as one CommonJS file, `dist/cli/main.cjs`: what bin.js runs on Node 20 with V8's
// code cache (src/cli/CodeCache.ts; Node 20 caches no ES module). A lazily imported module stays
// behind an initialiser that runs at its first `import()`, so evaluation is as lazy as the chunks';
// the packages left outside (vendor SDKs, drivers, Node's modules) are `require`d, also where the
// sources `import()` them: `import()` from a `vm.Script` is experimental on Node 20 (a warning on
// stderr), and every such package ships CommonJS (an ES-only one would fail the CLI's tests, which
// run this file). No source map: `EFFECT_AGENT_DEBUG=1` runs the ES chunks, whose maps name the sources.
const commonJs = await esbuild.build({
  absWorkingDir: root,
  entryPoints: { main: "src/cli/Main.ts" },
  outdir,
  outExtension: { ".js": ".cjs" },
  bundle: true,
  format: "cjs",
  platform: "node",
  target: "node20",
  external: externalOfMainCjs,
  minifyWhitespace: true,
  minifySyntax: true,
  supported: { "dynamic-import": false },
  define: { "import.meta.url": "__importMetaUrl" },
  banner: { js: "var __importMetaUrl=require(\"node:url\").pathToFileURL(__filename).href;" },
  plugins: [barrelImports(srcBarrel(root))],
  write: false,
  logLevel: "warning"
})
const mainCjs = commonJs.outputFiles[0]
// The cache's key: V8 checks a cache against the source's length only, so the launcher names it by content.
const bundleHash = createHash("sha256").update(mainCjs.contents).digest("hex").slice(0, 16)

const result = await esbuild.build({
  absWorkingDir: root,
  entryPoints: { bin: "src/cli/bin.ts" },
  define: { EFFECT_AGENT_CLI_BUNDLE_HASH: JSON.stringify(bundleHash) },
  outdir,
  entryNames: "[name]",
  chunkNames: "chunks/[name]-[hash]",
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node20",
  external,
  // Less to read and compile at start-up; identifiers are kept, so stacks (EFFECT_AGENT_DEBUG=1) still name functions.
  minifyWhitespace: true,
  minifySyntax: true,
  sourcemap: "linked",
  // The sources ship in the package (src/); the maps point at them.
  sourcesContent: false,
  // CommonJS code bundled in an ES module calls `require` for Node's own modules.
  banner: { js: "import { createRequire as __bundleCreateRequire } from \"node:module\"; const require = __bundleCreateRequire(import.meta.url);" },
  metafile: true,
  // Each chunk gets the library modules its code names, not the whole barrel (see barrel-imports.mjs).
  plugins: [barrelImports(srcBarrel(root))],
  logLevel: "warning"
})

mkdirSync(outdir, { recursive: true })
writeFileSync(join(outdir, "main.cjs"), mainCjs.contents)

// Chunks are named by their content's hash: drop the ones this build did not write.
const bundled = new Set(Object.keys(result.metafile.outputs).map((file) => resolve(root, file)))
const chunks = join(outdir, "chunks")
for (const name of readdirSync(chunks)) {
  if (!bundled.has(join(chunks, name))) rmSync(join(chunks, name))
}

// The web viewer's page (served by `serve` and by `effect-agent/server`): its script bundled with
// the domain's fold of the log (`SessionView`, through `effect-agent/view`, which carries nothing of
// Effect), so the page shows what the package's projection says rather than a copy of it. Built
// here, never while the server runs; the server reads `index.html`, `page.bundle.js` and the sign-in page from this folder.
const viewer = join(root, "dist", "server", "viewer")
mkdirSync(viewer, { recursive: true })
await esbuild.build({
  absWorkingDir: root,
  entryPoints: ["src/server/viewer/page.js"],
  outfile: join(viewer, "page.bundle.js"),
  bundle: true,
  format: "esm",
  platform: "browser",
  target: "es2022",
  logLevel: "warning"
})
for (const name of ["index.html", "login.html", "login.js"]) copyFileSync(join(root, "src", "server", "viewer", name), join(viewer, name))

mkdirSync(join(root, ".cache"), { recursive: true })
writeFileSync(cliStamp, JSON.stringify({ inputs, outputs: outputs(written) }))
