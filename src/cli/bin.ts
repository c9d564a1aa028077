#!/usr/bin/env node
/**
 * The `effect-agent` executable: a launcher, so that `EFFECT_AGENT_DEBUG=1` can turn on source maps
 * before the CLI's modules load (stacks then name `src/` files, bundled or not). The program is Main.ts.
 *
 * @since 0.1.0
 */
if (process.env.EFFECT_AGENT_DEBUG === "1") process.setSourceMapsEnabled(true)

await import("./Main.js")
