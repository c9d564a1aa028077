/**
 * The transcript of a live session, kept up to date in place as its events are committed, and the
 * messages of its model requests with their JSON length, rendered once per entry. Folding an event
 * costs what the event changes — a delta appends its text, a user message one entry — never a copy
 * of the conversation: a session of 2,000 turns, or one hydrated from a 100 MB log, folds at the
 * speed of a fresh one. Which event changes what is the domain's (`Transcript.apply`); this class
 * only holds the result in place. What it gives out ({@link LiveTranscript.snapshot}) is a `Transcript`
 * equal to `Transcript.replay` of the same events (test/engine/liveTranscript.test.ts checks that).
 *
 * @since 0.2.0
 * @internal
 */
import type { AgentEvent } from "../domain/AgentEvent.js"
import type { ImageRef } from "../domain/Image.js"
import * as Transcript from "../domain/Transcript.js"
import * as ContextBuilder from "../services/ContextBuilder.js"

/** The messages of a transcript, as a request carries them, and the length of their JSON array. */
export type Rendered = ContextBuilder.Rendering

/** The tool calls of a response that asked for none: one array for all of them. */
const noCalls: ReadonlyArray<Transcript.TranscriptToolCall> = Object.freeze([])

/**
 * How many deltas of a streaming response are added before its text is flattened (see
 * `LiveTranscript.text`): 32, or a quarter of the deltas so far when that is more, so that a long
 * response copies its text a few times over in all rather than once every 32 deltas.
 */
const flattenAfter = (deltas: number): number => Math.max(32, deltas >> 2)

/** The domain's transcript changes, made in place on a live transcript. */
const inPlace = Transcript.inPlace<LiveTranscript>()

/** The JSON length of a list of messages whose own JSON lengths add up to `chars`: "[" + joined by "," + "]". */
const arrayLength = (chars: number, count: number) => 2 + chars + Math.max(0, count - 1)

/**
 * A live transcript. Changed only by `add`, which the session's commit calls once an event is
 * stored; read through `snapshot` and `rendered`, both kept until the next change.
 */
export class LiveTranscript {
  /** The entries whose response has ended. Entries themselves are never changed: a result replaces its entry. */
  private readonly entries: Array<Transcript.TranscriptEntry> = []
  /** The response still streaming: its turn, text so far and tool calls (undefined: none open). */
  private openTurnId: string | undefined = undefined
  /** The sequence of the event that began the open response (where a compaction may cut). */
  private openSequence = 0
  private openContent = ""
  /** Deltas added to `openContent`, and since it was last flattened. */
  private openDeltas = 0
  private openPieces = 0
  private openCalls: Array<Transcript.TranscriptToolCall> = []
  /**
   * Every tool call id the session's log has used, rewound or compacted ones too: a model's call
   * under one of them is given another (`ToolCallIds`), so no id is ever two calls.
   */
  private readonly callIds = new Set<string>()
  /** Per model id, the suffix a renamed call tries first (`ToolCallIds.storedId`): a hint, `callIds` decides. */
  readonly renamedCallIds = new Map<string, number>()
  /** The messages of `entries[0 .. renderedEntries)`, where each entry's begin, and their JSON lengths summed. */
  private readonly messages: Array<Transcript.Message> = []
  private readonly starts: Array<number> = []
  private readonly charsBefore: Array<number> = []
  private renderedEntries = 0
  private renderedChars = 0
  /** What rewinds took out (see `Transcript.Past`); undefined before the first rewind. */
  private past: Transcript.Past | undefined = undefined
  private cachedSnapshot: Transcript.Transcript | undefined = undefined
  private cachedRendering: Rendered | undefined = undefined
  /**
   * Where each call of an ended response is (its entry, its place among the entry's calls), so that
   * a result finds its call without a scan; forgotten when entries move (a compaction, a rewind),
   * when a result searches as before.
   */
  private readonly callPlaces = new Map<string, { readonly entry: number; readonly index: number }>()
  /**
   * The entry a result made since the transcript was last given out (`snapshot`, `rendered`): no one
   * else holds it, so the next results of the same response change it in place. A response of N
   * calls then copies its calls once per snapshot, not once per result (N² in all). One entry, not a
   * set of them: a response's results come together, and a set filled by a hydration of 24,000
   * turns (no snapshot in between) raised its peak RSS from 1.12 to 1.21× replay's (bench row 5).
   */
  private unshared: Transcript.TranscriptEntry | undefined = undefined

  /** A live transcript of the events so far. */
  static of(events: Iterable<AgentEvent>): LiveTranscript {
    const transcript = new LiveTranscript()
    for (const event of events) transcript.add(event)
    return transcript
  }

