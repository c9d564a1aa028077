/**
 * `list_dir` shows a link as a folder (`name/`) or a file only where it leads somewhere the call may
 * look (`Walk.linkShown`). Its target, or a folder above it, swapped for a link out between that check
 * and the look at what it is must not show what is outside: before, the look was a `stat` by path,
 * which follows links, so the listing told whether a path outside cwd was a folder (one bit a swap).
 * The swap is made deterministically inside the listing's own `allowed` step, as walkLinkSwap.test.ts
 * does for the walk.
 */
import { mkdirSync, mkdtempSync, realpathSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import * as Walk from "../../src/layers/workspace/Walk.js"

const scratch = realpathSync(mkdtempSync(join(tmpdir(), "effect-agent-list-swap-")))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))
let count = 0

/** A cwd with `a-link` leading to `z/target` (a file), and outside it `z/target` as a folder. */
const setup = () => {
  const root = join(scratch, `t${++count}`)
  const cwd = join(root, "cwd")
  const outside = join(root, "outside")
  mkdirSync(join(cwd, "z"), { recursive: true })
  mkdirSync(join(outside, "z", "target"), { recursive: true })
  writeFileSync(join(cwd, "z", "target"), "inside\n")
  symlinkSync("z/target", join(cwd, "a-link"))
  return { cwd, outside }
}

/** How the listing shows `a-link`, with `swap` run once at the check of where it leads. */
const shownSwapping = async (cwd: string, swap: () => void) => {
  let swapped = false
  const shown = await Walk.linkShown(join(cwd, "a-link"), (real) => {
    if (!swapped && real === join(cwd, "z", "target")) {
      swapped = true
      swap()
    }
    return Walk.isInside(cwd, real)
  })
  expect(swapped).toBe(true)
  return shown
}

describe("a link swapped between list_dir's check and its look", () => {
  it("shown as before when nothing is swapped", async () => {
    const { cwd } = setup()
    expect(await Walk.linkShown(join(cwd, "a-link"), (real) => Walk.isInside(cwd, real))).toBe("file")
    mkdirSync(join(cwd, "d"))
    symlinkSync("d", join(cwd, "d-link"))
    expect(await Walk.linkShown(join(cwd, "d-link"), (real) => Walk.isInside(cwd, real))).toBe("folder")
    symlinkSync(join(cwd, ".."), join(cwd, "up"))
    expect(await Walk.linkShown(join(cwd, "up"), (real) => Walk.isInside(cwd, real))).toBe("outside")
  })

  it("its target swapped for a link to a folder outside: not shown as a folder", async () => {
    const { cwd, outside } = setup()
    expect(await shownSwapping(cwd, () => {
      renameSync(join(cwd, "z", "target"), join(cwd, "old"))
      symlinkSync(join(outside, "z", "target"), join(cwd, "z", "target"))
    })).not.toBe("folder")
  })

  it("a folder above its target swapped for a link out: not shown as a folder", async () => {
    const { cwd, outside } = setup()
    expect(await shownSwapping(cwd, () => {
      renameSync(join(cwd, "z"), join(cwd, "old"))
      symlinkSync(join(outside, "z"), join(cwd, "z"))
    })).not.toBe("folder")
  })
})
