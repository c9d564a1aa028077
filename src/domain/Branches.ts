/**
 * The branches a session's rewinds make, for the folds that must know which events are on the
 * branch the session is on (the transcript, the viewer's turns). A rewind at sequence `r` to `t`
 * starts a new branch: the events from `r` on follow `t`, and those between `t` and `r` are an
 * abandoned branch (`Transcript.onBranch` tells it for one sequence). So the log is a tree of
 * branches, each the run of sequences from a rewind (the first: from the start) to the next rewind,
 * hanging off the point its rewind went back to; the session is on a path from the first branch to
 * the newest, each branch on it kept up to a point (its `cut`).
 *
 * A rewind changes the path where the old one and the new one part: it walks down both from their
 * tops until they meet, so what it costs is the branches it leaves and those it goes back onto —
 * never every rewind or every entry so far. A log of thousands of rewinds folds in time linear in
 * its length (it was the square or worse: docs/benchmarks.md, "Rewinds").
 *
 * Imports nothing: the viewer's page bundles it (through `SessionView`).
 *
 * @since 0.10.0
 * @internal
 */

/**
 * An append-only list that successive versions of a fold share: a version reads only its first
 * `length` items, so appending to the newest version appends in place, and appending to an older
 * one (a fold that branches) copies first. The folds stay pure at the cost of one push.
 */
export interface Grown<T> {
  readonly items: Array<T>
  readonly length: number
}

/** An empty {@link Grown}. */
export const none = <T>(): Grown<T> => ({ items: [], length: 0 })

/** `list` with `item` appended (see {@link Grown}). */
export const grown = <T>(list: Grown<T>, item: T): Grown<T> => {
  const items = list.items.length === list.length ? list.items : list.items.slice(0, list.length)
  items.push(item)
  return { items, length: list.length + 1 }
}

/**
 * `list` as a version of its own: a later version appends to the array an older one shares, so a
 * value handed out of a fold (a snapshot) takes its items, up to its length, in an array of its own.
 */
export const settled = <T>(list: Grown<T>): Grown<T> => ({ items: list.items.slice(0, list.length), length: list.length })

/** `list` with item `i` replaced: a copy, since older versions read the item too. */
export const replaced = <T>(list: Grown<T>, i: number, item: T): Grown<T> => {
  const items = list.items.slice(0, list.length)
  items[i] = item
  return { items, length: list.length }
}

/** One branch: from the sequence of its rewind (0 for the first) on, following `to` on branch `parent`. */
export interface Branch {
  readonly start: number
  readonly to: number
  /** The index of the branch `to` is on; -1 for the first. */
  readonly parent: number
}

/** A branch on the session's path, kept up to `cut` (the top one: Infinity), over the step below it. */
export interface Step {
  readonly branch: number
  readonly cut: number
  readonly below: Step | undefined
}

/** The branches so far, and the path the session is on. */
export interface Branches {
  readonly all: Grown<Branch>
  readonly top: Step
}

/** Before any rewind: one branch, the whole log. */
export const initial: Branches = { all: { items: [{ start: 0, to: 0, parent: -1 }], length: 1 }, top: { branch: 0, cut: Infinity, below: undefined } }

/** The sequences of branch `branch` after `after`, up to `upTo` (Infinity: all of them). */
export interface Range {
  readonly branch: number
  readonly after: number
  readonly upTo: number
}

/** What a rewind changes (see {@link rewind}). */
export interface Change {
  readonly next: Branches
  /** The last sequence the old path and the new one share: what is after it on the old path is left. */
  readonly shared: number
  /** The ranges the session leaves, oldest branch first (the last one of them was the top). */
  readonly left: ReadonlyArray<Range>
  /** The ranges it goes back onto, oldest branch first: with what was kept, the branch at the target. */
  readonly back: ReadonlyArray<Range>
}

/** The index of the branch `sequence` is on: the last one starting at or before it. */
export const branchOf = (all: Grown<Branch>, sequence: number): number => {
  let lo = 0
  let hi = all.length - 1
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1
    if (all.items[mid]!.start <= sequence) lo = mid
    else hi = mid - 1
  }
  return lo
}

/**
 * The rewind at `sequence` to `toSequence`: the path goes down to where it meets the branch at the
 * target, then up that branch, and a new branch starts at the rewind. A target at or after the
 * rewind (a log `SessionState` refuses) changes nothing but the branch it starts.
 */
export const rewind = (branches: Branches, sequence: number, toSequence: number): Change => {
  const to = Math.min(toSequence, sequence - 1)
  const target = branchOf(branches.all, to)
  // Walk both paths down until they are on one branch: each branch's parent is an older branch, so
  // both indexes only fall, and the first branch is on every path.
  const left: Array<Range> = []
  const onto: Array<Range> = []
  let step: Step = branches.top
  let branch = target
  let point = to
  const whole = (branch: number, upTo: number): Range => ({ branch, after: branches.all.items[branch]!.start - 1, upTo })
  while (step.branch !== branch) {
    if (step.branch > branch) {
      left.push(whole(step.branch, step.cut))
      step = step.below!
    } else {
      onto.push(whole(branch, point))
      const { parent, to: below } = branches.all.items[branch]!
      branch = parent
      point = below
    }
  }
  // On the branch where they meet, the new path keeps it up to `point`: less of it, or more.
  let top: Step = { branch, cut: point, below: step.below }
  for (let i = onto.length - 1; i >= 0; i--) top = { branch: onto[i]!.branch, cut: onto[i]!.upTo, below: top }
  if (step.cut > point) left.push({ branch, after: point, upTo: step.cut })
  if (point > step.cut) onto.push({ branch, after: step.cut, upTo: point })
  const all = grown(branches.all, { start: sequence, to, parent: target })
  return {
    next: { all, top: { branch: all.length - 1, cut: Infinity, below: top } },
    shared: Math.min(point, step.cut),
    left: left.reverse(),
    back: onto.reverse()
  }
}
