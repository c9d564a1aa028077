/**
 * Command lines a hostile model writes, through the real shell tool's preparation: substitutions
 * nested 20,000 deep overflowed the parser's recursion (a RangeError: a defect, not an answer), and
 * a line of megabytes made the parse and every rule's match hold the event loop for seconds. Both
 * are refused as invalid arguments, typed, before anything runs.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import * as CommandLine from "../../src/layers/workspace/CommandLine.js"
import * as WorkspaceTools from "../../src/layers/WorkspaceTools.js"

const cwd = mkdtempSync(join(tmpdir(), "effect-agent-shell-hostile-"))
afterAll(() => rmSync(cwd, { recursive: true, force: true }))

const tools = Effect.runSync(WorkspaceTools.make().pipe(Effect.provide(NodeContext.layer)))
const prepared = (command: string) => Effect.runPromiseExit(tools.prepare({ toolCallId: "c1", tool: "shell", args: { command } }, cwd))

const expectRefused = (exit: Exit.Exit<unknown, unknown>, message: RegExp) => {
  expect(Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error : exit).toMatchObject({ errorCode: "invalid_arguments", message: expect.stringMatching(message) })
}

describe("hostile command lines", () => {
  it("substitutions nested deeper than a shell line needs are refused, typed, not a stack overflow", async () => {
    for (const open of ["$(", "${", "\"$("]) {
      const close = open === "${" ? "}" : open === "$(" ? ")" : ")\""
      const line = `echo ${open.repeat(20_000)}x${close.repeat(20_000)}`
      expect(CommandLine.tokenize(line).invalid).toMatch(/nested deeper than/)
    }
    expectRefused(await prepared(`echo ${"$(".repeat(20_000)}x${")".repeat(20_000)}`), /nested deeper than 64/)
    // Nesting a person writes is read as before.
    const fine = await prepared(`echo "$(echo "$(echo "$(date)")")"`)
    expect(Exit.isSuccess(fine)).toBe(true)
  })

  it("a line longer than `sh -c` can take is refused before it is parsed", async () => {
    expectRefused(await prepared(`echo ${"a ".repeat(70_000)}`), /131072/)
    expect(Exit.isSuccess(await prepared(`echo ${"a ".repeat(1000)}`))).toBe(true)
  })
})
