/**
 * review47 F7. A path rule `~/.ssh/**` was matched as text only: `~` was never expanded, so the same
 * file named absolutely (`/root/.ssh/id_rsa`, `/root/./.ssh/id_rsa`) was not denied, and `bypass`
 * read it. And deny and ask path rules were case-sensitive, where macOS's and Windows' file systems
 * are not: `.ENV` opens `.env`, and the walk keeps a path's case as written, so a deny of `.env` let
 * `read_file .ENV` through. Failed on main: each "deny" below was an allow (or `bypass`).
 * Now a rule's leading `~/` is the user's home — as written and as its real path — and a deny or ask
 * path rule matches with case folded (as a deny or ask command rule already did): it may match more
 * than it names on a case-sensitive disk, never less. An allow rule still matches exactly.
 */
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as Effect from "effect/Effect"
import { afterAll, describe, expect, it } from "vitest"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import * as WorkspaceTools from "../../src/layers/WorkspaceTools.js"
import type { PreparedCall } from "../../src/services/ToolRouter.js"

const root = NodeFs.realpathSync(NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "effect-agent-home-rules-")))
afterAll(() => NodeFs.rmSync(root, { recursive: true, force: true }))
const cwd = NodePath.join(root, "ws")
const home = NodePath.join(root, "home")
// The home as HOME names it, through a link (as /home → /usr/home): calls resolve to the real path.
const linkedHome = NodePath.join(root, "home_link")
NodeFs.mkdirSync(cwd)
NodeFs.mkdirSync(NodePath.join(home, ".ssh"), { recursive: true })
NodeFs.writeFileSync(NodePath.join(home, ".ssh", "id_rsa"), "key\n")
NodeFs.symlinkSync(home, linkedHome)

const tools = Effect.runSync(WorkspaceTools.make().pipe(Effect.provide(NodeContext.layer)))
const prepare = (tool: string, args: Record<string, unknown>): Promise<PreparedCall> =>
  Effect.runPromise(tools.prepare({ toolCallId: "c1", tool, args: args as never }, cwd))
const decide = (options: PermissionPolicy.Options, call: PreparedCall) => PermissionPolicy.decide(options, { sessionId: "s", cwd, call, remembered: [] })
const noSsh: PermissionPolicy.Rule = { name: "no-ssh", decision: "deny", path: "~/.ssh/**" }
const denied = { decision: "deny", policy: "no-ssh", reason: "the rule \"no-ssh\" forbids it" }

describe("a rule's ~/ is the user's home", () => {
  it.each([
    `${home}/.ssh/id_rsa`,
    `${home}/./.ssh/id_rsa`,
    `${linkedHome}/.ssh/id_rsa`,
    `${home}/.ssh/../.ssh/id_rsa`
  ])("a deny of ~/.ssh/** denies read_file %s, in bypass too", async (path) => {
    const call = await prepare("read_file", { path })
    expect(decide({ mode: "bypass", rules: [noSsh], home: linkedHome }, call)).toEqual(denied)
    expect(decide({ mode: "bypass", rules: [noSsh], home }, call)).toEqual(denied)
  })

  it("a folder named ~ in cwd is still matched as before, and the home itself is not the rule's", async () => {
    expect(decide({ mode: "bypass", rules: [noSsh], home }, await prepare("read_file", { path: "~/.ssh/id_rsa" }))).toEqual(denied)
    expect(decide({ mode: "bypass", rules: [noSsh], home }, await prepare("read_file", { path: `${home}/other` }))).toEqual({ decision: "allow", policy: "bypass" })
  })

  it("a grep of the home asks: its walk may reach ~/.ssh", async () => {
    expect(decide({ mode: "bypass", rules: [noSsh], home }, await prepare("grep", { pattern: "x", path: home }))).toMatchObject({ decision: "ask", policy: "no-ssh" })
  })

  it("the home is HOME when the options do not name one", async () => {
    const path = NodePath.join(process.env.HOME ?? NodeOs.homedir(), ".ssh", "id_rsa")
    expect(decide({ mode: "bypass", rules: [noSsh] }, await prepare("read_file", { path }))).toEqual(denied)
  })
})

describe("deny and ask path rules match with case folded; allow rules exactly", () => {
  const at = "/Users/u/proj"
  // As the workspace resolves a name on a case-insensitive disk: the case as written.
  const read = (requested: string): PreparedCall => ({
    toolCallId: "c",
    tool: "read_file",
    args: { path: requested },
    risk: "read",
    sequential: false,
    scope: "read_file",
    input: { path: requested },
    paths: [{ requested, resolved: `${at}/${requested}`, insideCwd: true, relative: requested, access: "read" }]
  })
  const decideAt = (options: PermissionPolicy.Options, call: PreparedCall) => PermissionPolicy.decide(options, { sessionId: "s", cwd: at, call, remembered: [] })
  const rules: ReadonlyArray<PermissionPolicy.Rule> = [
    { name: "no-env", decision: "deny", path: ".env" },
    { name: "no-secrets", decision: "deny", path: "secrets/**" },
    { name: "ask-keys", decision: "ask", path: "Keys/*.PEM" },
    { name: "users", decision: "deny", path: "/users/U/PROJ/private/**" }
  ]

  it.each([
    [".ENV", "no-env"],
    ["Secrets/key", "no-secrets"],
    ["SECRETS", "no-secrets"],
    ["keys/a.pem", "ask-keys"],
    ["private/x", "users"]
  ])("%s is matched by %s", (requested, policy) => {
    expect(decideAt({ rules }, read(requested))).toMatchObject({ policy })
  })

  it("an allow rule does not widen with case", () => {
    expect(decideAt({ mode: "readOnly", rules: [{ name: "src", decision: "allow", tool: "read_file", path: "src/**" }] }, read("SRC/a.ts"))).toEqual({ decision: "allow", policy: "read-only/read" })
    expect(decideAt({ rules: [{ name: "src", decision: "allow", tool: "write_file", path: "src/**" }] }, { ...read("SRC/a.ts"), tool: "write_file", risk: "write" })).toMatchObject({ decision: "ask" })
  })

  it("the grep tool's walk leaves out what a folded rule matches", () => {
    const walk: PreparedCall = { ...read("."), tool: "grep", paths: [{ requested: ".", resolved: at, insideCwd: true, relative: ".", access: "read", walked: true, leavesOut: true }] }
    const fence = PermissionPolicy.fence({ rules }, { sessionId: "s", cwd: at, call: walk, remembered: [] })!
    expect(fence({ real: `${at}/.Env`, relative: ".Env", written: ".Env" })).toBe(true)
    expect(fence({ real: `${at}/SECRETS/k`, relative: "SECRETS/k", written: "SECRETS/k" })).toBe(true)
    expect(fence({ real: `${at}/src/a.ts`, relative: "src/a.ts", written: "src/a.ts" })).toBe(false)
  })
})
