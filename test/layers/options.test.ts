/** The one option parser of the command rules (`Options`, round 26). */
import { describe, expect, it } from "@effect/vitest"
import * as Options from "../../src/layers/workspace/Options.js"

const gnu: Options.Syntax = {
  shortArg: "Cf",
  shortOptional: "i",
  longArg: ["--directory", "--file", "--files-from", "--to-command", "--checkpoint-action"],
  longFlags: ["--extract", "--checkpoint", "--to-stdout"],
  prefixes: true
}

describe("Options.parse", () => {
  it("a long option exact or by unambiguous prefix, with = or the next word as its value", () => {
    const read = Options.parse(gnu, ["--extr", "--direc=out", "--to-c", "sh", "a"])
    expect([...read.long]).toEqual(["--extract", "--directory", "--to-command"])
    expect(read.given).toEqual([["--directory", "out"], ["--to-command", "sh"]])
    expect(read.operands).toEqual(["a"])
    expect(read.unsure).toBe(false)
  })

  it("an exact name wins over the longer options it begins; a prefix of several records each, unsure when one takes a value", () => {
    expect(Options.parse(gnu, ["--checkpoint", "a"]).operands).toEqual(["a"])
    const ambiguous = Options.parse(gnu, ["--to", "x", "a"])
    expect([...ambiguous.long]).toEqual(["--to-command", "--to-stdout"])
    expect(ambiguous.unsure).toBe(true)
    expect(Options.parse(gnu, ["--to=x", "a"]).unsure).toBe(false)
  })

  it("without prefixes a long option is read as written", () => {
    const read = Options.parse({ longArg: ["--file"] }, ["--fi", "x", "--file", "y"])
    expect([...read.long]).toEqual(["--fi", "--file"])
    expect(read.operands).toEqual(["x"])
  })

  it("short clusters: a value letter takes the rest of the word or the next one; an optional one only the rest", () => {
    expect(Options.parse(gnu, ["-xvCout", "-f", "t.tar", "a"]).given).toEqual([["C", "out"], ["f", "t.tar"]])
    expect(Options.parse(gnu, ["-i.bak", "s", "f"]).operands).toEqual(["s", "f"])
    expect(Options.parse(gnu, ["-ie", "s"]).given).toEqual([["i", "e"]])
  })

  it("-- ends the options; options after operands count unless the program stops at its first operand", () => {
    expect(Options.parse(gnu, ["a", "--extract", "--", "--file", "b"]).operands).toEqual(["a", "--file", "b"])
    expect(Options.parse({ ...gnu, inOrder: true }, ["a", "--extract"]).operands).toEqual(["a", "--extract"])
    expect(Options.parse(gnu, ["a", "--extract"]).operandsAt).toEqual([0])
  })

  it("git's --no-<name> takes no value", () => {
    const read = Options.parse({ longArg: ["--template"], prefixes: true, negations: true }, ["--no-template", "src", "n"])
    expect(read.operands).toEqual(["src", "n"])
  })
})

describe("Options.names", () => {
  it("a long word that names or abbreviates one of a list (loosely: a shared prefix counts)", () => {
    expect(Options.names("--to-comm=sh", ["--to-command"])).toBe(true)
    expect(Options.names("--to", ["--to-command"])).toBe(true)
    expect(Options.names("--", ["--to-command"])).toBe(false)
    expect(Options.names("-t", ["--to-command"])).toBe(false)
    expect(Options.names("--to-commandx", ["--to-command"])).toBe(false)
  })
})
