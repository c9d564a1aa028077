/**
 * Rows 17–18's setup, for the drivers that run it once (`bench/probe-split/run.mjs`,
 * `bench/row18-counts.mjs`): the built `serve` on a free port with a scripted turn, and a session of it.
 */
import { spawn } from "node:child_process"
import { request } from "node:http"
import { join } from "node:path"

/** `node [...execArgv] bin serve` in `dir` (its `script.json`, its `data`); resolves with the child and its URL once it listens. */
export const startServe = (execArgv, bin, dir, env) =>
  new Promise((resolve, reject) => {
    const server = spawn(process.execPath, [...execArgv, bin, "serve", "--port", "0", "--script", join(dir, "script.json"), "--data-dir", join(dir, "data"), "--no-instructions"], { cwd: dir, env, stdio: ["ignore", "pipe", "pipe"] })
    let output = ""
    const onData = (chunk) => {
      output += chunk
      const match = /listening on (http:\/\/[^\s]+)/.exec(output)
      if (match !== null) resolve({ server, url: match[1] })
    }
    server.stdout.on("data", onData)
    server.stderr.on("data", onData)
    server.once("exit", (code) => reject(new Error(`serve exited ${code}: ${output}`)))
  })

/** A new session of the server at `url`: `POST /sessions`'s answer. */
export const newSession = (url, token) =>
  new Promise((resolve, reject) => {
    const req = request(`${url}/sessions`, { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" } }, (res) => {
      let text = ""
      res.on("data", (chunk) => (text += chunk))
      res.on("end", () => resolve(JSON.parse(text)))
    })
    req.on("error", reject)
    req.end("{}")
  })
