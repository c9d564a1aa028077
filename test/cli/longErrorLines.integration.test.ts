/**
 * The CLI's error line was cut at 300 characters from its start: a `--script` file deep in a folder
 * tree lost what was wrong with it (the issue comes after the file's path). A line is now bounded
 * at 1,000 characters and keeps its start and its end, the middle cut.
 */
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { folders, runClosed } from "./subprocess.js"

const { folder } = folders("long-error-lines")

describe("a long error line", () => {
  it("keeps its end: the issue after a long path", async () => {
    const cwd = folder("deep")
    const deep = join(cwd, ...Array.from({ length: 40 }, (_, i) => `a-folder-with-a-long-name-${i}`))
    mkdirSync(deep, { recursive: true })
    const file = join(deep, "script.json")
    writeFileSync(file, JSON.stringify({ responses: [{ chunks: ["a"], delay: "3 parsecs" }] }))
    expect(file.length).toBeGreaterThan(1000)
    const done = await runClosed(cwd, ["run", "hi", "--script", file])
    expect(done.code).toBe(1)
    const line = done.stderr.trimEnd()
    expect(line.split("\n")).toHaveLength(1)
    expect(line).toMatch(/^effect-agent: --script \/.{100,}…/)
    expect(line).toMatch(/script\.json: responses\[0\]\.delay: a delay is milliseconds \(200\) or a duration: "300ms", "2s", "1\.5m", "2 seconds"$/)
  })
})
