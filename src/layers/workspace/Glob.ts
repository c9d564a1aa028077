/**
 * Glob matching in time linear in the text (times the pattern's length), never backtracking.
 *
 * Globs were compiled to regular expressions (`*` → `.*`). A backtracking engine takes time
 * exponential in the number of stars on a text that almost matches: `^.*a.*a.*a.*a.*a.*a.*b$`
 * against 100 `a`s ran for 53 s. Both sides can be hostile — a deny rule from a cloned project's
 * settings, a path or command line the model wrote, a glob in a shell command matched against the
 * names of a repository's files — and a regular expression cannot be interrupted: it held the
 * event loop, and with it every session, cancellation and the server. Here a pattern is a list of
 * units run as a set of states over the text (Thompson's construction, in effect), one pass.
 *
 * @since 0.11.0
 * @internal
 */

/** One unit of a pattern: a character, any one character, or any run of characters. `crosses`: it may match `/`. */
export type Unit =
  | { readonly k: "lit"; readonly c: string }
  | { readonly k: "one"; readonly crosses: boolean }
  | { readonly k: "star"; readonly crosses: boolean }

/** A compiled glob: `test` as a regular expression's, so either can stand where the other did. */
export interface Glob {
  readonly test: (text: string) => boolean
  /** Whether some text that starts with `prefix` matches (a folder's path and `/`: may a path under it match). */
  readonly opens: (prefix: string) => boolean
}

/** Every character of `text` (UTF-16 units, as a regular expression without `u` reads them) as a literal. */
export const literal = (text: string): Array<Unit> => Array.from({ length: text.length }, (_, i) => ({ k: "lit", c: text[i]! }) as const)

/** Adds the states a star at a reached state makes reachable without reading (it may match nothing). */
const closeOver = (units: ReadonlyArray<Unit>, states: Uint8Array) => {
  for (let i = 0; i < units.length; i++) if (states[i] === 1 && units[i]!.k === "star") states[i + 1] = 1
}

/** The units as a glob that must match the whole text. */
export const compile = (units: ReadonlyArray<Unit>): Glob => {
  const m = units.length
  /** The states reached after reading all of `text`, or undefined when none is. */
  const read = (text: string): Uint8Array | undefined => {
    let current = new Uint8Array(m + 1)
    let next = new Uint8Array(m + 1)
    current[0] = 1
    closeOver(units, current)
    for (let j = 0; j < text.length; j++) {
      const c = text[j]!
      next.fill(0)
      let alive = false
      for (let i = 0; i < m; i++) {
        if (current[i] !== 1) continue
        const unit = units[i]!
        if (unit.k === "lit" ? unit.c === c : unit.crosses || c !== "/") {
          // A star reads the character and stays; the others move on.
          next[unit.k === "star" ? i : i + 1] = 1
          alive = true
        }
      }
      if (!alive) return undefined
      closeOver(units, next)
      ;[current, next] = [next, current]
    }
    return current
  }
  return {
    test: (text) => read(text)?.[m] === 1,
    // Any state reached can still get to the end: each unit left matches some character, a star none.
    opens: (prefix) => read(prefix) !== undefined
  }
}

/** A glob where `*` and `?` match any characters, `/` included (a command line's deny pattern read as raw text). */
export const anyText = (glob: string): Glob =>
  compile(Array.from(glob, (c): Unit => c === "*" ? { k: "star", crosses: true } : c === "?" ? { k: "one", crosses: true } : { k: "lit", c }).flatMap(
    // A character outside the basic plane is two UTF-16 units to match.
    (unit) => unit.k === "lit" && unit.c.length > 1 ? literal(unit.c) : [unit]
  ))
