/**
 * The web session viewer's routes (CONTRACT.md §7.3): the page and its script module, the sign-in
 * routes that set the viewer's cookie, and `/openapi.json`. The page, its script and the OpenAPI
 * document need the token (the cookie, or a bearer header); the sign-in page does not. The page and
 * its script open with the cookie alone — a browser loading a page or a `<script>` sends no header
 * of the page's, and the page's key, which every other route asks of the cookie (`Access`), is in
 * the page's storage, read by that script — and hold nothing of any session: the same text for
 * every server of this version. The OpenAPI document, which the page does not need, asks the cookie
 * for the key as the session routes do.
 *
 * Two ways in, both ending in the viewer's cookie (see `Security` and `Access`) and a redirect to the
 * viewer: the one-time URL `serve` prints (`GET /login?code=…`, each code works once, within 10 minutes), and the sign-in
 * form (`GET /login`), for after the browser was closed: its script posts the token as JSON to
 * `POST /login`, which takes it only from this origin's own page (no other page can sign a browser
 * in) and is rate limited.
 *
 * The pages and scripts (`index.html`, `page.bundle.js` — `viewer/page.js` bundled with the domain's
 * fold of the log by `npm run build` — and the sign-in page) are read once when the layer is built,
 * from the package's `dist/server/viewer/`: nothing is built while the server runs. They are found
 * next to this module (running from `dist/`), from the CLI's bundle, or in `dist/` when running from `src/`.
 *
 * @since 0.2.0
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpIncomingMessage from "@effect/platform/HttpIncomingMessage"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import { existsSync, readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { MonotonicTime } from "../index.js"
import * as Access from "./Access.js"
import { Api } from "./Api.js"
import { ServerConfig } from "./Config.js"
import * as Security from "./Security.js"

// Next to this module (dist/server/), from the CLI's bundle (dist/cli/ or a chunk one level deeper),
// or the built files when running from src/server/.
const candidates = ["./viewer/", "../server/viewer/", "../../server/viewer/", "../../dist/server/viewer/"]

/** The viewer's files, read once. */
const readFiles = () => {
  for (const candidate of candidates) {
    const dir = fileURLToPath(new URL(candidate, import.meta.url))
    if (existsSync(`${dir}index.html`) && existsSync(`${dir}page.bundle.js`)) {
      const read = (name: string) => readFileSync(`${dir}${name}`, "utf8")
      return { html: read("index.html"), script: read("page.bundle.js"), login: read("login.html"), loginScript: read("login.js") }
    }
  }
  return undefined
}

/**
 * What a page may do: its own origin only, no inline script, no framing, no form sent anywhere (the
 * sign-in form is sent by its script). Images from its own origin, or from `blob:` URLs its script
 * made of the images it fetched with its key. `Referrer-Policy: same-origin` keeps the page's URL
 * from other sites while its own requests still carry their `Origin` (`no-referrer` would make it `null`).
 */
const pageHeaders = {
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; connect-src 'self'; img-src 'self' blob:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  "referrer-policy": "same-origin",
  // A page that opened the viewer (`window.open`) keeps no handle to its window, to send it elsewhere later.
  "cross-origin-opener-policy": "same-origin",
  "x-frame-options": "DENY",
  "x-content-type-options": "nosniff",
  "cache-control": "no-store"
}

const json = (status: number, error: string, message: string) => HttpServerResponse.unsafeJson({ error, message }, { status })
const notFound = json(404, "NotFound", "No such route")
const unauthorized = json(401, "Unauthorized", "A valid token is required")

const LoginBody = Schema.Struct({ token: Schema.String })

/** The limit of a `POST /login` body, `{"token": "…"}`: whoever connects may send one. */
export const maxLoginBodyBytes = 4096

