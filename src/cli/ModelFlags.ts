/**
 * The model flags (`--provider`, `--model`, `--base-url`, `--script`, `--record-requests`, `--no-prompt-cache`, the thinking ones):
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
  recordRequests: Options.text("record-requests").pipe(
    Options.optional,
    Options.withDescription("Append every request the model is sent to this file, one JSON line each (a new or regular file; never through a link)")
  ),
  noPromptCache: Options.boolean("no-prompt-cache").pipe(
    Options.withDescription("Send Anthropic no prompt-cache breakpoints (as \"promptCaching\": false in your settings does); cached tokens are still reported")
  ),
  thinkingBudget: Options.integer("thinking-budget").pipe(
    Options.optional,
    Options.withDescription(
      "Ask Anthropic for extended thinking with this many tokens of budget (at least 1024, below the output token limit; as ANTHROPIC_THINKING_BUDGET does)"
    )
  ),
  thinking: Help.choice("thinking", ["adaptive"]).pipe(
    Options.optional,
    Options.withDescription(
      "Ask Anthropic for adaptive thinking: the model decides when and how much to think (current Claude models; as ANTHROPIC_THINKING=adaptive does; not with --thinking-budget)"
    )
  ),
  thinkingDisplay: Help.choice("thinking-display", ["summarized", "omitted"]).pipe(
    Options.optional,
    Options.withDescription("How Anthropic returns the thinking asked for: its summarized text, or omitted (signed blocks with no text; as ANTHROPIC_THINKING_DISPLAY does)")
  ),
  effort: Help.choice("effort", ["low", "medium", "high", "xhigh", "max"]).pipe(
    Options.optional,
    Options.withDescription("How much effort Anthropic's model puts into its answer (with adaptive thinking, how much it thinks; as ANTHROPIC_EFFORT does)")
  )
}

/** What the CLI was told about the model. */
export interface Choice {
  readonly provider: Option.Option<"anthropic" | "openai" | "fake">
  readonly model: Option.Option<string>
  readonly baseUrl: Option.Option<string>
  readonly script: Option.Option<string>
  /** `--record-requests`: the file every request the model is sent is appended to. */
  readonly recordRequests?: Option.Option<string> | undefined
  /** `--no-prompt-cache`; absent means false. */
  readonly noPromptCache?: boolean | undefined
  /** `--thinking-budget`; absent (or none) asks for no thinking unless the environment does. */
  readonly thinkingBudget?: Option.Option<number> | undefined
  /** `--thinking adaptive`; as `thinkingBudget`, and not with it. */
  readonly thinking?: Option.Option<"adaptive"> | undefined
  /** `--thinking-display`; absent (or none) leaves the display to the environment, else the model. */
  readonly thinkingDisplay?: Option.Option<"summarized" | "omitted"> | undefined
  /** `--effort`; absent (or none) leaves it to the environment, else the model. */
  readonly effort?: Option.Option<"low" | "medium" | "high" | "xhigh" | "max"> | undefined
}
