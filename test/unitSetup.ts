/**
 * Runs before every file of the `unit` project (vitest.config.ts): a unit test stays in its own
 * process, so starting one — the CLI, a shell command through the workspace tools, `mkfifo` — throws,
 * naming the rule. Such a test belongs in a `*.integration.test.ts` file. test/architecture.test.ts
 * checks the same rule on the unit files' imports (child processes, PostgreSQL, the browser).
 */
import childProcess from "node:child_process"
import { syncBuiltinESMExports } from "node:module"

const starters = ["spawn", "spawnSync", "exec", "execSync", "execFile", "execFileSync", "fork"] as const

for (const name of starters) {
  Object.defineProperty(childProcess, name, {
    configurable: true,
    writable: true,
    value: () => {
      throw new Error(`a unit test started a process (child_process.${name}); name the file *.integration.test.ts (see docs/testing.md)`)
    }
  })
}
// ES module imports of node:child_process (`import { spawn } from …`) see the replacements too.
syncBuiltinESMExports()
