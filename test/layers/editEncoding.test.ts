/**
 * review47 F4: `edit_file` rewrote the whole file through a lossy UTF-8 decode — a byte-order mark
 * was dropped, and every byte that is not UTF-8, anywhere in the file (a Latin-1 `é` far from the
 * edit), was written back as EF BF BD. Failed on main: the BOM file lost its first three bytes and
 * the Latin-1 file was edited with `e9` turned into `ef bf bd`. Now the file is decoded exactly: its
 * BOM kept, and a file that is not UTF-8 refused (`not_utf8`) with nothing written. `read_file` says
 * when what it shows is not the file's bytes; `write_file` and `edit_file` refuse text UTF-8 cannot
 * hold (a lone surrogate, written as U+FFFD) before any question.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import * as WorkspaceTools from "../../src/layers/WorkspaceTools.js"
import type { ToolContext } from "../../src/services/ToolRouter.js"

const cwd = realpathSync(mkdtempSync(join(tmpdir(), "effect-agent-edit-encoding-")))
afterAll(() => rmSync(cwd, { recursive: true, force: true }))
const tools = Effect.runSync(WorkspaceTools.make().pipe(Effect.provide(NodeContext.layer)))
const context: ToolContext = { sessionId: "s", turnId: "t", cwd, progress: () => Effect.void }
const call = (tool: string, args: Record<string, unknown>) =>
  Effect.runPromise(Effect.either(Effect.flatMap(tools.prepare({ toolCallId: "c", tool, args: args as never }, cwd), (prepared) => tools.execute(prepared, context))))
const bytesOf = (file: string) => readFileSync(join(cwd, file))
const bom = Buffer.from([0xef, 0xbb, 0xbf])
const latin1 = Buffer.from("caf\xe9 = 1\nx = 2\n", "latin1")

describe("edit_file keeps every byte it does not replace", () => {
  it("keeps a UTF-8 byte-order mark", async () => {
    writeFileSync(join(cwd, "bom.cs"), Buffer.concat([bom, Buffer.from("class A {}\n")]))
    expect(Either.isRight(await call("edit_file", { path: "bom.cs", oldString: "class A", newString: "class B" }))).toBe(true)
    expect(bytesOf("bom.cs")).toEqual(Buffer.concat([bom, Buffer.from("class B {}\n")]))
  })

  it("refuses a file that is not UTF-8 (not_utf8) and writes nothing, however far the edit is from its other bytes", async () => {
    writeFileSync(join(cwd, "latin1.txt"), latin1)
    const result = await call("edit_file", { path: "latin1.txt", oldString: "x = 2", newString: "x = 3" })
    expect(Either.isLeft(result) && result.left).toMatchObject({ errorCode: "not_utf8", message: expect.stringContaining("latin1.txt is not UTF-8 text") })
    expect(bytesOf("latin1.txt")).toEqual(latin1)
  })

  it("keeps UTF-8 text byte for byte: a replacement character that is in the file, noncharacters, CRLF", async () => {
    const text = Buffer.from("\uFFFD \uFFFE \u{10FFFF} é\r\nold\r\n")
    writeFileSync(join(cwd, "exact.txt"), text)
    expect(Either.isRight(await call("edit_file", { path: "exact.txt", oldString: "old", newString: "new" }))).toBe(true)
    expect(bytesOf("exact.txt")).toEqual(Buffer.from("\uFFFD \uFFFE \u{10FFFF} é\r\nnew\r\n"))
  })
})

describe("read_file and write_file", () => {
  it("read_file says when a file is not UTF-8: what it shows as U+FFFD is not in the file", async () => {
    writeFileSync(join(cwd, "shown.txt"), latin1)
    const result = await call("read_file", { path: "shown.txt" })
    expect(Either.isRight(result) && result.right.result).toBe("caf\uFFFD = 1\nx = 2\n\n[shown.txt is not UTF-8 text: its bytes that are not are shown as U+FFFD (\uFFFD), and edit_file cannot change it]")
    writeFileSync(join(cwd, "plain.txt"), Buffer.concat([bom, Buffer.from("plain\n")]))
    const plain = await call("read_file", { path: "plain.txt" })
    expect(Either.isRight(plain) && plain.right.result).toBe("plain\n")
  })

  it.each([
    ["write_file", { path: "new.txt", content: "a\ud800b" }, "content"],
    ["edit_file", { path: "bom.cs", oldString: "class B", newString: "class \udc00" }, "newString"]
  ])("%s refuses text with a lone surrogate (UTF-8 cannot hold it: it was written as U+FFFD)", async (tool, args, field) => {
    const before = bytesOf("bom.cs")
    const result = await Effect.runPromise(Effect.either(tools.prepare({ toolCallId: "c", tool, args: args as never }, cwd)))
    expect(Either.isLeft(result) && result.left).toMatchObject({
      errorCode: "invalid_arguments",
      message: `${field} cannot be written as UTF-8: it contains a lone surrogate (half of a UTF-16 pair)`
    })
    expect(bytesOf("bom.cs")).toEqual(before)
  })
})
