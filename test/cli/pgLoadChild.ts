/**
 * A fresh process for pgLoad.integration.test.ts: loads the PostgreSQL driver, through
 * `withoutFetchSniff` or (`plain`) straight, and says whether Node's fetch (undici) was loaded and
 * whether a `navigator` is left behind.
 */
import { withoutFetchSniff } from "../../src/cli/PgLoad.js"

// The driver the store's `@effect/sql-pg` loads (named through a variable: it ships no types of its own).
const driver = "pg"
const hadNavigator = "navigator" in globalThis
await (process.argv[2] === "plain" ? import(driver) : withoutFetchSniff(() => import(driver)))
console.log(JSON.stringify({
  hadNavigator,
  navigator: "navigator" in globalThis,
  // Node's own modules loaded so far (not typed by @types/node).
  undici: (process as unknown as { readonly moduleLoadList: ReadonlyArray<string> }).moduleLoadList.some((name) => name.includes("undici"))
}))
