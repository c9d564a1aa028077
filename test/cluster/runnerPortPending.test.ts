/**
 * Which connection of the runners' port makes room when one more enters the handshake at the bound
 * (`RunnerPort.pending`): the oldest of the source address that holds the most, so a flood from
 * one address evicts its own, never a runner's from another address.
 */
import { describe, expect, it } from "@effect/vitest"
import { RunnerPort } from "../../src/cluster.js"

describe("the runners' port's connections in the handshake", () => {
  it("one more at the bound evicts the oldest of the source with the most; one that leaves makes room", () => {
    const sizes: Array<number> = []
    const evicted: Array<string> = []
    const pending = RunnerPort.pending(3, (size) => sizes.push(size))
    const enter = (source: string, name: string) => pending.enter(source, () => evicted.push(name))
    enter("10.0.0.9", "flood 1")
    enter("10.0.0.9", "flood 2")
    const runnerLeaves = enter("10.0.0.2", "runner")
    // At the bound: the flood's source holds the most, its oldest goes.
    enter("10.0.0.9", "flood 3")
    expect(evicted).toEqual(["flood 1"])
    enter("10.0.0.9", "flood 4")
    enter("10.0.0.9", "flood 5")
    expect(evicted).toEqual(["flood 1", "flood 2", "flood 3"])
    // The runner proved itself: its place is free, nothing is evicted for the next one.
    runnerLeaves()
    runnerLeaves()
    enter("10.0.0.3", "another runner")
    expect(evicted).toEqual(["flood 1", "flood 2", "flood 3"])
    expect(Math.max(...sizes)).toBe(3)
    // The flood's source still holds the most: its oldest goes again.
    enter("10.0.0.4", "third")
    expect(evicted.at(-1)).toBe("flood 4")
  })
})