  /** Folds one event in, as `Transcript.reduce` does: the domain's one transcript fold, applied in place. */
  add(event: AgentEvent): void {
    Transcript.apply(inPlace, this, event)
  }

  /** A message of the user (see `Transcript.Changes`). */
  user(turnId: string, content: string, sequence: number, images?: ReadonlyArray<ImageRef>): this {
    this.close()
    this.entries.push(Transcript.userEntry(turnId, content, sequence, images))
    this.changed()
    return this
  }

  /**
   * Text of the streaming response: the hot path, a cons string per delta, flattened now and then
   * ({@link flattenAfter}) and when the response ends — a response in flight holds one string and a
   * short chain rather than a chain of every delta (32 bytes each; bench row 21 holds 1,000 responses
   * in flight), for copying its text about five times over in all.
   */
  text(turnId: string, text: string, sequence: number): this {
    if (this.openTurnId === undefined) this.open(turnId, sequence)
    this.openContent += text
    if (++this.openPieces >= flattenAfter(++this.openDeltas)) {
      this.openPieces = 0
      // Number() reads the whole string, which makes V8 flatten it (see `close`).
      Number(this.openContent)
    }
    this.changed()
    return this
  }

  /** A tool call of the streaming response. */
  call(turnId: string, call: Transcript.TranscriptToolCall, sequence: number): this {
    if (this.openTurnId === undefined) this.open(turnId, sequence)
    this.openCalls.push(call)
    this.callIds.add(call.toolCallId)
    this.changed()
    return this
  }

  /** Whether a call of the session's log already has this id. */
  hasCallId(toolCallId: string): boolean {
    return this.callIds.has(toolCallId)
  }

  /** Another event of a turn: the streaming response ends. */
  closeResponse(): this {
    if (this.openTurnId !== undefined) {
      this.close()
      this.changed()
    }
    return this
  }

  /** The transcript now, equal to `Transcript.replay` of the events added. */
  snapshot(): Transcript.Transcript {
    if (this.cachedSnapshot !== undefined) return this.cachedSnapshot
    this.unshared = undefined
    const snapshot: Transcript.Transcript = this.past === undefined
      ? { entries: this.entries.slice(), open: this.openEntry() }
      : { entries: this.entries.slice(), open: this.openEntry(), past: Transcript.settledPast(this.past) }
    this.cachedSnapshot = snapshot
    return snapshot
  }

  /** The rendering of a snapshot it gave out: kept here while the snapshot is current, else rendered from it. */
  renderingOf(snapshot: Transcript.Transcript): ContextBuilder.Rendering {
    return this.cachedSnapshot === snapshot ? this.rendered() : Transcript.rendered(snapshot)
  }

  /**
   * The messages of `snapshot()` and their JSON length, equal to `Transcript.rendered` of it; only
   * the entries added or changed since the last call are rendered.
   */
  rendered(): Rendered {
    if (this.cachedRendering !== undefined) return this.cachedRendering
    this.unshared = undefined
    for (let i = this.renderedEntries; i < this.entries.length; i++) {
      this.starts.push(this.messages.length)
      this.charsBefore.push(this.renderedChars)
      for (const message of Transcript.messagesOf(this.entries[i]!)) {
        this.messages.push(message)
        this.renderedChars += JSON.stringify(message).length
      }
    }
    this.renderedEntries = this.entries.length
    const messages = this.messages.slice()
    let chars = this.renderedChars
    const open = this.openEntry()
    if (open !== undefined) {
      for (const message of Transcript.messagesOf(open)) {
        messages.push(message)
        chars += JSON.stringify(message).length
      }
    }
    this.cachedRendering = { messages, jsonLength: arrayLength(chars, messages.length) }
    return this.cachedRendering
  }

  private openEntry(): Transcript.AssistantEntry | undefined {
    return this.openTurnId === undefined
      ? undefined
      : {
        role: "assistant",
        turnId: this.openTurnId,
        content: this.openContent,
        toolCalls: this.openCalls.length === 0 ? noCalls : this.openCalls.slice(),
        sequence: this.openSequence
      }
  }

  /** A response starts streaming. Its turn id is the previous entry's string when they are equal: one copy per turn is held, not one per entry. */
  private open(turnId: string, sequence: number) {
    const previous = this.entries.at(-1)?.turnId
    this.openTurnId = previous === turnId ? previous : turnId
    this.openSequence = sequence
  }

