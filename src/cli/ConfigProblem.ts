/**
 * A bad configuration value as the CLI says it: one line naming each variable and what it wants
 * (`ANTHROPIC_MAX_OUTPUT_TOKENS: Expected an integer value but received "lots"`), a usage error —
 * not Effect's `ConfigError` printed as JSON.
 *
 * @since 0.1.0
 */
import * as ConfigError from "effect/ConfigError"
import { CliError } from "./CliError.js"
import { terminalSafe } from "./Terminal.js"

/** Each leaf of the error as `VARIABLE: what is wrong`, joined by "; " (an `And`/`Or` has several). */
export const described = (error: ConfigError.ConfigError): string => {
  switch (error._op) {
    case "And":
    case "Or":
      return `${described(error.left)}; ${described(error.right)}`
    case "InvalidData":
    case "MissingData":
    case "SourceUnavailable":
    case "Unsupported":
      // The environment provider's path delimiter is "_": ["ANTHROPIC", "MODEL"] is ANTHROPIC_MODEL.
      return `${error.path.join("_")}: ${error.message}`
  }
}

/** The error as the CLI's usage error (exit code 1). */
export const toCliError = (error: ConfigError.ConfigError): CliError =>
  new CliError({ reason: "invalid_arguments", message: terminalSafe(described(error)) })
