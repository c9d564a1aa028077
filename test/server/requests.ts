/**
 * Requests as a browser or a hostile client sends them: any `Host`, `Origin`, `Sec-Fetch-*`,
 * `Content-Type` and `Cookie` header, which `fetch` would fill in or refuse. Sent with `node:http`
 * to 127.0.0.1, whatever the `Host` header names (what DNS rebinding does).
 */
import { request } from "node:http"

/** An answer: status, headers (lower-case names) and the body, parsed when JSON. */
export interface Answer {
  readonly status: number
  readonly headers: Record<string, string | Array<string> | undefined>
  readonly body: unknown
  readonly text: string
}

/** Sends one request to `127.0.0.1:port`; `headers.host` defaults to `127.0.0.1:port` (`null`: none at all). */
export const send = (
  port: number,
  path: string,
  init: { readonly method?: string; readonly headers?: Record<string, string | null>; readonly body?: string } = {}
): Promise<Answer> =>
  new Promise((resolve, reject) => {
    const given = init.headers ?? {}
    const host = "host" in given ? given["host"] : `127.0.0.1:${port}`
    const headers: Record<string, string> = {}
    for (const [name, value] of Object.entries(given)) if (value !== null && name !== "host") headers[name] = value
    if (host !== null && host !== undefined) headers["host"] = host
    if (init.body !== undefined) headers["content-length"] = String(Buffer.byteLength(init.body))
    const req = request({ host: "127.0.0.1", port, path, method: init.method ?? "GET", headers, setHost: false }, (response) => {
      let text = ""
      response.setEncoding("utf8")
      response.on("data", (chunk: string) => (text += chunk))
      response.on("end", () => {
        let body: unknown = text
        try {
          body = JSON.parse(text)
        } catch {
          // not JSON
        }
        resolve({ status: response.statusCode ?? 0, headers: response.headers, body, text })
      })
    })
    req.on("error", reject)
    if (init.body !== undefined) req.write(init.body)
    req.end()
  })

/** The `name=value` of a `Set-Cookie` answer, without its attributes. */
export const cookiePair = (answer: Answer): string => {
  const header = answer.headers["set-cookie"]
  const first = Array.isArray(header) ? header[0] : header
  if (first === undefined) throw new Error(`no Set-Cookie (HTTP ${answer.status})`)
  return first.split(";")[0]!
}

/** The whole `Set-Cookie` answer. */
export const setCookie = (answer: Answer): string | undefined => {
  const header = answer.headers["set-cookie"]
  return Array.isArray(header) ? header[0] : header
}
