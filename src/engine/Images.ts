/**
 * Images in the engine: a user message's images checked (format by magic bytes, size, count) and
 * put in the store's blob area before anything of the message is stored, and, for each model
 * request, the bytes of the images its messages reference read back from the blob area — or, for a
 * model that takes no images or a blob that cannot be read, a note in their place.
 *
 * @since 0.6.0
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import type { AgentEvent } from "../domain/AgentEvent.js"
import { type BlobFailure, BlobNotFound } from "../domain/Blob.js"
import { EventStoreFailure } from "../domain/Errors.js"
import * as Image from "../domain/Image.js"
import type { Message } from "../domain/Transcript.js"
import { asStoreFailure, type BlobStore, putImages } from "../services/BlobStore.js"
import type { Capabilities, ModelRequest } from "../services/ModelProvider.js"

/** Checks a message's images and puts them in the blob area (see `BlobStore.putImages`). */
export const store = putImages

/** An image of a session: its bytes and media type (see `SessionEngine.sessionImage`). */
export interface SessionImage {
  readonly bytes: Uint8Array
  readonly mediaType: Image.MediaType
}

/**
 * Why bytes read from the blob area are not the image a log names, or undefined when they are:
 * checked as the live path checks an image before it stores it (its type by magic bytes, the 5 MiB
 * and 8000-pixel caps, a whole header; a PNG's pixels are not inflated again). A log written by
 * another process, or shipped in a repository's `.effect-agent/`, can name any blob as any type
 * (test/engine/storedImages.test.ts).
 */
const storedFault = (blob: string, bytes: Uint8Array, mediaType: Image.MediaType): string | undefined => {
  const key = `${blob}\u0000${mediaType}`
  if (judged.has(key)) return judged.get(key)
  const checked = Image.check({ data: bytes, mediaType })
  const fault = typeof checked === "string" ? undefined : `not the ${mediaType} image the log names (${checked.detail})`
  judged.set(key, fault)
  if (judged.size > judgedCapacity) judged.delete(judged.keys().next().value!)
  return fault
}

/**
 * What {@link storedFault} found, by blob and media type: every request sends the transcript's
 * images again, and a blob's bytes are its hash's (the blob area checks them on each read), so each
 * is judged once, not once a request (its structure walk, CRCs included, is linear in its bytes).
 */
const judged = new Map<string, string | undefined>()
const judgedCapacity = 4096

/** The images an event names. */
const imagesOf = (event: AgentEvent): ReadonlyArray<Image.ImageRef> =>
  (event.type === "user.message" || event.type === "tool.completed") ? event.payload.images ?? [] : []

/** The images one session's log names, as far as it has been read. */
interface Named {
  readonly types: Map<string, Image.MediaType>
  /** The last sequence read: a log only grows, so what it named stays named, and the rest is read from here. */
  through: number
}

/**
 * The images the logs of recently asked sessions name, by blob: a viewer or an editor loading a
 * session asks for each of its images in turn, and reading the log once per image made that
 * O(events × images). Now the first ask reads the log (from where the last read ended) and keeps
 * every image it names; the next asks of that session read nothing. At most `capacity` sessions
 * are kept, the least recently asked let go.
 */
export class NamedImages {
  private readonly sessions = new Map<string, Named>()
  constructor(private readonly capacity: number = 64) {}

  /** The media type of `blob` as `sessionId`'s log names it, reading the part of the log not read yet only when needed. */
  lookup<E>(sessionId: string, blob: string, readFrom: (fromSequence: number) => Stream.Stream<AgentEvent, E>): Effect.Effect<Image.MediaType | undefined, E> {
    return Effect.suspend(() => {
      const named = this.sessions.get(sessionId) ?? { types: new Map<string, Image.MediaType>(), through: 0 }
      // Most recently asked last: the first is the one to let go.
      this.sessions.delete(sessionId)
      this.sessions.set(sessionId, named)
      if (this.sessions.size > this.capacity) this.sessions.delete(this.sessions.keys().next().value!)
      const known = named.types.get(blob)
      if (known !== undefined) return Effect.succeed(known)
      return readFrom(named.through + 1).pipe(
        Stream.runForEach((event) =>
          Effect.sync(() => {
            for (const image of imagesOf(event)) named.types.set(image.blob, image.mediaType)
            named.through = Math.max(named.through, event.sequence)
          })
        ),
        Effect.map(() => named.types.get(blob))
      )
    })
  }
}

