/**
 * The data dir's own small files (jsonl/PlainFiles.ts): never read or written through a link, and a
 * named pipe in their place fails at once instead of blocking the process in `open(2)`.
 */
import { execFileSync } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import * as PlainFiles from "../../src/layers/jsonl/PlainFiles.js"

const dir = mkdtempSync(join(tmpdir(), "effect-agent-plain-files-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const codeOf = (f: () => unknown) => {
  try {
    f()
    return "ok"
  } catch (error) {
    return (error as NodeJS.ErrnoException).code
  }
}

describe("PlainFiles", () => {
  it("reads, appends and replaces a regular file; a new one is 0600", () => {
    const file = join(dir, "plain")
    PlainFiles.appendText(file, "+ a\n")
    PlainFiles.appendText(file, "- a\n")
    expect(PlainFiles.readText(file)).toBe("+ a\n- a\n")
    expect(statSync(file).mode & 0o777).toBe(0o600)
    PlainFiles.writeText(file, "7")
    expect(PlainFiles.readText(file)).toBe("7")
  })

  it("reads a file of megabytes whole, UTF-8 across every read's edge, an empty one as empty", () => {
    // Two-, three- and four-byte characters at every offset mod 8 KiB (a UTF-8 read's piece), over 1 MiB.
    const piece = "a\u00e9\u2014\u{1F600}b"
    const text = Array.from({ length: 80_000 }, (_, i) => `${"x".repeat(i % 7)}${piece}`).join("\n")
    const file = join(dir, "large")
    writeFileSync(file, text)
    expect(Buffer.byteLength(text)).toBeGreaterThan(1024 * 1024)
    expect(PlainFiles.readText(file)).toBe(text)
    writeFileSync(file, "")
    expect(PlainFiles.readText(file)).toBe("")
  })

  it("never goes through a link: the file it names is neither read nor changed", () => {
    const victim = join(dir, "victim")
    writeFileSync(victim, "the user's file\n")
    const link = join(dir, "link")
    symlinkSync(victim, link)
    expect(codeOf(() => PlainFiles.readText(link))).toBe("ELOOP")
    expect(codeOf(() => PlainFiles.appendText(link, "+ x\n"))).toBe("ELOOP")
    expect(codeOf(() => PlainFiles.writeText(link, "1"))).toBe("ELOOP")
    expect(readFileSync(victim, "utf8")).toBe("the user's file\n")
  })

  it("a named pipe or a folder fails at once (a blocking open would hold the whole process)", () => {
    const fifo = join(dir, "fifo")
    execFileSync("mkfifo", [fifo])
    expect(codeOf(() => PlainFiles.readText(fifo))).toBe("EINVAL")
    expect(codeOf(() => PlainFiles.appendText(fifo, "+ x\n"))).toBe("ENXIO")
    expect(codeOf(() => PlainFiles.writeText(fifo, "1"))).toBe("ENXIO")
    expect(codeOf(() => PlainFiles.readText(dir))).toBe("EINVAL")
  })
})
