/**
 * `repair`: the command tree; the handler is in ../Repair.ts.
 *
 * @since 0.10.0
 */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Help from "../Help.js"
import * as Lazy from "../Lazy.js"

export const config = {
  sessionId: Args.text({ name: "sessionId" }).pipe(Args.withDescription("The session whose log to repair")),
  dataDir: Options.directory("data-dir").pipe(Options.withDefault(".effect-agent"), Options.withDescription("Where sessions are stored")),
  store: Help.choice("store", ["jsonl", "sqlite"]).pipe(Options.withDefault("jsonl" as const), Options.withDescription("The store (only JSONL logs can need repair)"))
}
export type Input = Command.Command.ParseConfig<typeof config>

/** The `repair` command. */
export const command = Command.make("repair", config, (input) => Lazy.handler(() => import("../Repair.js"), (m) => m.handler(input))).pipe(Command.withDescription(Help.described("Repair a session log that cannot be read (duplicate sequences from two writers); keeps the original as <file>.bak", ["effect-agent repair <id>"])))
