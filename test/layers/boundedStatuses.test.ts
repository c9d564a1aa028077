/**
 * review57b: a server may answer a status past 599 (a proxy's own codes; HTTP allows 100–999), and
 * `fetch` hands it on, but a web `Response` is made with 200–599 only: the bound between the socket
 * and each SDK (`BoundedFetch`), and the @effect/ai bridge's (`BoundedHttpClient`), threw a
 * `RangeError` making their bounded copy — in the bridge a defect instead of the typed failure the
 * response was without the bound. Both now pass such a response on with its status, its body cut as
 * any other error's.
 */
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as HttpClient from "@effect/platform/HttpClient"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll } from "vitest"
import * as BoundedFetch from "../../src/layers/providers/BoundedFetch.js"
import * as BoundedHttpClient from "../../src/layers/providers/BoundedHttpClient.js"

let server: Server
let base = ""
beforeAll(async () => {
  // `/<status>`: that status, and a body of 100 KiB past the error bound's 64 KiB.
  server = createServer((request, response) => {
    response.writeHead(Number(request.url!.slice(1)), { "content-type": "text/plain" })
    response.end("x".repeat(100 * 1024))
  })
  await new Promise<void>((listening) => server.listen(0, "127.0.0.1", listening))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(() => new Promise<void>((closed) => server.close(() => closed())))

describe("statuses a web Response cannot be made with", () => {
  it.effect("the SDKs' bounded fetch hands a 600 and a 999 on with their status, the body cut", () =>
    Effect.gen(function*() {
      for (const status of [600, 999, 500]) {
        const response = yield* Effect.promise(() => BoundedFetch.make()(`${base}/${status}`))
        expect(response.status).toBe(status)
        expect(response.ok).toBe(false)
        expect((yield* Effect.promise(() => response.text())).length).toBe(BoundedFetch.errorBodyBytes)
      }
    }))

  it.effect("the bridge's bounded client hands them on as responses, not defects", () =>
    Effect.gen(function*() {
      const client = BoundedHttpClient.make(yield* HttpClient.HttpClient)
      for (const status of [600, 999, 500]) {
        const response = yield* client.get(`${base}/${status}`)
        expect(response.status).toBe(status)
        expect((yield* response.text).length).toBe(BoundedFetch.errorBodyBytes)
      }
    }).pipe(Effect.provide(FetchHttpClient.layer)))
})
