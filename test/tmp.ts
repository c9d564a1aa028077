/**
 * Where tests put files outside the run's temp folder (test/tmpSetup.ts makes and removes both).
 */
import { tmpdir } from "node:os"

/**
 * A folder of this run's outside `/tmp`, for files a sandboxed command must see (it gets a private
 * `/tmp`). `/var/tmp` when the file runs without the run's setup.
 */
export const outsideTmp = (): string => process.env.EFFECT_AGENT_TEST_OUTSIDE_TMP ?? "/var/tmp"

/** The machine's temp folder (not the run's), for what is meant to outlive a run. */
export const hostTmp = (): string => process.env.EFFECT_AGENT_TEST_HOST_TMP ?? tmpdir()
