/**
 * Red team 16: a walk (the grep tool's, the shell tool's look for links out of a tree) asked what a
 * followed link's target is with a `stat` by path, which follows links: a target swapped for a link
 * out between the check and that look was looked at where it now led. What was opened stayed bound
 * (walkLinkSwap.test.ts), but the answer decided the walk's summary: at the depth limit a folder
 * there made the walk say it stopped at "depth", a file did not — one bit about a path outside cwd
 * (and a `stat` that may wait on whatever file system the link leads into). The look is now an
 * `lstat` of the checked real path: a link there was swapped in since the check and is passed over.
 * Failed before: the two summaries differed.
 */
import * as Effect from "effect/Effect"
import { mkdirSync, mkdtempSync, realpathSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import * as Walk from "../../src/layers/workspace/Walk.js"

const scratch = realpathSync(mkdtempSync(join(tmpdir(), "effect-agent-walk-kind-")))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))
let count = 0

/** Walks a cwd whose `a-link` leads to `z/target`, swapping that folder for a link to `outsideTarget` at the check; the summary. */
const walkSwappedTo = async (outsideKind: "folder" | "file") => {
  const root = join(scratch, `t${++count}`)
  const cwd = join(root, "cwd")
  mkdirSync(join(cwd, "z", "target"), { recursive: true })
  mkdirSync(join(root, "outside", "folder"), { recursive: true })
  writeFileSync(join(root, "outside", "file"), "SECRET\n")
  symlinkSync("z/target", join(cwd, "a-link"))
  const target = join(cwd, "z", "target")
  let swapped = false
  const read: Array<string> = []
  const summary = await Effect.runPromise(Walk.walk({
    root: cwd,
    allowed: (real) => {
      if (!swapped && real === target) {
        swapped = true
        renameSync(target, join(cwd, "old"))
        symlinkSync(join(root, "outside", outsideKind), target)
      }
      return Walk.isInside(cwd, real)
    },
    // `z` and `old` themselves are not walked: only the link is followed, at the depth limit.
    skipFolder: () => true,
    maxEntries: 1_000,
    maxDepth: 0,
    deadline: Number.POSITIVE_INFINITY,
    now: () => 0,
    maxFileBytes: 1 << 20,
    onFile: async (_path, bytes) => {
      read.push(new TextDecoder().decode(bytes))
      return true
    }
  }))
  expect(swapped).toBe(true)
  expect(read.join("")).not.toContain("SECRET")
  return summary
}

describe("a walk's look at what a followed link leads to", () => {
  it("tells nothing about where a target swapped for a link out now leads", async () => {
    const toFolder = await walkSwappedTo("folder")
    const toFile = await walkSwappedTo("file")
    expect(toFolder).toEqual(toFile)
    expect(toFolder.stopped).not.toContain("depth")
  })
})
