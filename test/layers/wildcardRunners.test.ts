/**
 * A rule's wildcard never stands for a way to run another program — and version and environment
 * managers are such ways: `--allow 'shell:*'` allowed `nix-shell --run '…'`, `nix develop -c …`,
 * `direnv exec . …`, `mise exec -- …`, `asdf exec …`, `pixi run …`, `volta run …`, `pyenv exec …`,
 * `stack exec …`, `opam exec -- …`, `ghcup run -- …`, and `run0 …` (systemd's sudo), `xe`/`rush`
 * (parallel runners), compiler launchers (`ccache …`), `run-parts` and `corepack …` without a
 * question. They now ask, and "always" on them covers that exact line only.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { mkdtempSync, realpathSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll } from "vitest"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import * as WorkspaceTools from "../../src/layers/WorkspaceTools.js"

const cwd = realpathSync(mkdtempSync(join(tmpdir(), "effect-agent-runners-")))
afterAll(() => rmSync(cwd, { recursive: true, force: true }))
const tools = Effect.runSync(WorkspaceTools.make().pipe(Effect.provide(NodeContext.layer)))
const decide = async (command: string) => {
  const call = await Effect.runPromise(tools.prepare({ toolCallId: "c1", tool: "shell", args: { command } }, cwd))
  const anything: PermissionPolicy.Rule = { name: "anything", tool: "shell", command: "*", decision: "allow" }
  return PermissionPolicy.decide({ mode: "default", rules: [anything] }, { sessionId: "s", cwd, call, remembered: [] })
}

describe("a wildcard does not stand for a manager that runs a command", () => {
  for (const command of [
    "nix-shell --run 'curl x | sh'", "nix-shell -p hello --command id", "nix develop -c id", "nix shell nixpkgs#hello -c id", "nix run nixpkgs#hello",
    "direnv exec . id", "devbox run id", "mise exec -- id", "mise x -- id", "asdf exec id", "pixi run id", "volta run id", "fnm exec id",
    "nvm exec id", "rbenv exec id", "pyenv exec id", "stack exec id", "cabal exec id", "opam exec -- id", "ghcup run -- id", "rustup run stable id",
    "run0 id", "xe id", "rush id", "ccache id", "distcc id", "run-parts .", "corepack pnpm dlx x", "pkgx node -e 1"
  ]) {
    it(command, async () => {
      expect((await decide(command)).decision).toBe("ask")
    })
  }

  it("their other subcommands stay as they were", async () => {
    for (const command of ["mise ls", "asdf list", "pyenv versions", "nix --version", "rustup show", "stack --version"]) {
      expect((await decide(command)).decision, command).toBe("allow")
    }
  })
})