  /**
   * A compaction: the summary, then the entries kept verbatim, as `Transcript.compacted` makes them;
   * rendered again from the start when next asked for (a compaction is rare, and shrinks what is held).
   */
  compacted(compaction: Transcript.Compaction): this {
    this.close()
    const next = Transcript.compacted({ entries: this.entries, open: undefined }, compaction)
    this.entries.length = 0
    this.entries.push(...next.entries)
    this.callPlaces.clear()
    this.past = undefined
    this.unrender(0)
    this.changed()
    return this
  }

  /**
   * A rewind, as `Transcript.rewound` makes it, in place: the entries after the point where the
   * branches part are dropped and those of the branch at the target pushed (what it costs is what
   * changes, see `Transcript.rewindChange`); only those are rendered again.
   */
  rewound(rewind: Transcript.Rewind): this {
    this.close()
    const change = Transcript.rewindChange(this.entries, this.past, rewind)
    this.entries.length = change.keep
    for (const entry of change.back) this.entries.push(entry)
    this.callPlaces.clear()
    this.past = change.past
    this.unrender(change.keep)
    this.changed()
    return this
  }

  /** A refused turn's images left out, as `Transcript.refused` does; its entries rendered again. */
  refused(turnId: string): this {
    this.close()
    const start = Transcript.turnStart(this.entries, turnId)
    let first = this.entries.length
    for (let i = start; i < this.entries.length; i++) {
      const entry = Transcript.withoutImages(this.entries[i]!)
      if (entry === this.entries[i]) continue
      this.entries[i] = entry
      first = Math.min(first, i)
    }
    if (first < this.entries.length) {
      this.unrender(first)
      this.changed()
    }
    return this
  }

  private changed() {
    this.cachedSnapshot = undefined
    this.cachedRendering = undefined
  }

  /** Ends the streaming response: it joins the entries, its text made one flat string. */
  private close() {
    const open = this.openEntry()
    if (open === undefined) return
    // Number() reads the whole string, which makes V8 flatten the cons string the deltas built: the
    // entry then holds one string rather than a chain of every delta.
    Number(open.content)
    // An id the response repeats is left to the scan, which gives the result to every call of that id
    // (as `Transcript.replay` does); a place would name only the last.
    const seen = open.toolCalls.length > 1 ? new Set<string>() : undefined
    for (let index = 0; index < open.toolCalls.length; index++) {
      const { toolCallId } = open.toolCalls[index]!
      if (seen?.has(toolCallId)) this.callPlaces.delete(toolCallId)
      else {
        seen?.add(toolCallId)
        this.callPlaces.set(toolCallId, { entry: this.entries.length, index })
      }
    }
    this.entries.push(open)
    this.openTurnId = undefined
    this.openContent = ""
    this.openDeltas = 0
    this.openPieces = 0
    this.openCalls = []
  }

  /** A tool's result attaches to its call (searched from the latest entry), so messages keep call order. */
  result(toolCallId: string, content: string, isError: boolean, images?: ReadonlyArray<ImageRef>): this {
    this.close()
    this.changed()
    const place = this.callPlaces.get(toolCallId)
    const entry = place === undefined ? undefined : this.entries[place.entry]
    if (place !== undefined && entry?.role === "assistant" && entry.toolCalls[place.index]?.toolCallId === toolCallId) {
      this.callPlaces.delete(toolCallId)
      const call = entry.toolCalls[place.index]!
      const answered = { ...call, result: Transcript.resultOf(content, isError, images) }
      if (this.unshared === entry) (entry.toolCalls as Array<Transcript.TranscriptToolCall>)[place.index] = answered
      else {
        const toolCalls = entry.toolCalls.slice()
        toolCalls[place.index] = answered
        const next = { ...entry, toolCalls }
        this.unshared = next
        this.entries[place.entry] = next
      }
      this.unrender(place.entry)
      return this
    }
    for (let i = this.entries.length - 1; i >= 0; i--) {
      const entry = this.entries[i]!
      if (entry.role !== "assistant" || !entry.toolCalls.some((c) => c.toolCallId === toolCallId)) continue
      this.entries[i] = {
        ...entry,
        toolCalls: entry.toolCalls.map((c) => (c.toolCallId === toolCallId ? { ...c, result: Transcript.resultOf(content, isError, images) } : c))
      }
      this.unrender(i)
      break
    }
    return this
  }

  /** Forgets the rendering of entry `i` and of those after it: they are rendered again when next asked for. */
  private unrender(i: number) {
    if (i >= this.renderedEntries) return
    this.messages.length = this.starts[i]!
    this.renderedChars = this.charsBefore[i]!
    this.starts.length = i
    this.charsBefore.length = i
    this.renderedEntries = i
  }
}