/**
 * An image a session's log names, read from the blob area: `BlobNotFound` for a blob the log does
 * not name (whether or not it is stored: a session never reads another's images) or that is not
 * stored; bytes that no longer are the image the log names (corrupt, or not that type) are a store
 * failure, never returned. `readFrom` reads the session's log from a sequence, failing for an
 * unknown session; `named` keeps what it named between asks.
 */
export const ofSession = <E>(
  blobs: BlobStore.Service | undefined,
  named: NamedImages,
  sessionId: string,
  readFrom: (fromSequence: number) => Stream.Stream<AgentEvent, E>,
  blob: string
): Effect.Effect<SessionImage, E | BlobNotFound | EventStoreFailure> =>
  Effect.gen(function*() {
    const mediaType = yield* named.lookup(sessionId, blob, readFrom)
    if (mediaType === undefined || blobs === undefined) return yield* new BlobNotFound({ hash: blob.slice(0, 80) })
    const bytes = yield* blobs.get(blob).pipe(
      Effect.catchTag("BlobFailure", (failure) => Effect.fail(asStoreFailure(failure)))
    )
    if (storedFault(blob, bytes, mediaType) !== undefined) {
      return yield* new EventStoreFailure({ reason: "corrupt", operation: "read", detail: `blob ${blob} is not the ${mediaType} image the log names` })
    }
    return { bytes, mediaType } satisfies SessionImage
  })

/**
 * The blob area as one step reads it: each blob read at most once, its bytes (or why it cannot be
 * read) kept for the step — a step that compacts builds its request twice, and the second build
 * attaches the same images.
 */
export const readOnce = (blobs: BlobStore.Service | undefined): BlobStore.Service | undefined => {
  if (blobs === undefined) return undefined
  const read = new Map<string, Effect.Effect<Uint8Array, BlobNotFound | BlobFailure>>()
  return {
    ...blobs,
    get: (hash) =>
      Effect.suspend(() => {
        const known = read.get(hash)
        if (known !== undefined) return known
        return Effect.tap(Effect.either(blobs.get(hash)), (result) => Effect.sync(() => read.set(hash, result))).pipe(Effect.flatten)
      })
  }
}

const note = Image.note

/** Appends notes to a message's text. */
const withNotes = (content: string, notes: ReadonlyArray<string>) => notes.length === 0 ? content : [content, ...notes].filter((s) => s !== "").join("\n")

const unavailable = (error: BlobNotFound | BlobFailure) =>
  error._tag === "BlobNotFound" ? "not in the store's blob area" : `unreadable (${error.reason})`

/**
 * Whether a message the model is sent names images. Made once, not per call: after a full GC between
 * turns, the optimized code of a closure made per call goes with the closures (perf64steps).
 */
export const namesImages = (m: ModelRequest["messages"][number]): boolean => m.role !== "assistant" && m.images !== undefined

/**
 * The request with the bytes of the images its user messages and tool results reference (`images`), read from the
 * blob area once per request. An image the model cannot take (its provider says it takes none, or
 * there is no blob area), or whose blob cannot be read (missing, corrupt: never sent), is replaced
 * by a note in the message's text, so the request is still well-formed and the model knows.
 *
 * Within Anthropic's limits on images, which refuse the whole request: at most
 * `Image.maxImagesPerRequest` images and `Image.maxImageBytesPerRequest` of them (a request is at
 * most 32 MB, base64 included), and none over 2000 pixels a side in a request of more than 20. Every
 * image of the transcript is sent again with each request, so a session that read many or large
 * images (a repository of screenshots) had every later request refused. Now the newest images within
 * the count and the bytes are sent, and the older ones as a note; then, in a request of more than 20,
 * each over 2000 a side as a note too. The log and the blob keep every image.
 *
 * The newest are chosen before any is read, by the size the log stores of each (`ImageRef.bytes`),
 * and only those are read: every step read and hashed every image of the transcript (60 MiB a step
 * after 12 turns of 20 images) to send at most 100 of them. An image read is judged by its real size
 * (a log can say any); one that cannot be sent is a note and takes no room.
 */
