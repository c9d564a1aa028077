/**
 * Running `bench/child.ts` in a fresh node process and reading its one-line JSON answer.
 *
 * The child runs as JavaScript, as users run the library (`dist`, or their own bundle), not through
 * tsx: its loader compiles each TypeScript module in the process and keeps what it made, which put
 * 80–90 MB under every memory row's start (row 21: RSS at start 184–194 MB under tsx, 104 MB so).
 * `child.ts` is bundled once per bench process with esbuild (the project's own sources in it, the
 * packages left to `node_modules`, both sides' alike), into `.cache/` beside `node_modules`.
 */
import { execFile } from "node:child_process"
import { join } from "node:path"
import * as esbuild from "esbuild"

export interface ChildResult {
  readonly rssStart: number
  readonly maxRss: number
  readonly ms: number
  readonly events: number
}

const root = join(import.meta.dirname, "..")

let built: Promise<string> | undefined

/** `bench/child.ts` as one ES module (made at the first call of this process). */
const compiled = (): Promise<string> =>
  built ??= esbuild.build({
    entryPoints: [join(root, "bench", "child.ts")],
    outfile: join(root, ".cache", "bench", "child.mjs"),
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    packages: "external",
    logLevel: "warning"
  }).then(() => join(root, ".cache", "bench", "child.mjs"))

export const child = async (...args: ReadonlyArray<string>): Promise<ChildResult> => {
  const file = await compiled()
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ["--expose-gc", file, ...args], {
      cwd: root,
      maxBuffer: 16 * 1024 * 1024
    }, (error, stdout, stderr) => {
      if (error) return reject(new Error(`bench child ${args.join(" ")} failed: ${stderr || error.message}`))
      const last = stdout.trim().split("\n").at(-1) ?? ""
      try {
        resolve(JSON.parse(last) as ChildResult)
      } catch {
        reject(new Error(`bench child ${args.join(" ")} printed no result: ${stdout}`))
      }
    })
  })
}
