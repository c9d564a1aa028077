#!/usr/bin/env node
/**
 * The `effect-agent` executable: a launcher, so that `EFFECT_AGENT_DEBUG=1` can turn on source maps
 * before the CLI's modules load (stacks then name `src/` files, bundled or not), and so that a start
 * compiles as little as it can (CodeCache.ts: on Node 20 the program's CommonJS bundle with V8's
 * code cache, `main.cjs`; otherwise the ES modules, under Node's own compile cache where it has
 * one). The program is Main.ts.
 *
 * @since 0.1.0
 */
import { fileURLToPath } from "node:url"
import * as CodeCache from "./CodeCache.js"

if (process.env.EFFECT_AGENT_DEBUG === "1") process.setSourceMapsEnabled(true)

if (!CodeCache.start({ bundle: fileURLToPath(new URL("./main.cjs", import.meta.url)) })) await import("./Main.js")
