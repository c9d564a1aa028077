/**
 * An `@effect/platform` `HttpClient` whose responses are bounded as {@link BoundedFetch} bounds the
 * vendor SDKs' (the same limits, the same failure), for the `@effect/ai` bridge: its providers read
 * an error's body whole (`AiError.HttpResponseError.fromResponseError` reads `json`/`text`) and one
 * event of a stream whole (`Sse.makeChannel`), so an endpoint that sent an endless 500 body, or one
 * event without end, was held in memory until the string past V8's longest failed.
 *
 * It also follows a redirect only within the request's origin, as `BoundedFetch` does for the SDKs:
 * `fetch` (under `FetchHttpClient`) followed a 307/308 from the base URL to any host with the whole
 * prompt as its body.
 *
 * The bridge does not own this client: the `LanguageModel`'s client takes it when it is built, so
 * the embedder puts this between the client and its `HttpClient` (`EffectAiModelProvider.layerBoundedBodies`).
 *
 * @since 0.14.0
 * @internal
 */
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as HttpBody from "@effect/platform/HttpBody"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientError from "@effect/platform/HttpClientError"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { ProviderFailure } from "../../domain/Errors.js"
import * as BoundedFetch from "./BoundedFetch.js"

/** The statuses a web `Response` refuses a body for: such a response is passed on as it came. */
const bodilessStatuses = new Set([101, 103, 204, 205, 304])

/**
 * The description of a read failed by an event past the bound: `@effect/ai` keeps a `ResponseError`'s
 * description and reason but not its cause, so this is how the bridge knows the failure was ours.
 */
export const oversizedEventDescription = BoundedFetch.oversizedEvent().detail

/** A body's read error that was the bound: named (its description) so that it survives `@effect/ai`. */
const named = (error: HttpClientError.ResponseError): HttpClientError.ResponseError =>
  error.reason === "Decode" && error.cause instanceof ProviderFailure
    ? new HttpClientError.ResponseError({ request: error.request, response: error.response, reason: "Decode", cause: error.cause, description: error.cause.detail })
    : error

/** `response` with its body bounded: a success's by event, any other's cut ({@link BoundedFetch.bounded}). */
export const boundedResponse = (response: HttpClientResponse.HttpClientResponse): HttpClientResponse.HttpClientResponse => {
  if (bodilessStatuses.has(response.status)) return response
  const web = BoundedFetch.bounded(
    BoundedFetch.withStatus(Stream.toReadableStream(response.stream), response.status, { headers: response.headers }),
    { eventBytes: BoundedFetch.maxEventBytes, errorBytes: BoundedFetch.errorBodyBytes }
  )
  const bounded = HttpClientResponse.fromWeb(response.request, web)
  // Everything as `fromWeb` reads it but the stream's failure, which gets its name (see `named`).
  return Object.create(bounded, { stream: { get: () => Stream.mapError(bounded.stream, named) } }) as HttpClientResponse.HttpClientResponse
}

/**
 * `effect` with `fetch` told not to follow redirects (`FetchHttpClient`'s `RequestInit`, the
 * embedder's own options kept): another `HttpClient` (Node's `http`) follows none of itself.
 */
const unfollowed = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.flatMap(Effect.serviceOption(FetchHttpClient.RequestInit), (init) =>
    Effect.provideService(effect, FetchHttpClient.RequestInit, { ...Option.getOrElse(init, () => ({})), redirect: "manual" }))

/**
 * The request a redirect of `response` asks for, as `fetch` would make it (`BoundedFetch.redirectsAsGet`:
 * a `GET` without the body; a 307/308 as it was); `undefined` when it is no redirect. One
 * to another origin (scheme, host and port) fails, naming where it pointed: nothing is sent there.
 */
const redirected = (
  request: HttpClientRequest.HttpClientRequest,
  response: HttpClientResponse.HttpClientResponse
): Effect.Effect<HttpClientRequest.HttpClientRequest | undefined, HttpClientError.RequestError> => {
  const location = response.headers["location"]
  const from = Option.getOrUndefined(HttpClientRequest.toUrl(request))
  if (!BoundedFetch.redirects.has(response.status) || location === undefined || from === undefined) return Effect.succeed(undefined)
  let to: URL
  try {
    to = new URL(location, from)
  } catch {
    return Effect.succeed(undefined)
  }
  if (to.origin !== from.origin) {
    const refused = BoundedFetch.crossOriginRedirect(from, to)
    return Effect.fail(new HttpClientError.RequestError({ request, reason: "InvalidUrl", cause: refused, description: refused.detail }))
  }
  const moved = HttpClientRequest.setUrl(request, to)
  return Effect.succeed(BoundedFetch.redirectsAsGet(response.status, request.method) ? HttpClientRequest.setBody(HttpClientRequest.setMethod(moved, "GET"), HttpBody.empty) : moved)
}

/**
 * A redirect's body let go: at most its first chunk read, for a second at most, then the read
 * cancelled (the body of a hostile endpoint's redirect may never end).
 */
const discarded = (response: HttpClientResponse.HttpClientResponse): Effect.Effect<void> =>
  Effect.ignore(Effect.timeout(Stream.runDrain(Stream.take(response.stream, 1)), "1 second"))

/** `client` following a redirect only within the request's origin, at most `BoundedFetch.maxRedirects` of them. */
const sameOriginRedirects = (client: HttpClient.HttpClient): HttpClient.HttpClient => {
  const follow = (
    request: HttpClientRequest.HttpClientRequest,
    response: HttpClientResponse.HttpClientResponse,
    hop: number
  ): Effect.Effect<HttpClientResponse.HttpClientResponse, HttpClientError.HttpClientError> =>
    hop >= BoundedFetch.maxRedirects ? Effect.succeed(response) : Effect.flatMap(redirected(request, response), (next) =>
      next === undefined
        ? Effect.succeed(response)
        : Effect.zipRight(
          discarded(response),
          Effect.flatMap(unfollowed(client.execute(next)), (answer) => follow(next, answer, hop + 1))
        ))
  return HttpClient.transform(client, (effect, request) => Effect.flatMap(unfollowed(effect), (response) => follow(request, response, 0)))
}

/** `client` with every response {@link boundedResponse bounded}, and redirects followed only within the request's origin. */
export const make = (client: HttpClient.HttpClient): HttpClient.HttpClient =>
  HttpClient.transformResponse(sameOriginRedirects(client), Effect.map(boundedResponse))
