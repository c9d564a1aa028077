/**
 * The viewer's cache of what it makes of each text (`RenderCache`): the page renders the whole
 * session on each frame, so every text a render shows must still be there for the next render,
 * however many there are, while texts no longer shown go.
 */
import { describe, expect, it } from "@effect/vitest"
import { RenderCache } from "../../src/server/viewer/viewer.js"

/** A cache over `floor`, and a count of the values it had to make. */
const counting = (floor: number) => {
  const cache = RenderCache.make<string>(floor)
  let made = 0
  const render = (texts: ReadonlyArray<string>) => {
    const values = texts.map((text) => cache.get(text, (key) => { made++; return key.toUpperCase() }))
    cache.rendered()
    return values
  }
  return { cache, render, made: () => made }
}

describe("RenderCache", () => {
  it("a render of more texts than the floor makes each once, then none again on the next renders", () => {
    const { made, render } = counting(10)
    const texts = Array.from({ length: 25 }, (_, i) => `text ${i}`)
    expect(render(texts)).toEqual(texts.map((t) => t.toUpperCase()))
    expect(made()).toBe(25)
    render(texts)
    render(texts)
    expect(made()).toBe(25)
  })

  it("a streaming text's earlier versions go once past the floor; what the render shows stays", () => {
    const { cache, made, render } = counting(10)
    const closed = Array.from({ length: 8 }, (_, i) => `closed ${i}`)
    let streaming = ""
    for (let i = 0; i < 50; i++) {
      streaming += `${i} `
      render([...closed, streaming])
    }
    // Each frame made the streaming text's new version only; the closed texts once.
    expect(made()).toBe(8 + 50)
    expect(cache.size()).toBeLessThanOrEqual(11)
    render([...closed, streaming])
    expect(made()).toBe(58)
  })

  it("under the floor nothing goes: a text shown again after a scrub is not made again", () => {
    const { made, render } = counting(10)
    render(["a", "b", "c"])
    render(["a"])
    render(["a", "b", "c"])
    expect(made()).toBe(3)
  })
})
