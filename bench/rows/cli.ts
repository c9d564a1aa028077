/**
 * Row 8: CLI cold start: spawning the built CLI (`node dist/cli/bin.js run --provider fake "hi"`, the
 * echo model, in a fresh temporary cwd, no API keys) until it exits, against spawning `node -e ''` until
 * it exits: both sides timed the same way (the CLI's first byte of the answer is in the detail). dist
 * is rebuilt first when any file in src/ is newer. The CLI's compile cache is in a scratch folder, made
 * by the warm-up run (a user's first run of a command makes it the same way): the row's ratio is of a
 * start with the compile cache warm, and says so; a third contender starts with an empty cache (a
 * fresh folder each time, as a user's very first run) and its time and ratio are in the detail.
 */
import { spawn, spawnSync } from "node:child_process"
import { existsSync, readdirSync, statSync } from "node:fs"
import { join } from "node:path"
import { config } from "../config.js"
import { scratch } from "../engine.js"
import { format, interleave, median, ratioRow, ratios, type Row } from "../measure.js"

const root = join(import.meta.dirname, "..", "..")
const bin = join(root, "dist", "cli", "bin.js")

const newest = (dir: string): number =>
  readdirSync(dir, { withFileTypes: true }).reduce((max, entry) => {
    const path = join(dir, entry.name)
    return Math.max(max, entry.isDirectory() ? newest(path) : statSync(path).mtimeMs)
  }, 0)

/** Builds dist as `npm run build` does (tsc, then the CLI bundle) when it is missing or older than src/. */
export const ensureBuilt = () => {
  if (existsSync(bin) && statSync(bin).mtimeMs >= newest(join(root, "src"))) return
  console.log("building dist (tsc -p tsconfig.build.json, scripts/bundle-cli.mjs)…")
  const result = spawnSync(process.execPath, [join(root, "node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.build.json"], {
    cwd: root,
    stdio: "inherit"
  })
  // Type errors still emit; only a missing CLI stops the row.
  if (result.status !== 0) console.log(`(tsc exited ${result.status}; using what it emitted)`)
  // The CLI as `npm run build` ships it: bundled over tsc's unbundled bin (scripts/bundle-cli.mjs).
  const bundled = spawnSync(process.execPath, [join(root, "scripts", "bundle-cli.mjs")], { cwd: root, stdio: "inherit" })
  if (bundled.status !== 0) throw new Error("scripts/bundle-cli.mjs failed")
  if (!existsSync(bin)) throw new Error("dist/cli/bin.js was not built")
}

const env: Record<string, string | undefined> = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/API_KEY$/.test(name) && !name.startsWith("NODE_OPTIONS")))

/** Spawns and resolves with the ms until it exits, and until its first stdout byte (NaN when it printed nothing). */
const timeSpawn = (args: ReadonlyArray<string>, cwd: string) =>
  new Promise<{ readonly exit: number; readonly firstByte: number }>((resolve, reject) => {
    const start = performance.now()
    const child = spawn(process.execPath, args, { cwd, env, stdio: ["ignore", "pipe", "ignore"] })
    let firstByte = Number.NaN
    child.stdout.once("data", () => {
      firstByte = performance.now() - start
    })
    child.stdout.resume()
    child.once("error", reject)
    child.once("close", (code) => {
      const total = performance.now() - start
      if (code !== 0) return reject(new Error(`${args.join(" ")} exited ${code}`))
      resolve({ exit: total, firstByte })
    })
  })

export const run = async (): Promise<Array<Row>> => {
  ensureBuilt()
  // The CLI's compile cache (src/cli/CodeCache.ts) in a folder of this run's: the warm-up run makes
  // it, as a user's first run does; the samples are the starts after it.
  env.EFFECT_AGENT_CODE_CACHE_DIR = scratch("code-cache")
  // A config folder of this run's too: each run records the session it starts there (StartedSessions),
  // as a user's runs do in theirs, and the bench leaves the machine's own folder alone.
  env.EFFECT_AGENT_CONFIG_DIR = scratch("config")
  const firstBytes: Array<number> = []
  const cli = () =>
    timeSpawn([bin, "run", "--provider", "fake", "hi"], scratch("cli")).then(({ exit, firstByte }) => {
      if (Number.isNaN(firstByte)) throw new Error("the CLI printed nothing")
      firstBytes.push(firstByte)
      return exit
    })
  const bare = () => timeSpawn(["-e", ""], root).then(({ exit }) => exit)
  // An empty compile cache each time: what a first run pays.
  const empty = () =>
    timeSpawn([bin, "run", "--provider", "fake", "hi"], scratch("cli")).then(({ exit }) => exit)
  const emptyCache = async () => {
    const warm = env.EFFECT_AGENT_CODE_CACHE_DIR
    env.EFFECT_AGENT_CODE_CACHE_DIR = scratch("code-cache-empty")
    try {
      return await empty()
    } finally {
      env.EFFECT_AGENT_CODE_CACHE_DIR = warm
    }
  }
  const [o, b, e] = await interleave(config.cliReps, [cli, bare, emptyCache])
  return [
    ratioRow(8, "CLI start, compile cache warm: `run --provider fake hi` to its exit vs `node -e ''` to its exit", ratios(o!, b!), { text: "≤ 4×", met: (m) => m <= 4 }, `CLI ${format(median(o!), " ms")} (first byte of the answer at ${format(median(firstBytes.slice(-config.cliReps)), " ms")}), node -e '' ${format(median(b!), " ms")}; compile cache empty (a first run) ${format(median(e!), " ms")}, ${format(median(ratios(e!, b!)), "×")}`)
  ]
}
