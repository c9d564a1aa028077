/**
 * A deny or ask rule naming a subcommand holds after the program's own options, as it did for git's
 * (`git -C . push`). `--deny 'shell:npm publish*'` beside `--allow 'shell:*'` let `npm --prefix x
 * publish`, `npm -w pkg publish`, `yarn --cwd x publish`, `pnpm -C x publish`, `cargo --manifest-path
 * x publish`, `make -C x deploy`, `docker --context x push`, `kubectl --context x delete` and
 * `terraform -chdir=x apply` run without a question (in `bypass` too). An allow rule does not widen
 * the same way: `npm test*` allows no `npm --prefix /elsewhere test`. And a package manager's
 * subcommand is read after its options for its risk too: "always" on `npm test` (`shell:npm:write`)
 * covered `npm --prefix . exec <package>`, which runs a package as `npm exec` does.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { mkdirSync, mkdtempSync, realpathSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll } from "vitest"
import type { RememberedPermission } from "../../src/domain/SessionState.js"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import * as WorkspaceTools from "../../src/layers/WorkspaceTools.js"

const cwd = realpathSync(mkdtempSync(join(tmpdir(), "effect-agent-global-options-")))
mkdirSync(join(cwd, "x"))
afterAll(() => rmSync(cwd, { recursive: true, force: true }))

const tools = Effect.runSync(WorkspaceTools.make().pipe(Effect.provide(NodeContext.layer)))
const prepare = (command: string) => Effect.runPromise(tools.prepare({ toolCallId: "c1", tool: "shell", args: { command } }, cwd))
const decide = async (
  mode: PermissionPolicy.Mode,
  command: string,
  rules: ReadonlyArray<PermissionPolicy.Rule>,
  remembered: ReadonlyArray<RememberedPermission> = []
) => PermissionPolicy.decide({ mode, rules }, { sessionId: "s", cwd, call: await prepare(command), remembered })

const fenced: ReadonlyArray<readonly [pattern: string, commands: ReadonlyArray<string>]> = [
  // npm runs a subcommand named by a prefix of it.
  ["npm publish*", ["npm pub", "npm publi --tag x", "npm --prefix x pub", "/usr/bin/npm pub", "env npm pub", "npm --prefix x publish", "npm --prefix=x publish", "npm -w pkg publish", "npm --workspace pkg publish", "npm -C x publish", "npm --silent -w a -w b publish"]],
  ["yarn publish*", ["yarn --cwd x publish", "yarn --cwd=x publish"]],
  ["pnpm publish*", ["pnpm -C x publish", "pnpm --dir x publish", "pnpm -Cx publish", "pnpm --filter pkg publish", "pnpm -r publish"]],
  ["cargo publish*", ["cargo --manifest-path x/Cargo.toml publish", "cargo +nightly publish", "cargo --locked publish", "cargo -Z unstable-options publish"]],
  ["make deploy*", ["make -C x deploy", "make -Cx deploy", "make --directory=x deploy", "make -f x/Makefile deploy", "make -j 4 deploy", "make -j deploy", "make V=1 deploy", "make clean deploy", "make -C x clean build deploy"]],
  ["docker push*", ["docker --context x push img", "docker -H unix:///x push img", "docker --log-level debug push img"]],
  ["kubectl delete*", ["kubectl --context x delete pod p", "kubectl -n ns delete pod p", "kubectl --kubeconfig=x delete pod p"]],
  ["terraform apply*", ["terraform -chdir=x apply", "terraform -chdir=x apply -auto-approve"]],
  ["helm uninstall*", ["helm --kube-context x uninstall r", "helm -n ns uninstall r"]]
]

describe("a deny or ask rule holds after the program's own options", () => {
  for (const [pattern, commands] of fenced) {
    for (const command of commands) {
      it(`${pattern}: ${JSON.stringify(command)} is denied in bypass and asked in default`, async () => {
        const deny: PermissionPolicy.Rule = { name: "fenced", tool: "shell", command: pattern, decision: "deny" }
        const ask: PermissionPolicy.Rule = { name: "fenced", tool: "shell", command: pattern, decision: "ask" }
        const anything: PermissionPolicy.Rule = { name: "anything", tool: "shell", command: "*", decision: "allow" }
        expect(await decide("bypass", command, [deny, anything])).toMatchObject({ decision: "deny", policy: "fenced" })
        expect(await decide("default", command, [ask, anything])).toMatchObject({ decision: "ask", policy: "fenced" })
      })
    }
  }

  it("other subcommands, and an option's value that reads like one, are not fenced", async () => {
    const rules: ReadonlyArray<PermissionPolicy.Rule> = [
      { name: "fenced", tool: "shell", command: "npm publish*", decision: "deny" },
      { name: "anything", tool: "shell", command: "*", decision: "allow" }
    ]
    expect(await decide("default", "npm --prefix x test", rules)).toEqual({ decision: "allow", policy: "anything" })
    expect(await decide("default", "npm -w publish test", rules)).toEqual({ decision: "allow", policy: "anything" })
    expect(await decide("default", "npm p", rules)).toEqual({ decision: "allow", policy: "anything" })
    expect(await decide("default", "npm pack", rules)).toEqual({ decision: "allow", policy: "anything" })
    for (const command of ["make -j 4 test", "make -C deploy test", "make test redeploy"]) {
      expect(await decide("default", command, [{ name: "fenced", tool: "shell", command: "make deploy*", decision: "deny" }, rules[1]!]), command)
        .toEqual({ decision: "allow", policy: "anything" })
    }
  })

  it("an allow rule does not widen through the same options", async () => {
    const rules: ReadonlyArray<PermissionPolicy.Rule> = [{ name: "tests", tool: "shell", command: "npm test*", decision: "allow" }]
    expect(await decide("default", "npm test", rules)).toEqual({ decision: "allow", policy: "tests" })
    expect((await decide("default", "npm --prefix x test", rules)).decision).toBe("ask")
    expect((await decide("default", "npm --prefix /elsewhere test", rules)).decision).toBe("ask")
    expect((await decide("default", "make -C x test", [{ name: "tests", tool: "shell", command: "make test*", decision: "allow" }])).decision).toBe("ask")
  })

  it("a linear pass: a line of many program names and options", async () => {
    const rules: ReadonlyArray<PermissionPolicy.Rule> = [{ name: "fenced", tool: "shell", command: "npm publish*", decision: "deny" }]
    expect(await decide("bypass", `npm ${"-w npm ".repeat(16_000)}-w x publish`, rules)).toMatchObject({ decision: "deny", policy: "fenced" })
  })
})

describe("a package manager's subcommand is read after its options for its risk", () => {
  const always: ReadonlyArray<RememberedPermission> = [{ scope: "shell:npm:write", decision: "allow", sequence: 1 }]
  for (const command of ["npm --prefix . exec cowsay", "npm -w pkg exec cowsay", "npm --silent x cowsay", "pnpm -C x dlx cowsay", "pnpm -r exec cowsay", "yarn --cwd x dlx cowsay", "yarn workspace pkg exec cowsay", "yarn workspaces foreach run build",
    // npm takes a prefix of a command, and init <name> runs create-<name>.
    "npm exe cowsay", "npm init react-app", "npm create vite", "npm cr vite", "npm --prefix . ini vite"]) {
    it(`${JSON.stringify(command)} is remembered for its exact line only`, async () => {
      const call = await prepare(command)
      expect(call.scope).toBe(`shell:exact:${command}`)
      const program = command.split(" ")[0]!
      const remembered = [{ ...always[0]!, scope: `shell:${program}:write` }]
      expect((await decide("default", command, [], remembered)).decision).toBe("ask")
    })
  }

  it("its other subcommands keep their own risk", async () => {
    expect((await prepare("npm --prefix x test")).scope).toBe("shell:npm:write")
    expect((await prepare("npm -w pkg install")).scope).toBe("shell:npm:network")
    expect((await prepare("npm init -y")).scope).toBe("shell:npm:write")
    expect((await decide("default", "npm test", [], always)).decision).toBe("allow")
  })
})
