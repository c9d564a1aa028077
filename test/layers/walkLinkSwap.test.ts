/**
 * A walk follows a link by its real path after checking it (`Walk`: the grep tool's walk, the shell
 * tool's look for links out of a tree). A link, its target or a folder above that target swapped
 * between the check and the open (check-then-use) must not make the walk read outside cwd: the open
 * binds to what was checked (`O_NOFOLLOW`, the handle's real path read back from `/proc/self/fd`).
 * The swap is made deterministically inside the walk's own `allowed` step, which runs after the
 * link was resolved and before anything is opened. These held on main; kept as tests.
 */
import * as Effect from "effect/Effect"
import { mkdirSync, mkdtempSync, realpathSync, renameSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import * as Walk from "../../src/layers/workspace/Walk.js"

const scratch = realpathSync(mkdtempSync(join(tmpdir(), "effect-agent-walk-swap-")))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))
let count = 0

/**
 * A cwd with `a-link` leading to `z/inside` (a folder holding `file.txt`) or to `z/file.txt`, and
 * outside it a folder of the same shape holding a secret; `swap` runs once, when the walk checks
 * where the link leads.
 */
const setup = (leadsTo: "folder" | "file") => {
  const root = join(scratch, `t${++count}`)
  const cwd = join(root, "cwd")
  const outside = join(root, "outside")
  for (const base of [cwd, outside]) mkdirSync(join(base, "z", "inside"), { recursive: true })
  writeFileSync(join(cwd, "z", "inside", "file.txt"), "inside\n")
  writeFileSync(join(cwd, "z", "file.txt"), "inside\n")
  writeFileSync(join(outside, "z", "inside", "file.txt"), "SECRET\n")
  writeFileSync(join(outside, "z", "file.txt"), "SECRET\n")
  writeFileSync(join(outside, "secret.txt"), "SECRET\n")
  symlinkSync(leadsTo === "folder" ? "z/inside" : "z/file.txt", join(cwd, "a-link"))
  return { cwd, outside }
}

/** Walks `cwd`, running `swap` at the check of the link's target; the contents read, and the walk's summary. */
const walkSwapping = async (cwd: string, target: string, swap: () => void, options: Partial<Walk.Options> = {}) => {
  let swapped = false
  const read: Array<string> = []
  const summary = await Effect.runPromise(Walk.walk({
    root: cwd,
    allowed: (real) => {
      if (!swapped && real === target) {
        swapped = true
        swap()
      }
      return Walk.isInside(cwd, real)
    },
    skipFolder: () => false,
    maxEntries: 1_000,
    maxDepth: 10,
    deadline: Number.POSITIVE_INFINITY,
    now: () => 0,
    maxFileBytes: 1 << 20,
    onFile: async (_path, bytes) => {
      read.push(new TextDecoder().decode(bytes))
      return true
    },
    ...options
  }))
  expect(swapped).toBe(true)
  return { read, summary }
}

describe("a link swapped between the walk's check and its open", () => {
  it("its target folder swapped for a link out: not followed", async () => {
    const { cwd, outside } = setup("folder")
    const { read } = await walkSwapping(cwd, join(cwd, "z", "inside"), () => {
      renameSync(join(cwd, "z", "inside"), join(cwd, "old"))
      symlinkSync(join(outside, "z", "inside"), join(cwd, "z", "inside"))
    })
    expect(read.join("")).not.toContain("SECRET")
  })

  it("its target file swapped for a link out: not read", async () => {
    const { cwd, outside } = setup("file")
    const { read } = await walkSwapping(cwd, join(cwd, "z", "file.txt"), () => {
      unlinkSync(join(cwd, "z", "file.txt"))
      symlinkSync(join(outside, "secret.txt"), join(cwd, "z", "file.txt"))
    })
    expect(read.join("")).not.toContain("SECRET")
  })

  for (const [leadsTo, target] of [["folder", "inside"], ["file", "file.txt"]] as const) {
    it(`a folder above its target ${leadsTo} swapped for a link out: nothing outside read`, async () => {
      const { cwd, outside } = setup(leadsTo)
      const { read } = await walkSwapping(cwd, join(cwd, "z", target), () => {
        renameSync(join(cwd, "z"), join(cwd, "old"))
        symlinkSync(join(outside, "z"), join(cwd, "z"))
      })
      expect(read.join("")).not.toContain("SECRET")
    })
  }

  it("the link itself pointed out after the check: what was checked is read, not where it leads now", async () => {
    const { cwd, outside } = setup("file")
    const { read } = await walkSwapping(cwd, join(cwd, "z", "file.txt"), () => {
      unlinkSync(join(cwd, "a-link"))
      symlinkSync(join(outside, "secret.txt"), join(cwd, "a-link"))
    })
    expect(read.join("")).not.toContain("SECRET")
    expect(read).toContain("inside\n")
  })
})

/**
 * Red team 16: the walk asked what a followed link's target is with a `stat` by path, which follows
 * links: a target swapped for a link out between the check and that look was looked at where it now
 * led, and at the depth limit the walk's summary said "depth" for a folder there and nothing for a
 * file — one bit about a path outside cwd. The look is an `lstat` of the checked real path: a link
 * there was swapped in since the check and is passed over. Failed before: the two summaries differed.
 */
describe("the walk's look at what a followed link leads to", () => {
  const swappedTo = async (kind: "inside" | "secret.txt") => {
    const { cwd, outside } = setup("folder")
    const target = join(cwd, "z", "inside")
    const { read, summary } = await walkSwapping(cwd, target, () => {
      renameSync(target, join(cwd, "old"))
      symlinkSync(kind === "inside" ? join(outside, "z", "inside") : join(outside, "secret.txt"), target)
    }, { skipFolder: () => true, maxDepth: 0 })
    expect(read.join("")).not.toContain("SECRET")
    return summary
  }

  it("tells nothing about where a target swapped for a link out now leads", async () => {
    const toFolder = await swappedTo("inside")
    expect(toFolder).toEqual(await swappedTo("secret.txt"))
    expect(toFolder.stopped).not.toContain("depth")
  })
})
