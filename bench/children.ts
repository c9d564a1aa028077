/** Running `bench/child.ts` in a fresh node process and reading its one-line JSON answer. */
import { execFile } from "node:child_process"
import { join } from "node:path"

export interface ChildResult {
  readonly rssStart: number
  readonly maxRss: number
  readonly ms: number
  readonly events: number
}

const root = join(import.meta.dirname, "..")

export const child = (...args: ReadonlyArray<string>): Promise<ChildResult> =>
  new Promise((resolve, reject) => {
    execFile(process.execPath, ["--expose-gc", "--import", "tsx", join(root, "bench", "child.ts"), ...args], {
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
