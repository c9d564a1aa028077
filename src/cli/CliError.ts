/**
 * The CLI's own errors: what the user asked for cannot be done as asked. bin.ts prints `message` as
 * one line and exits 1.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

/** A problem with how the CLI was called or set up: a missing key, a missing optional package, a bad file. */
export class CliError extends Schema.TaggedError<CliError>()("CliError", {
  reason: Schema.Literal("missing_api_key", "invalid_api_key", "missing_package", "invalid_file", "invalid_arguments", "invalid_input"),
  message: Schema.String
}) {}