export const attach = (
  blobs: BlobStore.Service | undefined,
  capabilities: Capabilities,
  request: ModelRequest
): Effect.Effect<ModelRequest> =>
  // Most requests name no image: answered as they are, with no generator (this runs every step).
  !request.messages.some(namesImages) ? Effect.succeed(request) : Effect.gen(function*() {
    const refs = request.messages.flatMap((m) => m.role === "assistant" ? [] : m.images ?? [])
    // Why a reference is not sent: it cannot be (`unsent`), or it is past the request's limits (`left`).
    const unsent = new Map<Image.ImageRef, string>()
    const left = new Map<Image.ImageRef, string>()
    const bytes = new Map<string, Uint8Array>()
    const within = new Set<Image.ImageRef>()
    if (capabilities.images !== true || blobs === undefined) {
      for (const image of refs) unsent.set(image, "this model does not take images")
    } else {
      const leftOut = `left out, a request carries at most ${Image.maxImagesPerRequest} images and ${Image.maxImageBytesPerRequest / (1024 * 1024)} MiB of them, the newest`
      let total = 0
      let full = false
      // Newest first: each read, until the count or the bytes are reached; the older ones are not read.
      for (let i = refs.length - 1; i >= 0; i--) {
        const image = refs[i]!
        if (within.has(image)) continue
        full ||= within.size >= Image.maxImagesPerRequest || total + image.bytes > Image.maxImageBytesPerRequest
        if (full) {
          left.set(image, leftOut)
          continue
        }
        if (!bytes.has(image.blob)) {
          const read = yield* Effect.either(blobs.get(image.blob))
          if (read._tag === "Left") {
            yield* Effect.logWarning("an image of the conversation cannot be read; the model gets a note instead").pipe(
              Effect.annotateLogs({ blob: image.blob, error: read.left.message })
            )
            unsent.set(image, unavailable(read.left))
            continue
          }
          bytes.set(image.blob, read.right)
        }
        // Each reference is checked (another may name the same blob as another type); one that fails is not sent.
        const read = bytes.get(image.blob)!
        const fault = storedFault(image.blob, read, image.mediaType)
        if (fault !== undefined) {
          yield* Effect.logWarning("an image the conversation names is not that image; the model gets a note instead").pipe(Effect.annotateLogs({ blob: image.blob }))
          unsent.set(image, fault)
          continue
        }
        // Its real size: a log can say any.
        if (total + read.byteLength > Image.maxImageBytesPerRequest) {
          full = true
          left.set(image, leftOut)
          continue
        }
        within.add(image)
        total += read.byteLength
      }
      // Anthropic's second rule: in a request of more than 20 images, none over 2000 pixels a side.
      if (within.size > Image.maxImagesAtFullSide) {
        for (const image of within) {
          const size = Image.dimensions(bytes.get(image.blob)!)
          if (size !== undefined && (size.width > Image.maxManyImagesSide || size.height > Image.maxManyImagesSide)) {
            left.set(image, `${size.width}×${size.height} pixels, over the ${Image.maxManyImagesSide} a side a request of more than ${Image.maxImagesAtFullSide} images may carry`)
          }
        }
      }
    }
    const sent = new Map<string, Uint8Array>()
    const messages = request.messages.map((message): Message => {
      if (message.role === "assistant" || message.images === undefined) return message
      // The notes of images that cannot be sent, then of those past the limits, each in the message's order.
      const notes = [
        ...message.images.flatMap((image) => unsent.has(image) ? [note(image, unsent.get(image)!)] : []),
        ...message.images.flatMap((image) => left.has(image) ? [note(image, left.get(image)!)] : [])
      ]
      const kept = message.images.filter((image) => !unsent.has(image) && !left.has(image))
      for (const image of kept) sent.set(image.blob, bytes.get(image.blob)!)
      if (notes.length === 0) return message
      const { images: _, ...rest } = message
      const changed = { ...rest, content: withNotes(message.content, notes) }
      return kept.length === 0 ? changed : { ...changed, images: kept }
    })
    return sent.size === 0 ? { ...request, messages } : { ...request, messages, images: sent }
  })
