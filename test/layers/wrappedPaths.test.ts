/**
 * What a command names is path-checked after a wrapper as it is without one. The script of `sh -c`
 * was read only when `sh` was the program: `env A=1 sh -c 'cat /x'`, `nice`, `timeout 5`, `command`,
 * `exec`, `builtin` and `xargs` before it hid its paths, and so did a runner's line given as a word
 * (`env -S 'cat /x'`, `watch 'cat /x'`, `flock f -c 'cat /x'`): in `bypass` a deny rule by path let
 * them read the file. A tree a program walks was found only for the program itself: `nice grep -r x
 * .` and `timeout 5 find .` walked a link out of cwd without the outside-cwd question.
 */
import { describe, expect, it } from "@effect/vitest"
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll } from "vitest"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import { shellDecisions } from "./shellDecisions.js"

const root = realpathSync(mkdtempSync(join(tmpdir(), "effect-agent-wrapped-")))
const cwd = join(root, "work")
const outside = join(root, "secret")
mkdirSync(cwd)
mkdirSync(outside)
writeFileSync(join(outside, "key"), "k")
symlinkSync(outside, join(cwd, "out"))
afterAll(() => rmSync(root, { recursive: true, force: true }))

const { decide, prepare } = shellDecisions(cwd)

const secret: PermissionPolicy.Rule = { name: "secret", tool: "*", path: `${outside}/**`, decision: "deny" }
const key = `${outside}/key`

describe("paths after a wrapper", () => {
  for (const command of [
    `env A=1 sh -c 'cat ${key}'`, `nice sh -c 'cat ${key}'`, `timeout 5 sh -c 'cat ${key}'`, `command sh -c 'cat ${key}'`,
    `exec sh -c 'cat ${key}'`, `builtin sh -c 'cat ${key}'`, `xargs sh -c 'cat ${key}'`, `env bash -ec 'cat ${key}'`,
    `env -S 'cat ${key}'`, `watch 'cat ${key}'`, `flock f -c 'cat ${key}'`, `env sh -c 'cat ou*/key'`
  ]) {
    it(`${JSON.stringify(command)}: a deny rule by path holds in bypass, and default asks as for a path outside cwd`, async () => {
      expect(await decide("bypass", command, [secret])).toMatchObject({ decision: "deny", policy: "secret" })
      expect(await decide("default", command, [])).toMatchObject({ decision: "ask", policy: "outside-cwd" })
    })
  }

  for (const command of ["nice grep -r x .", "timeout 5 find .", "env find .", "nice -n 5 rg x"]) {
    it(`${JSON.stringify(command)}: the tree the wrapped program walks is checked, its link out of cwd too`, async () => {
      expect((await prepare(command)).paths.map((p) => p.resolved)).toContain(outside)
      expect(await decide("default", command, [])).toMatchObject({ decision: "ask", policy: "outside-cwd" })
    })
  }
})
