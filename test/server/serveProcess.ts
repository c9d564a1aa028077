/**
 * `effect-agent serve` as a real subprocess (the built CLI) on a free port: started, then read off
 * its stderr once it listens — its URL and its token.
 */
import { type Running, start } from "../cli/subprocess.js"
import type { Steps } from "../steps.js"

/** A `serve` started with `args` (after `--port 0`) that listens now; with `steps`, its start is a step and its stderr shown if the test fails. */
export const startServe = async (
  args: ReadonlyArray<string>,
  options: { readonly cwd: string; readonly env?: Record<string, string> | undefined; readonly steps?: Steps }
): Promise<{ readonly server: Running; readonly url: string; readonly token: string; readonly stderr: () => string }> => {
  const server = start(["serve", "--port", "0", ...args], { cwd: options.cwd, ...(options.env === undefined ? {} : { env: options.env }) })
  let stderr = ""
  server.child.stderr!.on("data", (chunk: string) => (stderr += chunk))
  options.steps?.show("serve's stderr", () => stderr)
  const listening = server.waitForStderr(/viewer \(this URL works once, within 10 minutes\): \S+\n/)
  await (options.steps === undefined ? listening : options.steps.waiting("serve to listen", listening))
  const url = /listening on (http:\/\/\S+)/.exec(stderr)![1]!
  const token = /token: (\S+)/.exec(stderr)![1]!
  return { server, url, token, stderr: () => stderr }
}
