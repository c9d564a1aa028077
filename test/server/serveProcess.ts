/**
 * `effect-agent serve` as a real subprocess (the built CLI) on a free port: started, then read off
 * its stderr once it listens — its URL and its token.
 */
import { type Running, start } from "../cli/subprocess.js"

/** A `serve` started with `args` (after `--port 0`) that listens now. */
export const startServe = async (
  args: ReadonlyArray<string>,
  options: { readonly cwd: string; readonly env?: Record<string, string> | undefined }
): Promise<{ readonly server: Running; readonly url: string; readonly token: string; readonly stderr: () => string }> => {
  const server = start(["serve", "--port", "0", ...args], { cwd: options.cwd, ...(options.env === undefined ? {} : { env: options.env }) })
  let stderr = ""
  server.child.stderr!.on("data", (chunk: string) => (stderr += chunk))
  await server.waitForStderr(/viewer \(this URL works once, within 10 minutes\): \S+\n/)
  const url = /listening on (http:\/\/\S+)/.exec(stderr)![1]!
  const token = /token: (\S+)/.exec(stderr)![1]!
  return { server, url, token, stderr: () => stderr }
}
