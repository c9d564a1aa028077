/**
 * Red team 16 probe, held on main (kept): `write_file` and `edit_file` of a name that does not exist
 * yet, checked inside cwd, whose folder is swapped for a link out between the decision and the
 * create (the swap made deterministically between `prepare` and `execute`, as a command of the same
 * step could). The create happens inside the checked folder's handle (`/proc/self/fd/N/name`,
 * `O_NOFOLLOW`), so the swap fails `path_changed` and nothing is made or changed outside; a missing
 * folder made on the way is made inside its checked parent the same way. A name made a FIFO, or a
 * link to `/dev/zero`, after the check is refused `not_a_regular_file` / `path_changed`, not waited on.
 */
import { execFileSync } from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { afterAll, describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type { Json } from "../../src/domain/Json.js"
import * as WorkspaceTools from "../../src/layers/WorkspaceTools.js"
import type { ToolContext } from "../../src/services/ToolRouter.js"

const roots: Array<string> = []
afterAll(() => roots.forEach((root) => NodeFs.rmSync(root, { recursive: true, force: true })))

const setup = () => {
  const root = NodeFs.realpathSync(NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "effect-agent-new-file-swap-")))
  roots.push(root)
  const cwd = NodePath.join(root, "ws")
  const out = NodePath.join(root, "out")
  NodeFs.mkdirSync(NodePath.join(cwd, "d"), { recursive: true })
  NodeFs.mkdirSync(out)
  return { cwd, out }
}

/** Prepares `tool` in `cwd`, runs `swap`, then executes the prepared call (as an approval would); its error code, if any. */
const preparedThenSwapped = (cwd: string, tool: string, args: Json, swap: () => void) =>
  Effect.gen(function*() {
    const tools = yield* WorkspaceTools.make()
    const context: ToolContext = { sessionId: "s", turnId: "t", cwd, progress: () => Effect.void }
    const call = yield* tools.prepare({ toolCallId: "c1", tool, args }, cwd)
    swap()
    const result = yield* Effect.either(tools.execute(call, context))
    return Either.isLeft(result) ? result.left.errorCode : "ran"
  }).pipe(Effect.provide(NodeContext.layer))

describe("a new file's folder swapped between the check and the create", () => {
  it.effect("write_file d/new.txt, d swapped for a link out: path_changed, nothing made outside", () =>
    Effect.gen(function*() {
      const { cwd, out } = setup()
      const code = yield* preparedThenSwapped(cwd, "write_file", { path: "d/new.txt", content: "pwned" }, () => {
        NodeFs.renameSync(NodePath.join(cwd, "d"), NodePath.join(cwd, "d-old"))
        NodeFs.symlinkSync(out, NodePath.join(cwd, "d"))
      })
      expect(code).toBe("path_changed")
      expect(NodeFs.readdirSync(out)).toEqual([])
    }))

  it.effect("write_file m/sub/new.txt (m missing at the check), m made a link out: path_changed, nothing made outside", () =>
    Effect.gen(function*() {
      const { cwd, out } = setup()
      const code = yield* preparedThenSwapped(cwd, "write_file", { path: "m/sub/new.txt", content: "pwned" }, () => {
        NodeFs.symlinkSync(out, NodePath.join(cwd, "m"))
      })
      expect(code).toBe("path_changed")
      expect(NodeFs.readdirSync(out)).toEqual([])
    }))

  it.effect("write_file d/new.ts made a FIFO, or a link to /dev/zero, after the check: refused at once", () =>
    Effect.gen(function*() {
      const { cwd } = setup()
      const fifo = yield* preparedThenSwapped(cwd, "write_file", { path: "d/new.ts", content: "x" }, () => {
        execFileSync("mkfifo", [NodePath.join(cwd, "d", "new.ts")])
      })
      expect(fifo).toBe("not_a_regular_file")
      const zero = yield* preparedThenSwapped(cwd, "write_file", { path: "d/zero.ts", content: "x" }, () => {
        NodeFs.symlinkSync("/dev/zero", NodePath.join(cwd, "d", "zero.ts"))
      })
      expect(["path_changed", "not_a_regular_file"]).toContain(zero)
    }))
})
