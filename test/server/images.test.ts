/**
 * Images in `POST /sessions/:id/turns` (`images: [{ mediaType?, data }]`, base64), against a real
 * server on a JSONL store: stored in the data dir's blob area and named by `user.message`; a bad image
 * answered 400 (or 413 when over the size cap) with its reason, and nothing stored.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs"
import { join, resolve } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { expectWireError, liveUntil, raw, startIn, storedEvents } from "./harness.js"

const fixtures = resolve(import.meta.dirname, "../../fixtures/images")
const png = readFileSync(join(fixtures, "photo.png"))
const gif = readFileSync(join(fixtures, "pixel.gif"))
const svg = readFileSync(join(fixtures, "evil.svg"))
const json = (body: unknown) => ({ method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json" } })

describe("POST /sessions/:id/turns with images", () => {
  it.scopedLive("stores each image once in the blob area and names it in user.message; the model reads it", () =>
    Effect.gen(function*() {
      const { dataDir, server } = yield* startIn({ images: true })
      const session = yield* server.client.sessions.create({ payload: {} })
      const answer = yield* raw(`${server.url}/sessions/${session.sessionId}/turns`, {
        ...json({ message: "what is this?", images: [{ mediaType: "image/png", data: png.toString("base64") }, { data: gif.toString("base64") }] }),
        token: server.token
      })
      expect(answer.status).toBe(202)
      yield* Effect.promise(() => liveUntil(`${server.url}/sessions/${session.sessionId}/live`, { token: server.token }, (e) => e.type === "turn.completed"))
      const events = yield* storedEvents(server, session.sessionId)
      const message = events.find((e) => e.type === "user.message")!.payload as { images: ReadonlyArray<{ blob: string; mediaType: string; bytes: number }> }
      expect(message.images.map((i) => [i.mediaType, i.bytes])).toEqual([["image/png", png.byteLength], ["image/gif", gif.byteLength]])
      for (const image of message.images) expect(readFileSync(join(dataDir, "blobs", image.blob.slice(0, 2), image.blob)).byteLength).toBe(image.bytes)
      // The typed client takes the same body.
      yield* server.client.sessions.startTurn({ path: { id: session.sessionId }, payload: { message: "", images: [{ data: gif.toString("base64") }] } })
    }))

  it.scopedLive("GET /sessions/:id/blobs/:hash serves only the images the session's log names, as raster images that cannot run", () =>
    Effect.gen(function*() {
      const { dataDir, server } = yield* startIn({ images: true })
      const session = yield* server.client.sessions.create({ payload: {} })
      const other = yield* server.client.sessions.create({ payload: {} })
      for (const [id, image] of [[session.sessionId, png], [other.sessionId, gif]] as const) {
        yield* raw(`${server.url}/sessions/${id}/turns`, { ...json({ message: "look", images: [{ data: image.toString("base64") }] }), token: server.token })
        yield* Effect.promise(() => liveUntil(`${server.url}/sessions/${id}/live`, { token: server.token }, (e) => e.type === "turn.completed"))
      }
      const blobOf = (events: ReadonlyArray<{ type: string; payload: unknown }>) =>
        (events.find((e) => e.type === "user.message")!.payload as { images: ReadonlyArray<{ blob: string }> }).images[0]!.blob
      const mine = blobOf(yield* storedEvents(server, session.sessionId))
      const theirs = blobOf(yield* storedEvents(server, other.sessionId))

      const response = yield* Effect.promise(() => fetch(`${server.url}/sessions/${session.sessionId}/blobs/${mine}`, { headers: { authorization: `Bearer ${server.token}` } }))
      expect(response.status).toBe(200)
      expect(response.headers.get("content-type")).toBe("image/png")
      expect(response.headers.get("x-content-type-options")).toBe("nosniff")
      expect(response.headers.get("content-security-policy")).toBe("default-src 'none'; sandbox")
      expect(response.headers.get("cross-origin-resource-policy")).toBe("same-origin")
      expect(Buffer.from(yield* Effect.promise(() => response.arrayBuffer())).equals(png)).toBe(true)

      const status = (path: string, token?: string) => Effect.map(raw(`${server.url}${path}`, token === undefined ? {} : { token }), (a) => a.status)
      expect(yield* status(`/sessions/${session.sessionId}/blobs/${mine}`)).toBe(401)
      // Another session's image is stored, but this session's log does not name it.
      expect(yield* status(`/sessions/${session.sessionId}/blobs/${theirs}`, server.token)).toBe(404)
      expect(yield* status(`/sessions/${other.sessionId}/blobs/${theirs}`, server.token)).toBe(200)
      expect(yield* status(`/sessions/${session.sessionId}/blobs/${"0".repeat(64)}`, server.token)).toBe(404)
      expect(yield* status(`/sessions/${session.sessionId}/blobs/..%2F..%2Fsessions`, server.token)).toBe(404)
      expect(yield* status(`/sessions/nope/blobs/${mine}`, server.token)).toBe(404)
      // Bytes swapped on disk for an SVG (a document that can run script) are never served.
      writeFileSync(join(dataDir, "blobs", mine.slice(0, 2), mine), svg)
      expect(yield* status(`/sessions/${session.sessionId}/blobs/${mine}`, server.token)).toBe(500)
    }))

  it.scopedLive("refuses a bad image with its reason — 400, or 413 over the size cap — and stores nothing", () =>
    Effect.gen(function*() {
      const { dataDir, server } = yield* startIn({ images: true, maxTurnBodyBytes: 8 * 1024 * 1024 })
      const session = yield* server.client.sessions.create({ payload: {} })
      const turn = (body: unknown) => raw(`${server.url}/sessions/${session.sessionId}/turns`, { ...json(body), token: server.token })
      const cases: ReadonlyArray<[unknown, number, string, RegExp]> = [
        [{ message: "x", images: [{ data: svg.toString("base64") }] }, 400, "BadRequest", /\[unsupported_type\]/],
        [{ message: "x", images: [{ data: svg.toString("base64"), mediaType: "image/png" }] }, 400, "BadRequest", /\[unsupported_type\]/],
        [{ message: "x", images: [{ data: png.toString("base64"), mediaType: "image/svg+xml" }] }, 400, "BadRequest", /\[media_type_mismatch\]/],
        [{ message: "x", images: [{ data: "not base64!" }] }, 400, "BadRequest", /must be base64/],
        [{ message: "x", images: [{ data: png.toString("base64").slice(0, -1) }] }, 400, "BadRequest", /must be base64/],
        [{ message: "x", images: Array.from({ length: 21 }, () => ({ data: gif.toString("base64") })) }, 400, "BadRequest", /\[too_many\]/],
        [{ message: "x", images: [{ data: Buffer.concat([png.subarray(0, 8), Buffer.alloc(5 * 1024 * 1024)]).toString("base64") }] }, 413, "PayloadTooLarge", /\[too_large\]: 5242888 bytes is over/],
        // Just under the cap: checked by its bytes, not refused for its size (a megabytes-long data field once overflowed the stack: 500).
        [{ message: "x", images: [{ data: Buffer.concat([png.subarray(0, 8), Buffer.alloc(5 * 1024 * 1024 - 8)]).toString("base64"), mediaType: "image/gif" }] }, 400, "BadRequest", /\[media_type_mismatch\]/],
        [{ message: "x", images: [{ data: "A".repeat(9 * 1024 * 1024) }] }, 413, "PayloadTooLarge", /limited to 8388608 bytes/],
        [{ message: "x", images: [{ data: 1 }] }, 400, "BadRequest", /./]
      ]
      for (const [body, status, error, reason] of cases) {
        const answer = yield* turn(body)
        expect(answer.status).toBe(status)
        expectWireError(answer.body, error)
        expect((answer.body as { message: string }).message).toMatch(reason)
      }
      expect((yield* storedEvents(server, session.sessionId)).map((e) => e.type)).toEqual(["session.created"])
      expect(existsSync(join(dataDir, "blobs"))).toBe(false)
      // Other routes keep the general limit.
      const steer = yield* raw(`${server.url}/sessions/${session.sessionId}/steer`, { ...json({ message: "y".repeat(2 * 1024 * 1024) }), token: server.token })
      expect(steer.status).toBe(413)
    }))
})
