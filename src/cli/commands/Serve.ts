/**
 * `serve`: the command tree; the handler is in ../Serve.ts.
 *
 * @since 0.10.0
 */
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Flags from "../Flags.js"
import * as Help from "../Help.js"
import * as Lazy from "../Lazy.js"
import * as ModelFlags from "../ModelFlags.js"

const mode = Flags.mode("Permissions of every session: default, acceptEdits, readOnly, bypass (default: your settings' mode, else that of each session's trusted .effect-agent/settings.json, else default)")

const port = Help.number("port", "integer").pipe(
  Options.withDefault(4477),
  Options.withDescription("The port to listen on (0: any free port)")
)
const host = Options.text("host").pipe(
  Options.withDefault("127.0.0.1"),
  Options.withDescription("The address to listen on (default 127.0.0.1: this machine only)")
)
const allowedHost = Options.text("allowed-host").pipe(
  Options.repeated,
  Options.withDescription(
    "A host name clients may reach the server by besides localhost and IP addresses (a reverse proxy's, this machine's DNS name), repeatable; requests naming any other host are refused (DNS rebinding)"
  )
)

export const config = { port, host, allowedHost, mode, ...Flags.rules, ...Flags.sandbox, ...Flags.instructions, ...Flags.web, ...Flags.subagents, ...ModelFlags.options, ...Flags.storage, ...Flags.cluster }
export type Input = Command.Command.ParseConfig<typeof config>

/** The `serve` command. */
export const command = Command.make("serve", config, (input) => Lazy.handler(() => import("../Serve.js"), (m) => m.handler(input))).pipe(Command.withDescription(Help.described("Serve the HTTP + SSE API and the web session viewer (127.0.0.1 by default; a token guards every route)", ["effect-agent serve", "effect-agent serve --port 8787 --store sqlite"])))
