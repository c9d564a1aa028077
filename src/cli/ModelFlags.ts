/**
 * The model flags (`--provider`, `--model`, `--base-url`, `--script`, `--no-prompt-cache`):
 * definitions only, for the command tree; the model layer they choose is in Models.ts.
 *
 * @since 0.10.0
 */
import * as Options from "@effect/cli/Options"
import type * as Option from "effect/Option"
import * as Help from "./Help.js"

/** The CLI's model options. */
export const options = {
  provider: Help.choice("provider", ["anthropic", "openai", "fake"]).pipe(
    Options.optional,
    Options.withDescription("The model provider (default: anthropic if ANTHROPIC_API_KEY is set, else openai if OPENAI_API_KEY is, else the echo model)")
  ),
  model: Options.text("model").pipe(Options.optional, Options.withDescription("The model name")),
  baseUrl: Options.text("base-url").pipe(
    Options.optional,
    Options.withDescription("The provider's API address, e.g. an OpenAI-compatible server such as http://localhost:11434/v1")
  ),
  script: Help.existingFile("script").pipe(
    Options.optional,
    Options.withDescription("A JSON file of scripted model responses, answered by the fake model")
  ),
  noPromptCache: Options.boolean("no-prompt-cache").pipe(
    Options.withDescription("Send Anthropic no prompt-cache breakpoints (as \"promptCaching\": false in your settings does); cached tokens are still reported")
  ),
  thinkingBudget: Options.integer("thinking-budget").pipe(
    Options.optional,
    Options.withDescription(
      "Ask Anthropic for extended thinking with this many tokens of budget (at least 1024, below the output token limit; as ANTHROPIC_THINKING_BUDGET does)"
    )
  )
}

/** What the CLI was told about the model. */
export interface Choice {
  readonly provider: Option.Option<"anthropic" | "openai" | "fake">
  readonly model: Option.Option<string>
  readonly baseUrl: Option.Option<string>
  readonly script: Option.Option<string>
  /** `--no-prompt-cache`; absent means false. */
  readonly noPromptCache?: boolean | undefined
  /** `--thinking-budget`; absent (or none) asks for no thinking unless the environment does. */
  readonly thinkingBudget?: Option.Option<number> | undefined
}
