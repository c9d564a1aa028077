/**
 * The options several commands share — where sessions are stored, the permission mode and the
 * `--allow` / `--deny` rules — and the store they choose.
 *
 * @since 0.1.0
 */
import * as Options from "@effect/cli/Options"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { JsonlEventStore, PermissionPolicy } from "../index.js"
import { CliError } from "./CliError.js"

/** `--data-dir` and `--store`. */
export const storage = {
  dataDir: Options.directory("data-dir").pipe(
    Options.withDefault(".effect-agent"),
    Options.withDescription("Where sessions are stored")
  ),
  store: Options.choice("store", ["jsonl", "sqlite"]).pipe(
    Options.withDefault("jsonl" as const),
    Options.withDescription("jsonl: a file per session (default); sqlite: one database, <data-dir>/effect-agent.sqlite")
  )
}

/** Where sessions are stored. */
export interface Storage {
  readonly dataDir: string
  readonly store: "jsonl" | "sqlite"
}

/** `--mode`; without it, the mode of the session's `.effect-agent/settings.json`, else `default`. */
export const mode = (description: string) => Options.choice("mode", PermissionPolicy.Mode.literals).pipe(Options.optional, Options.withDescription(description))

/** `--allow` / `--deny` rules, before the rules of `.effect-agent/settings.json` (see Settings.ts). */
export const rules = {
  allow: Options.text("allow").pipe(
    Options.repeated,
    Options.withDescription(
      "Allow calls without asking: tool or tool:pattern, repeatable. shell:<command glob> (e.g. 'shell:npm test'), <file tool>:<path glob> (e.g. 'edit_file:src/**'), or a tool name (e.g. grep)"
    )
  ),
  deny: Options.text("deny").pipe(
    Options.repeated,
    Options.withDescription("Deny calls, same syntax as --allow (e.g. 'shell:git push*'); a matching deny always wins")
  )
}

/** SQLite is an optional peer (a native module): loaded only when chosen, with one clear line when it is missing. */
const sqliteLayer = (filename: string) =>
  Layer.unwrapEffect(
    Effect.tryPromise({
      try: () => import("../sqlite.js"),
      catch: () =>
        new CliError({
          reason: "missing_package",
          message: "--store sqlite needs the optional packages @effect/sql and @effect/sql-sqlite-node: npm install @effect/sql @effect/sql-sqlite-node"
        })
    }).pipe(Effect.map(({ SqliteEventStore }) => SqliteEventStore.layer({ filename })))
  )

/** The store the options chose. */
export const storeLayer = ({ dataDir, store }: Storage) =>
  store === "sqlite" ? sqliteLayer(`${dataDir}/effect-agent.sqlite`) : JsonlEventStore.layer({ dataDir })
