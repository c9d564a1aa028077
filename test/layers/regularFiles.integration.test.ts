/**
 * The shared no-link, no-block, regular-only read of the blob area and the workspace checkpoints
 * (src/layers/RegularFiles.ts): what each refuses, with the code its callers tell apart.
 */
import { execFileSync } from "node:child_process"
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import * as RegularFiles from "../../src/layers/RegularFiles.js"

const dir = mkdtempSync(join(tmpdir(), "effect-agent-regular-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const codeOf = (promise: Promise<unknown>) => promise.then(() => "read", (error: NodeJS.ErrnoException) => error.code)

describe("RegularFiles.readRegular", () => {
  it("reads a regular file whole, or up to a cap it is within", async () => {
    writeFileSync(join(dir, "f"), "hello")
    expect((await RegularFiles.readRegular(join(dir, "f"))).toString()).toBe("hello")
    expect((await RegularFiles.readRegular(join(dir, "f"), 5)).toString()).toBe("hello")
  })

  it("refuses a file over the cap (EFBIG), a link (ELOOP), a named pipe without waiting on it (EINVAL), a missing file (ENOENT)", async () => {
    writeFileSync(join(dir, "big"), "123456")
    expect(await codeOf(RegularFiles.readRegular(join(dir, "big"), 5))).toBe("EFBIG")
    symlinkSync(join(dir, "big"), join(dir, "link"))
    expect(await codeOf(RegularFiles.readRegular(join(dir, "link")))).toBe("ELOOP")
    execFileSync("mkfifo", [join(dir, "pipe")])
    expect(await codeOf(RegularFiles.readRegular(join(dir, "pipe")))).toBe("EINVAL")
    expect(await codeOf(RegularFiles.readRegular(join(dir, "missing")))).toBe("ENOENT")
  })
})
