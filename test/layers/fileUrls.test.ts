/**
 * A `file:` URL names a file. `curl file:///etc/passwd` reads it like `cat /etc/passwd`, but the
 * shell's path check read the word as a relative name inside cwd (`file:/etc/passwd` under it), so
 * `--allow 'shell:curl *'` — or "always" on `curl https://…`, which covers `shell:curl:network` —
 * let `curl file:///home/u/.aws/credentials -o creds.txt` read a file outside the workspace without
 * asking. The sandbox hides the credential folders; where there is none, the outside-cwd question
 * is the only guard. curl also decodes `%XX` in the path and expands `{a,b}` and `[1-3]` itself.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll } from "vitest"
import type { RememberedPermission } from "../../src/domain/SessionState.js"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import * as WorkspaceTools from "../../src/layers/WorkspaceTools.js"

const cwd = realpathSync(mkdtempSync(join(tmpdir(), "effect-agent-file-urls-")))
writeFileSync(join(cwd, "a.txt"), "a")
afterAll(() => rmSync(cwd, { recursive: true, force: true }))

const tools = Effect.runSync(WorkspaceTools.make().pipe(Effect.provide(NodeContext.layer)))
const decide = async (command: string, remembered: ReadonlyArray<RememberedPermission> = []) => {
  const call = await Effect.runPromise(tools.prepare({ toolCallId: "c1", tool: "shell", args: { command } }, cwd))
  return PermissionPolicy.decide({ rules: [{ name: "curl", tool: "shell", command: "curl *", decision: "allow" }] }, { sessionId: "s", cwd, call, remembered })
}

describe("a file: URL is a path for the outside-cwd check", () => {
  for (const command of [
    "curl file:///etc/passwd",
    "curl FILE:///etc/passwd",
    "curl file://localhost/etc/passwd",
    "curl file:/etc/passwd",
    "curl --url=file:///etc/passwd",
    "curl -o out.txt file:///etc/passwd",
    "curl file:///etc/%70asswd",
    `curl file://${cwd}/../outside.txt`,
    "curl file:///etc/pass{wd,x}",
    "curl file:///etc/passw[a-z]"
  ]) {
    it(`${command} asks`, async () => {
      expect(await decide(command)).toMatchObject({ decision: "ask", policy: "outside-cwd" })
      expect((await decide(command, [{ scope: "shell:curl:network", decision: "allow", sequence: 1 }])).decision).toBe("ask")
    })
  }

  it("a file: URL inside the workspace is allowed by the rule as before", async () => {
    expect(await decide(`curl file://${cwd}/a.txt`)).toEqual({ decision: "allow", policy: "curl" })
    expect(await decide("curl https://example.com/a")).toEqual({ decision: "allow", policy: "curl" })
  })
})
