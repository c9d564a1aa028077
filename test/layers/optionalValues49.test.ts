/**
 * Review 49: options whose value is optional (only after `=`) or absent were read as taking the next word, which
 * swallowed an operand: `date --iso-8601 0101000020` sets the clock, `uniq --group in out` writes `out`, `git branch
 * --color newb` creates `newb` (coreutils 9.1, git 2.39 here), `diff -r --new-file tree b` walks `tree`, and ag reads
 * `--depth 3` as taking `3`. Each case failed on main (d85a7d5).
 */
import { describe, expect, it } from "@effect/vitest"
import * as CommandPaths from "../../src/layers/workspace/CommandPaths.js"
import * as CommandRisk from "../../src/layers/workspace/CommandRisk.js"
import * as Options from "../../src/layers/workspace/Options.js"

const read = (line: string) => CommandRisk.classify(line.split(" "))

describe("options with an optional value take no next word (review 49)", () => {
  it("Options: a long option with an optional value takes one only after =, also by prefix", () => {
    const syntax: Options.Syntax = { longArg: ["--color-path"], longOptional: ["--color", "--context"], prefixes: true }
    expect(Options.parse(syntax, ["--context", "a", "b"]).operands).toEqual(["a", "b"])
    expect(Options.parse(syntax, ["--cont", "a", "b"]).operands).toEqual(["a", "b"])
    expect(Options.parse(syntax, ["--context=3", "a"]).given).toEqual([["--context", "3"]])
    // An exact optional name wins over the longer option taking a value.
    expect(Options.parse(syntax, ["--color", "a"]).operands).toEqual(["a"])
    expect(Options.parse(syntax, ["--color-path", "x", "a"]).operands).toEqual(["a"])
  })

  it("date --iso-8601 / --resolution before a date to set: a write, not a read", () => {
    for (const line of ["date --iso-8601 0101000020", "date --resolution 0101000020", "date --iso-8601 -s 2020-01-01"]) {
      expect(read(line), line).toEqual({ risk: "write", general: false })
    }
    expect(read("date --iso-8601=seconds")).toEqual({ risk: "read", general: true })
    expect(read("date --resolution")).toEqual({ risk: "read", general: true })
    expect(read("date --rfc-3339 date")).toEqual({ risk: "read", general: true })
    // `-I[FMT]` takes its value from the rest of the word only.
    expect(read("date -Iseconds")).toEqual({ risk: "read", general: true })
    expect(read("date -I 0101000020")).toEqual({ risk: "write", general: false })
  })

  it("uniq --group / --all-repeated IN OUT writes OUT", () => {
    for (const line of ["uniq --group in out", "uniq --all-repeated in out", "uniq --group=append in out"]) {
      expect(read(line), line).toEqual({ risk: "write", general: false })
    }
    expect(read("uniq --group in")).toEqual({ risk: "read", general: true })
  })

  it("git branch --color / --column / --abbrev NAME creates NAME", () => {
    for (const line of ["git branch --color newb", "git branch --column newb", "git branch --abbrev newb"]) {
      expect(read(line), line).toEqual({ risk: "write", general: false })
    }
    expect(read("git branch --color=always")).toEqual({ risk: "read", general: true })
    expect(read("git branch --merged main")).toEqual({ risk: "read", general: true })
  })

  it("diff --new-file is -N, a flag: the trees are walked", () => {
    expect(CommandPaths.treesOf(["diff", "-r", "--new-file", "tree", "b"])).toEqual(["tree", "b"])
    expect(CommandPaths.treesOf(["diff", "-r", "--new-f", "tree", "b"])).toEqual(["tree", "b"])
  })

  it("ag's options taking a value (and those whose value is optional) leave the pattern and trees in place", () => {
    expect(CommandPaths.treesOf(["ag", "--depth", "3", "SECRET"])).toEqual(["."])
    expect(CommandPaths.treesOf(["ag", "--ignore-dir", "x", "SECRET", "tree"])).toEqual(["tree"])
    expect(CommandPaths.treesOf(["ag", "--workers", "2", "--pager", "less", "SECRET", "tree"])).toEqual(["tree"])
    expect(CommandPaths.treesOf(["ag", "-W", "80", "SECRET"])).toEqual(["."])
    expect(CommandPaths.treesOf(["ag", "-p", "ign", "SECRET", "tree"])).toEqual(["tree"])
    // `-a` is a flag; `--context` takes a value only after `=`.
    expect(CommandPaths.treesOf(["ag", "-a", "SECRET", "tree"])).toEqual(["tree"])
    expect(CommandPaths.treesOf(["ag", "--context", "SECRET", "tree"])).toEqual(["tree"])
    // `-g PATTERN` lists files: every operand is a tree.
    expect(CommandPaths.treesOf(["ag", "-g", "x", "/outside"])).toEqual(["/outside"])
    expect(CommandPaths.treesOf(["ag", "--filename-pattern=x", "tree"])).toEqual(["tree"])
  })

  it("rg --generate takes a value", () => {
    expect(CommandPaths.treesOf(["rg", "--generate", "man", "SECRET"])).toEqual(["."])
  })
})
