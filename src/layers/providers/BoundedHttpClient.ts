/**
 * An `@effect/platform` `HttpClient` whose responses are bounded as {@link BoundedFetch} bounds the
 * vendor SDKs' (the same limits, the same failure), for the `@effect/ai` bridge: its providers read
 * an error's body whole (`AiError.HttpResponseError.fromResponseError` reads `json`/`text`) and one
 * event of a stream whole (`Sse.makeChannel`), so an endpoint that sent an endless 500 body, or one
 * event without end, was held in memory until the string past V8's longest failed.
 *
 * The bridge does not own this client: the `LanguageModel`'s client takes it when it is built, so
 * the embedder puts this between the client and its `HttpClient` (`EffectAiModelProvider.layerBoundedBodies`).
 *
 * @since 0.14.0
 * @internal
 */
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientError from "@effect/platform/HttpClientError"
import * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import * as Effect from "effect/Effect"
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

/** `client` with every response {@link boundedResponse bounded}. */
export const make = (client: HttpClient.HttpClient): HttpClient.HttpClient =>
  HttpClient.transformResponse(client, Effect.map(boundedResponse))
