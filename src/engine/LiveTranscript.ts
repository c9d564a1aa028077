/**
 * The transcript of a live session, kept up to date in place as its events are committed, and the
 * messages of its model requests with their JSON length, rendered once per entry. Folding an event
 * costs what the event changes — a delta appends its text, a user message one entry — never a copy
 * of the conversation: a session of 2,000 turns, or one hydrated from a 100 MB log, folds at the
 * speed of a fresh one. Which event changes what, and how the entries are held in place, is the
 * domain's (`Transcript.Held`, which `Transcript.replay` folds with too); this class adds the
 * rendering and the call ids. What it gives out ({@link LiveTranscript.snapshot}) is a `Transcript`
 * equal to `Transcript.replay` of the same events (test/engine/liveTranscript.test.ts checks that).
 *
 * @since 0.2.0
 * @internal
 */
import type { AgentEvent } from "../domain/AgentEvent.js"
import * as Transcript from "../domain/Transcript.js"
import * as ContextBuilder from "../services/ContextBuilder.js"

/** The messages of a transcript, as a request carries them, and the length of their JSON array. */
export type Rendered = ContextBuilder.Rendering

/** The JSON length of a list of messages whose own JSON lengths add up to `chars`: "[" + joined by "," + "]". */
const arrayLength = (chars: number, count: number) => 2 + chars + Math.max(0, count - 1)

/**
 * A live transcript. Changed only by `add`, which the session's commit calls once an event is
 * stored; read through `snapshot` and `rendered`, both kept until the next change.
 */
export class LiveTranscript extends Transcript.Held {
  /**
   * Every tool call id the session's log has used, rewound or compacted ones too: a model's call
   * under one of them is given another (`ToolCallIds`), so no id is ever two calls. This set and the
   * map below are made when first needed: a session of text alone needs neither.
   */
  private callIds: Set<string> | undefined = undefined
  private renamed: Map<string, number> | undefined = undefined
  /** The messages of `entries[0 .. renderedEntries)`, where each entry's begin, and their JSON lengths summed. */
  private readonly messages: Array<Transcript.Message> = []
  private readonly starts: Array<number> = []
  private readonly charsBefore: Array<number> = []
  private renderedEntries = 0
  private renderedChars = 0
  /** The thinking shares of the rendered entries, by entry index, and summed by writer: made when the first comes (a session without thinking has none). */
  private shares: Map<number, Transcript.ThinkingShare> | undefined = undefined
  private thinkingChars: Map<string, number> | undefined = undefined
  private cachedSnapshot: Transcript.Transcript | undefined = undefined
  private cachedRendering: Rendered | undefined = undefined

  /**
   * The last `turn.started` folded, by sequence: where the open turn's own events begin in the log,
   * so that a resumed turn reads only those for what it spent (`ResumedSpend`), not the whole log
   * again. Kept here because every event of the log passes through `add`, hydration's and commits' alike.
   */
  turnStart: { readonly turnId: string; readonly sequence: number } | undefined = undefined

  /** Folds one event in (see `Transcript.Held.add`), noting where a turn starts. */
  override add(event: AgentEvent): void {
    if (event.type === "turn.started") this.turnStart = { turnId: event.turnId, sequence: event.sequence }
    super.add(event)
  }

  /** A live transcript of the events so far. */
  static of(events: Iterable<AgentEvent>): LiveTranscript {
    const transcript = new LiveTranscript()
    for (const event of events) transcript.add(event)
    return transcript
  }

  /** A tool call of the streaming response; its id is the log's from now on. */
  override call(turnId: string, call: Transcript.TranscriptToolCall, sequence: number): this {
    ;(this.callIds ??= new Set()).add(call.toolCallId)
    return super.call(turnId, call, sequence)
  }

  /** Whether a call of the session's log already has this id. */
  hasCallId(toolCallId: string): boolean {
    return this.callIds?.has(toolCallId) === true
  }

  /** Per model id, the suffix a renamed call tries first (`ToolCallIds.storedId`): a hint, `callIds` decides. */
  get renamedCallIds(): Map<string, number> {
    return this.renamed ??= new Map()
  }

  /** The transcript now, equal to `Transcript.replay` of the events added; kept until the next change. */
  override snapshot(): Transcript.Transcript {
    return this.cachedSnapshot ??= super.snapshot()
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
    this.shared()
    for (let i = this.renderedEntries; i < this.entries.length; i++) {
      this.starts.push(this.messages.length)
      this.charsBefore.push(this.renderedChars)
      for (const message of Transcript.messagesOf(this.entries[i]!)) {
        this.messages.push(message)
        const json = JSON.stringify(message).length
        this.renderedChars += json
        const share = Transcript.thinkingShare(message, json)
        if (share !== undefined) {
          ;(this.shares ??= new Map()).set(i, share)
          this.thinkingChars = Transcript.withShare(this.thinkingChars, share)
        }
      }
    }
    this.renderedEntries = this.entries.length
    const messages = this.messages.slice()
    let chars = this.renderedChars
    // A copy: the map held here changes in place with the next entries, a rendering given out must not.
    let thinkingChars: ReadonlyMap<string, number> | undefined = this.thinkingChars === undefined ? undefined : new Map(this.thinkingChars)
    const open = this.openEntry()
    if (open !== undefined) {
      for (const message of Transcript.messagesOf(open)) {
        messages.push(message)
        const json = JSON.stringify(message).length
        chars += json
        const share = Transcript.thinkingShare(message, json)
        if (share !== undefined) thinkingChars = Transcript.withShare(new Map(thinkingChars), share)
      }
    }
    const jsonLength = arrayLength(chars, messages.length)
    this.cachedRendering = thinkingChars === undefined ? { messages, jsonLength } : { messages, jsonLength, thinkingChars }
    return this.cachedRendering
  }

  /**
   * What is kept is dropped: the snapshot and the rendering, and the rendering of entry `from` and
   * those after it, rendered again when next asked for (a compaction renders from the start: it is
   * rare, and shrinks what is held).
   */
  protected override changed(from: number): void {
    this.cachedSnapshot = undefined
    this.cachedRendering = undefined
    if (from >= this.renderedEntries) return
    this.messages.length = this.starts[from]!
    this.renderedChars = this.charsBefore[from]!
    if (this.shares !== undefined) {
      for (const [i, share] of this.shares) {
        if (i < from) continue
        this.thinkingChars = Transcript.withShare(this.thinkingChars, share, -1)
        this.shares.delete(i)
      }
    }
    this.starts.length = from
    this.charsBefore.length = from
    this.renderedEntries = from
  }
}
