/**
 * A deny or ask rule `X/**` fences the folder `X` itself: reading the folder (`grep -r`, `ls`,
 * `list_dir`) is reading under it. Before, `--deny 'shell:/etc/**'`-style path rules did not match
 * `/etc`, so in `bypass` `grep -r x out`, `out` a link to `/etc`, ran.
 */
import { mkdtempSync, rmSync, symlinkSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import type * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import { shellDecisions } from "./shellDecisions.js"

const cwd = mkdtempSync(join(tmpdir(), "effect-agent-deny-folder-"))
afterAll(() => rmSync(cwd, { recursive: true, force: true }))
symlinkSync("/etc", join(cwd, "out"))
const { decide } = shellDecisions(cwd)

const rule = (decision: "deny" | "ask", path: string): PermissionPolicy.Rule => ({ name: `${decision}-etc`, path, decision })

describe("a deny or ask rule X/** fences X itself", () => {
  for (const command of ["grep -r x out", "grep -r x /etc", "ls /etc", "ls out/", "grep -r x /etc/"]) {
    it(`${command} is denied in bypass`, async () => {
      expect(await decide("bypass", command, [rule("deny", "/etc/**")])).toMatchObject({ decision: "deny", policy: "deny-etc" })
      expect(await decide("bypass", command, [rule("ask", "/etc/**")])).toMatchObject({ decision: "ask", policy: "ask-etc" })
    })
  }

  it("a relative rule too, and the folder's siblings stay outside it", async () => {
    expect(await decide("bypass", "ls out", [rule("deny", "out/**")])).toMatchObject({ decision: "deny" })
    expect(await decide("bypass", "ls /etcetera", [rule("deny", "/etc/**")])).toMatchObject({ decision: "allow" })
    expect(await decide("bypass", "ls /", [rule("deny", "/etc/**")])).toMatchObject({ decision: "allow" })
  })
})
