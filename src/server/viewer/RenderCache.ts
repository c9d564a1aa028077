/**
 * What the viewer's page makes of a text (its Markdown as sanitized HTML, a code block highlighted),
 * kept for as long as the page shows the text. The page renders the whole session on each animation
 * frame while events stream in; a cache of a fixed number of entries, cleared when full, made every
 * text of a session with more texts than that parsed again on every frame (a few hundred steps of a
 * long session). Here an entry stays while the renders use it: after each render
 * ({@link RenderCache.rendered}), once the cache holds more than `floor` entries, those the render did
 * not use go — so a render's texts are all there for the next one, and what the cache holds is
 * about what the page shows.
 *
 * @since 0.12.0
 */

/** A cache of values made from string keys, swept after each render. */
export interface RenderCache<A> {
  /** The value for `key`, made by `make` the first time. */
  readonly get: (key: string, make: (key: string) => A) => A
  /** Ends a render: past `floor` entries, those this render did not use go. */
  readonly rendered: () => void
  /** How many entries it holds. */
  readonly size: () => number
}

/** A cache keeping at least what the last render used, and at most `floor` entries more than that. */
export const make = <A>(floor = 500): RenderCache<A> => {
  const entries = new Map<string, { readonly value: A; render: number }>()
  let render = 0
  return {
    get: (key, make) => {
      const entry = entries.get(key)
      if (entry !== undefined) {
        entry.render = render
        return entry.value
      }
      const value = make(key)
      entries.set(key, { value, render })
      return value
    },
    rendered: () => {
      if (entries.size > floor) {
        for (const [key, entry] of entries) if (entry.render !== render) entries.delete(key)
      }
      render++
    },
    size: () => entries.size
  }
}
