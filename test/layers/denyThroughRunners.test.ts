/**
 * A deny or ask rule holds for a command line a runner takes as an argument. In `bypass`, `--deny
 * 'shell:git push*'` let `watch 'git push'`, `tmux new 'git push'`, `tmux send-keys 'git push'
 * Enter`, `parallel ::: 'git push'`, `parallel git ::: push`, `ssh host 'git push'`, `ssh -o
 * ProxyCommand='git push' host`, `rsync -e '…'`, `tar --to-command='…'`, `git clone -u '…'`,
 * `less '+!…'`, `python3 -c 'os.system("…")'` and `xargs -a f git` run: the rule saw the line's
 * words, and the runner's line was one quoted word (or made of words it composes or reads). Under
 * `shell:*` every such line asks already (a wildcard never stands for a runner: wildcardWrappers).
 */
import { describe, expect, it } from "@effect/vitest"
import { mkdtempSync, realpathSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll } from "vitest"
import * as PermissionPolicy from "../../src/layers/PermissionPolicy.js"
import { anything, shellDecisions } from "./shellDecisions.js"

const cwd = realpathSync(mkdtempSync(join(tmpdir(), "effect-agent-runners-")))
afterAll(() => rmSync(cwd, { recursive: true, force: true }))

const { decide } = shellDecisions(cwd)

const fenced: ReadonlyArray<readonly [pattern: string, commands: ReadonlyArray<string>]> = [
  ["git push*", [
    "watch 'git push'", "watch -n1 'git push --force'", "FOO=1 watch 'git push'", "nice watch 'git push'",
    "tmux new 'git push'", "tmux new-session -d 'git push'", "tmux new-window 'git push'", "tmux send-keys 'git push' Enter",
    "tmux send-keys -t x 'git push' C-m", "screen -S x -X stuff 'git push\n'",
    "parallel ::: 'git push'", "parallel git ::: push", "parallel git {} ::: push", "parallel -j4 git {1} {2} ::: pull push ::: origin",
    "parallel -a f git", "parallel git :::: f", "xargs -a f git", "xargs --arg-file=f -I{} git {}",
    "ssh host 'git push'", "ssh -o ProxyCommand='git push' host", "ssh -oProxyCommand='git push' host", "ssh -o 'ProxyCommand git push' host",
    "rsync -e 'git push' a b:c", "rsync --rsh='git push' a b:c", "rsync --rsync-path='git push' a b:c", "scp -S 'git push' a b:c",
    "git clone -u 'git push' x", "git clone --upload-pack='git push' x", "tar --to-command='git push' -xf a.tar",
    "tar --checkpoint-action=exec='git push' -cf a.tar x", "less '+!git push' f", "vim -c '!git push'",
    "python3 -c 'import os; os.system(\"git push\")'"
  ]],
  ["git push origin*", ["parallel git ::: pull push ::: origin"]],
  ["rm -rf*", ["watch 'rm -rf x'", "tmux new 'rm -rf x'", "ssh host 'rm -rf /'", "parallel rm ::: -rf"]]
]

describe("a deny or ask rule holds for a line a runner takes as an argument", () => {
  for (const [pattern, commands] of fenced) {
    for (const command of commands) {
      it(`${pattern}: ${JSON.stringify(command)} is denied in bypass, asked in default, and asked under shell:*`, async () => {
        const deny: PermissionPolicy.Rule = { name: "fenced", tool: "shell", command: pattern, decision: "deny" }
        const ask: PermissionPolicy.Rule = { name: "fenced", tool: "shell", command: pattern, decision: "ask" }
        expect(await decide("bypass", command, [deny, anything])).toMatchObject({ decision: "deny", policy: "fenced" })
        expect(await decide("default", command, [ask, anything])).toMatchObject({ decision: "ask", policy: "fenced" })
        expect(await decide("default", command, [anything])).toMatchObject({ decision: "ask" })
      })
    }
  }

  it("a runner's line that is not what the rule names runs, and a word of a command that runs nothing is not read", async () => {
    const deny: PermissionPolicy.Rule = { name: "fenced", tool: "shell", command: "git push*", decision: "deny" }
    for (const command of ["watch 'git status'", "parallel git ::: status", "xargs -a f git status", "ssh host 'git pull'", "git commit -m 'then git push'"]) {
      expect(await decide("bypass", command, [deny, anything]), command).toMatchObject({ decision: "allow" })
    }
  })

  it("a parallel line of more combinations than are spelled out counts as running what its template may", async () => {
    const deny: PermissionPolicy.Rule = { name: "fenced", tool: "shell", command: "git push origin*", decision: "deny" }
    const many = Array.from({ length: 20 }, (_, i) => `a${i}`).join(" ")
    expect(await decide("bypass", `parallel git ::: ${many} push ::: ${many} origin`, [deny, anything])).toMatchObject({ decision: "deny", policy: "fenced" })
  })
})
