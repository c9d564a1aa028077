/**
 * The open tool calls of a turn, kept so that each tool event costs O(1) amortized: one response of N
 * calls made each of its ~5N tool events scan and copy an array of up to N calls (3,200 calls: 11 s
 * in the reducer alone). The states the reducer returns are values: an older state still reads its
 * own calls after later events, and reducing an older state again (a fork of the fold) leaves the
 * newer one as it was.
 *
 * How: each turn's states share one append-only log of call versions (a call requested, then each
 * change of it, then its end), and a state is a prefix of that log (its length). The latest version
 * of each call is indexed by id; a prefix finds its own version by walking back the few versions its
 * call had since. A state reduced while it is the log's newest prefix appends in place; any other is
 * copied first (O(N), only on a fork). A state's calls as an array are built once, when read.
 *
 * @since 0.9.0
 */
import type { OpenToolCall, ToolCallStatus } from "./SessionState.js"

interface Version {
  readonly toolCallId: string
  /** The call as of this version; undefined once it ended. */
  readonly call: OpenToolCall | undefined
  /** The version of the same call before this one, or -1. */
  readonly previous: number
  /** The version that requested the call: its place in request order. */
  readonly first: number
}

class Log {
  readonly versions: Array<Version> = []
  readonly latest = new Map<string, number>()
}

/** How many open calls are in each status: what a turn's phase is read from without a scan. */
export type StatusCounts = Readonly<Record<ToolCallStatus, number>>

const noCounts: StatusCounts = { requested: 0, permission_pending: 0, awaiting_approval: 0, allowed: 0, denied: 0, running: 0 }

/** One state's open calls: a prefix of its turn's log. Immutable. */
export class OpenCalls {
  private array: ReadonlyArray<OpenToolCall> | undefined

  private constructor(
    private readonly log: Log,
    private readonly length: number,
    /** How many calls are open. */
    readonly size: number,
    readonly counts: StatusCounts
  ) {}

  static readonly empty = new OpenCalls(new Log(), 0, 0, noCounts)

  /** The calls of an array (a state not built by the reducer: a test's, or one cloned without its table). */
  static of(calls: ReadonlyArray<OpenToolCall>): OpenCalls {
    let table = OpenCalls.empty
    for (const call of calls) table = table.set(call)
    return table
  }

  /** The open call with this id. O(1) on the newest state; an older one walks back its call's later versions. */
  get(toolCallId: string): OpenToolCall | undefined {
    const at = this.versionOf(toolCallId)
    return at === -1 ? undefined : this.log.versions[at]!.call
  }

  /** The calls in request order, built once. */
  get calls(): ReadonlyArray<OpenToolCall> {
    if (this.array !== undefined) return this.array
    const inOrder: Array<OpenToolCall | undefined> = []
    const { versions } = this.log
    for (let i = 0; i < this.length; i++) {
      const version = versions[i]!
      if (version.call !== undefined && this.versionOf(version.toolCallId) === i) inOrder[version.first] = version.call
    }
    this.array = inOrder.filter((call): call is OpenToolCall => call !== undefined)
    return this.array
  }

  /** A call requested or changed: the table with its new version. */
  set(call: OpenToolCall): OpenCalls {
    return this.append(call.toolCallId, call)
  }

  /** A call ended. */
  remove(toolCallId: string): OpenCalls {
    return this.append(toolCallId, undefined)
  }

  private versionOf(toolCallId: string): number {
    let at = this.log.latest.get(toolCallId) ?? -1
    while (at >= this.length) at = this.log.versions[at]!.previous
    return at
  }

  private append(toolCallId: string, call: OpenToolCall | undefined): OpenCalls {
    const before = this.versionOf(toolCallId)
    const old = before === -1 ? undefined : this.log.versions[before]!.call
    // With no call open, a new log: a turn's log holds one step's calls, not every step's.
    const log = this.size === 0 ? new Log() : this.length === this.log.versions.length ? this.log : this.copy()
    const previous = this.size === 0 ? -1 : before
    const at = log.versions.length
    log.versions.push({ toolCallId, call, previous, first: old === undefined ? at : log.versions[previous]!.first })
    log.latest.set(toolCallId, at)
    const counts = { ...this.counts }
    if (old !== undefined) counts[old.status]--
    if (call !== undefined) counts[call.status]++
    return new OpenCalls(log, at + 1, this.size + (call === undefined ? 0 : 1) - (old === undefined ? 0 : 1), counts)
  }

  /** This prefix of the log, as a log of its own (a state reduced again after a later one was). */
  private copy(): Log {
    const log = new Log()
    for (let i = 0; i < this.length; i++) {
      log.versions.push(this.log.versions[i]!)
      log.latest.set(this.log.versions[i]!.toolCallId, i)
    }
    return log
  }
}
