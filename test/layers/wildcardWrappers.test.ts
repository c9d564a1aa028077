/**
 * A rule's wildcard never stands for a program whose job is to run the command after it. The list
 * of such programs (`CommandRisk`) knew `env`, `nice`, `timeout`, `setsid`, `sudo`, … but not their
 * siblings: `--allow 'shell:*'` allowed `taskset 1 bash -c …`, `prlimit bash -c …`, `fakeroot`,
 * `valgrind`, `xvfb-run`, `flatpak-spawn --host` (out of a Flatpak's sandbox), `pkexec`, or a shell
 * it did not know (`ash`, `pwsh`); and, through a shell line a rule spells out (`* | tee log.txt`),
 * the shell's own words that run code: `! bash -c …`, `coproc bash`, `source x.sh`, `. ./x.sh`,
 * `trap … EXIT`. Where there is no sandbox (macOS, a container, `sandbox: "off"`) the rule is the
 * only guard.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll } from "vitest"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import * as ProjectLimits from "../../src/layers/settings/ProjectLimits.js"
import * as WorkspaceTools from "../../src/layers/WorkspaceTools.js"

const cwd = mkdtempSync(join(tmpdir(), "effect-agent-wildcard-wrappers-"))
afterAll(() => rmSync(cwd, { recursive: true, force: true }))

const tools = Effect.runSync(WorkspaceTools.make().pipe(Effect.provide(NodeContext.layer)))
const decide = async (rule: string, command: string) => {
  const call = await Effect.runPromise(tools.prepare({ toolCallId: "c1", tool: "shell", args: { command } }, cwd))
  return PermissionPolicy.decide({ rules: [{ name: "mine", tool: "shell", command: rule, decision: "allow" }] }, { sessionId: "s", cwd, call, remembered: [] })
}

const wrappers = [
  "taskset 1 bash -c x", "chrt -o 0 bash -c x", "prlimit --nofile=64 bash -c x", "numactl -N 0 bash -c x", "setarch x86_64 bash -c x",
  "linux64 bash -c x", "fakeroot bash -c x", "fakechroot bash -c x", "faketime now bash -c x", "eatmydata bash -c x", "valgrind bash -c x",
  "catchsegv bash -c x", "sg users bash", "newgrp users", "pkexec bash", "firejail bash", "bwrap --ro-bind a a bash", "flatpak-spawn --host bash",
  "runcon t bash", "cgexec -g cpu:a bash", "chpst bash", "xvfb-run bash", "dbus-run-session bash", "dbus-launch bash", "systemd-inhibit bash",
  "unbuffer bash", "rlwrap bash", "torsocks bash", "proxychains bash", "socat - EXEC:bash", "entr bash", "ifne bash", "chronic bash", "pee bash",
  "hyperfine x", "ash -c x", "yash -c x", "pwsh -c x", "nu -c x", "xonsh -c x", "elvish -c x", "rbash -c x", "toybox sh -c x",
  "irb", "erb x.erb", "ipython -c x", "luajit -e x", "Rscript -e x", "julia -e x", "guile -c x", "racket -e x", "jshell x", "groovy -e x",
  "elixir -e x", "erl -eval x", "tsx x.ts", "ts-node -e x", "wish x.tcl"
]

describe("a wildcard never stands for a program that runs the command after it", () => {
  for (const command of wrappers) {
    it(`shell:* does not allow ${JSON.stringify(command)}`, async () => {
      expect((await decide("*", command)).decision).not.toBe("allow")
    })
  }

  const throughShell = ["! bash -c x | tee log.txt", "coproc bash | tee log.txt", "source x.sh | tee log.txt", ". ./x.sh | tee log.txt", "trap bash EXIT | tee log.txt"]
  for (const command of throughShell) {
    it(`'* | tee log.txt' does not allow ${JSON.stringify(command)}`, async () => {
      expect((await decide("* | tee log.txt", command)).decision).not.toBe("allow")
    })
  }

  it("the rule still allows plain programs, and one naming the wrapper's whole line", async () => {
    expect((await decide("*", "ls -la"))).toEqual({ decision: "allow", policy: "mine" })
    expect((await decide("* | tee log.txt", "ls | tee log.txt"))).toEqual({ decision: "allow", policy: "mine" })
    expect((await decide("taskset 1 make", "taskset 1 make"))).toEqual({ decision: "allow", policy: "mine" })
  })

  it("a project's settings cannot allow them with wildcard arguments", () => {
    expect(ProjectLimits.command("taskset *")).toContain("runs what its arguments tell it to")
    expect(ProjectLimits.command("xvfb-run *")).toContain("runs what its arguments tell it to")
  })
})
