import { availableParallelism } from "node:os"
import { configDefaults, defineConfig } from "vitest/config"

/**
 * Two projects (docs/testing.md):
 * - `unit`: every test file but the integration ones. One process each: no child process, no
 *   PostgreSQL, no browser, servers only in-process. test/unitSetup.ts and test/architecture.test.ts
 *   hold the rule. `npm run test:unit`.
 * - `integration`: files named `*.integration.test.ts` — the CLI and the ACP agent as
 *   subprocesses, shell commands, the test PostgreSQL, Chromium, `npm pack`. Their global setup
 *   builds dist when it is stale (test/globalSetup.ts), starts PostgreSQL (test/postgresSetup.ts) and
 *   unpacks Chromium once (test/chromiumSetup.ts).
 *   `npm run test:integration`.
 * Both start with test/tmpSetup.ts: the run's temp folder (`TMPDIR` for the workers and the processes
 * they start), removed when the run ends.
 * `npm test` (and `vitest run`) runs both.
 */
const integration = "test/**/*.integration.test.ts"

export default defineConfig({
  // Examples import the package by name, as users do; here the name points at the sources.
  resolve: { alias: { "effect-agent": new URL("./src/index.ts", import.meta.url).pathname } },
  test: {
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: "forks",
    // vitest's default (a worker per core but one) and at least two: integration files mostly wait
    // on their subprocesses, so on 2 cores a second worker runs while the first waits.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    projects: [
      {
        extends: true,
        test: {
          name: "unit",
          include: ["test/**/*.test.ts", "examples/testing.ts"],
          exclude: [...configDefaults.exclude, integration],
          setupFiles: ["test/unitSetup.ts"],
          globalSetup: ["test/tmpSetup.ts"],
          // One worker process runs every unit file and keeps the modules it loaded: Effect and the
          // sources are loaded once, not once per file (that was most of a unit file's time). Each
          // file still runs its own test module; helpers' module state is shared (docs/testing.md).
          isolate: false,
          poolOptions: { forks: { singleFork: true, isolate: false } }
        }
      },
      {
        extends: true,
        test: {
          name: "integration",
          include: [integration],
          globalSetup: ["test/tmpSetup.ts", "test/globalSetup.ts", "test/postgresSetup.ts", "test/chromiumSetup.ts"],
          // A process per file, as before: what a file leaves running (servers, processes, pools) ends with it.
          isolate: true,
          // Only a safety net against a hung test: a test that runs a dozen CLI processes one after
          // another takes over 30 s on a machine shared by several suites.
          testTimeout: 120_000,
          hookTimeout: 120_000
        }
      }
    ]
  }
})