/** The viewer's routes on the API's router. */
export const layer = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function*() {
    const config = yield* ServerConfig
    const files = readFiles()
    if (files === undefined) yield* Effect.logWarning("the viewer's files were not found (run `npm run build`); / answers 404")

    /** The sign-in page, with a note above the form (fixed text only: nothing from the request). */
    const loginPage = (status: number, note?: string) =>
      files === undefined
        ? notFound
        : HttpServerResponse.html(note === undefined ? files.login : files.login.replace("<!--note-->", `<p>${note}</p>`)).pipe(
          HttpServerResponse.setStatus(status),
          HttpServerResponse.setHeaders(pageHeaders)
        )
    const script = (text: string) =>
      HttpServerResponse.text(text, { contentType: "text/javascript; charset=utf-8" }).pipe(
        HttpServerResponse.setHeaders({ "cache-control": "no-store", "x-content-type-options": "nosniff" })
      )
    /** What the page needs to start needs a credential: the bearer token or the viewer's cookie (Access), without the page's key (see the module's note). */
    const withCredential = (ok: HttpServerResponse.HttpServerResponse, refused: HttpServerResponse.HttpServerResponse) =>
      Effect.map(HttpServerRequest.HttpServerRequest, (request) => Access.credential(config.token, Access.headersOf(request)) === undefined ? refused : ok)
    /** Anything else: the bearer token, or the viewer's cookie with the page's key, as the session routes. */
    const withKey = (ok: HttpServerResponse.HttpServerResponse) =>
      Effect.map(HttpServerRequest.HttpServerRequest, (request) => Access.refusal(config.token, request.method, Access.headersOf(request)) === undefined ? ok : unauthorized)
    /** Signs the browser in: the cookie for the port it reached the server at. */
    const signIn = (request: HttpServerRequest.HttpServerRequest, response: HttpServerResponse.HttpServerResponse) =>
      response.pipe(HttpServerResponse.setHeaders({
        "set-cookie": Security.cookieHeader(Access.cookieNameOf(Access.headersOf(request)), Access.cookieSecretOf(config.token, Access.headersOf(request))),
        "cache-control": "no-store"
      }))

    yield* router.get(
      "/",
      withCredential(files === undefined ? notFound : HttpServerResponse.html(files.html).pipe(HttpServerResponse.setHeaders(pageHeaders)), loginPage(401))
    )
    yield* router.get("/viewer.js", withCredential(files === undefined ? notFound : script(files.script), unauthorized))
    yield* router.get("/login.js", Effect.succeed(files === undefined ? notFound : script(files.loginScript)))

    // The one-time URL printed at start, or the sign-in form.
    yield* router.get(
      "/login",
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const code = new URL(request.url, "http://localhost").searchParams.get("code")
        if (code === null) return loginPage(200)
        const use = yield* config.loginCodes.consumeNow(code)
        if (use === "expired") return loginPage(401, "That one-time URL has expired: it works only for a while after the server printed it. Sign in with the token.")
        if (use === "unknown") return loginPage(401, "That one-time URL was used already: sign in with the token.")
        // The page's key in the fragment: the browser keeps it, and sends it to no server.
        const key = Redacted.value(Access.pageKeyOf(config.token, Access.headersOf(request)))
        return signIn(request, HttpServerResponse.empty({ status: 303 }).pipe(HttpServerResponse.setHeader("location", `/#key=${key}`)))
      })
    )
    // The sign-in form's script posts here: the viewer's own page only, the token as JSON, rate limited.
    yield* router.post(
      "/login",
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        if (!Access.fromOwnPage(Access.headersOf(request))) return json(403, "Forbidden", "Sign in from the viewer's own sign-in page")
        // The form's own limit, here rather than by the URL alone: the router sends `/LOGIN`,
        // `/login/`, `//login` and `/%6Cogin` here too, which the server's guard reads as other routes.
        if (!(Number(Access.headersOf(request)["content-length"] ?? "0") <= maxLoginBodyBytes)) {
          return json(413, "PayloadTooLarge", `Request bodies are limited to ${maxLoginBodyBytes} bytes`)
        }
        const body = yield* request.json.pipe(
          HttpIncomingMessage.withMaxBodySize(Option.some(maxLoginBodyBytes)),
          Effect.flatMap(Schema.decodeUnknown(LoginBody)),
          Effect.option
        )
        if (body._tag === "None") return json(400, "BadRequest", "Send {\"token\": \"…\"}")
        // The right token always signs in: the limit slows wrong ones only. Any local process can
        // post here (its Origin is only a header), and four wrong tokens locked the user's right one
        // out for up to 15 minutes. The token is the secret (`serve` refuses a weak one); the bearer
        // header answers a guess as plainly, unlimited, so the limit never hid whether one was right.
        if (!Security.matches(config.token, body.value.token)) {
          const now = yield* MonotonicTime.millis
          const attempt = config.loginThrottle.attempt(now)
          if (attempt._tag === "Wait") {
            const seconds = Math.ceil(attempt.retryAfterMillis / 1000)
            return json(429, "TooManyRequests", `Too many wrong tokens: try again in ${seconds} s`).pipe(
              HttpServerResponse.setHeader("retry-after", String(seconds))
            )
          }
          config.loginThrottle.failed(now)
          return json(401, "Unauthorized", "That is not the server's token")
        }
        config.loginThrottle.succeeded()
        // The page's key in a header of the answer, which only the sign-in page's script reads.
        return signIn(request, HttpServerResponse.empty({ status: 204 })).pipe(
          HttpServerResponse.setHeader(Security.pageKeyHeader, Redacted.value(Access.pageKeyOf(config.token, Access.headersOf(request))))
        )
      })
    )
    const spec = OpenApi.fromApi(Api)
    yield* router.get("/openapi.json", withKey(HttpServerResponse.unsafeJson(spec)))
  })
)
