/**
 * The web session viewer's routes (CONTRACT.md §7.3): the page, its script module, the one-time
 * login URL that sets the token cookie, and `/openapi.json`. Each needs the token (the cookie, or
 * a bearer header) but `/login`, which needs a one-time code instead.
 *
 * The page and its script (`index.html`, and `page.bundle.js`: `viewer/page.js` bundled with the
 * domain's fold of the log by `npm run build`) are read once when the layer is built from the package's
 * `dist/server/viewer/` — nothing is built while the server runs. They are found next to this module
 * (running from `dist/`), from the CLI's bundle, or in `dist/` when running from `src/`.
 *
 * @since 0.2.0
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Effect from "effect/Effect"
import { existsSync, readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { Api, cookieName } from "./Api.js"
import { ServerConfig } from "./Config.js"
import * as Security from "./Security.js"

// Next to this module (dist/server/), from the CLI's bundle (dist/cli/ or a chunk one level deeper),
// or the built files when running from src/server/.
const candidates = ["./viewer/", "../server/viewer/", "../../server/viewer/", "../../dist/server/viewer/"]

/** The viewer's files, read once. */
const readViewer = () => {
  for (const candidate of candidates) {
    const dir = fileURLToPath(new URL(candidate, import.meta.url))
    if (existsSync(`${dir}index.html`) && existsSync(`${dir}page.bundle.js`)) {
      return { html: readFileSync(`${dir}index.html`, "utf8"), script: readFileSync(`${dir}page.bundle.js`, "utf8") }
    }
  }
  return undefined
}

/** What a page may do: its own origin only, no inline script, no framing. */
const pageHeaders = {
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
  "cache-control": "no-store"
}

const unauthorizedPage = HttpServerResponse.html(
  `<!doctype html><meta charset="utf-8"><title>effect-agent</title><p>Open the one-time URL that <code>effect-agent serve</code> printed when it started.</p>`
).pipe(HttpServerResponse.setStatus(401), HttpServerResponse.setHeaders(pageHeaders))

/** The viewer's routes on the API's router. */
export const layer = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function*() {
    const config = yield* ServerConfig
    const files = readViewer()
    if (files === undefined) yield* Effect.logWarning("the viewer's files were not found (run `npm run build`); / answers 404")
    const authorized = Effect.map(HttpServerRequest.HttpServerRequest, (request) => {
      const bearer = (request.headers["authorization"] ?? "").replace(/^Bearer /, "")
      return Security.matches(config.token, bearer) || Security.matches(config.token, Security.cookieValue(request.headers["cookie"], cookieName))
    })
    const guarded = (response: HttpServerResponse.HttpServerResponse) =>
      Effect.map(authorized, (ok) => (ok ? response : unauthorizedPage))
    const notFound = HttpServerResponse.unsafeJson({ error: "NotFound", message: "No such route" }, { status: 404 })

    yield* router.get("/", guarded(files === undefined ? notFound : HttpServerResponse.html(files.html).pipe(HttpServerResponse.setHeaders(pageHeaders))))
    yield* router.get(
      "/viewer.js",
      guarded(
        files === undefined ? notFound : HttpServerResponse.text(files.script, { contentType: "text/javascript; charset=utf-8" }).pipe(
          HttpServerResponse.setHeaders({ "cache-control": "no-store" })
        )
      )
    )
    // The one-time URL printed at start: sets the token as an HttpOnly, SameSite=Strict cookie and
    // sends the browser to the viewer, so the token never sits in the address bar or the history.
    yield* router.get(
      "/login",
      Effect.map(HttpServerRequest.HttpServerRequest, (request) => {
        const code = new URL(request.url, "http://localhost").searchParams.get("code") ?? ""
        if (!config.loginCodes.consume(code)) return unauthorizedPage
        return HttpServerResponse.empty({ status: 303 }).pipe(
          HttpServerResponse.setHeaders({ location: "/", "set-cookie": Security.cookieHeader(cookieName, config.token), "cache-control": "no-store" })
        )
      })
    )
    const spec = OpenApi.fromApi(Api)
    yield* router.get(
      "/openapi.json",
      Effect.map(authorized, (ok) =>
        ok ? HttpServerResponse.unsafeJson(spec) : HttpServerResponse.unsafeJson({ error: "Unauthorized", message: "A valid token is required" }, { status: 401 }))
    )
  })
)
