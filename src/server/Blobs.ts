/**
 * `GET /sessions/:id/blobs/:hash`: an image a session's log names (a message's, a tool result's),
 * for the viewer's timeline and any client with the token (the bearer header, or the viewer's
 * cookie with its page's key: the page fetches it, as an `<img src>` cannot send the key). Only a
 * blob the session's log names is served — never another session's, never a blob by its hash alone
 * — and only as one of the four raster types the log recorded from the bytes' magic numbers. An
 * image is untrusted input: it goes out with `nosniff`, a CSP that lets nothing run (`default-src
 * 'none'; sandbox`, should it be opened as a document) and `Cross-Origin-Resource-Policy:
 * same-origin`, so no other site embeds it.
 *
 * @since 0.6.0
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import { SessionEngine } from "../index.js"
import * as Access from "./Access.js"
import { noSession } from "./Api.js"
import { ServerConfig } from "./Config.js"

const json = (status: number, error: string, message: string) => HttpServerResponse.unsafeJson({ error, message }, { status })

/** The headers of every image served. */
export const imageHeaders = {
  "x-content-type-options": "nosniff",
  "content-security-policy": "default-src 'none'; sandbox",
  "cross-origin-resource-policy": "same-origin",
  "cache-control": "private, no-store"
}

/** The route on the API's router. */
export const layer = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function*() {
    const config = yield* ServerConfig
    const engine = yield* SessionEngine.SessionEngine
    yield* router.get(
      "/sessions/:id/blobs/:hash",
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        if (Access.refusal(config.token, request.method, Access.headersOf(request)) !== undefined) {
          return json(401, "Unauthorized", "A valid token is required (Authorization: Bearer <token>)")
        }
        const { hash, id } = yield* HttpRouter.params
        return yield* engine.sessionImage({ sessionId: id ?? "", blob: hash ?? "" }).pipe(
          Effect.map(({ bytes, mediaType }) =>
            HttpServerResponse.uint8Array(bytes, { contentType: mediaType }).pipe(HttpServerResponse.setHeaders(imageHeaders))
          ),
          Effect.catchTags({
            SessionNotFound: () => Effect.succeed(json(404, "SessionNotFound", noSession(id ?? ""))),
            BlobNotFound: () => Effect.succeed(json(404, "NotFound", "This session names no such image")),
            EventStoreFailure: (failure) =>
              Effect.logError("reading an image failed", failure).pipe(
                Effect.as(json(500, "EventStoreFailure", `The event store failed (${failure.reason})`))
              )
          })
        )
      })
    )
  })
)
