import { defineConfig } from "vitest/config"

export default defineConfig({
  // Examples import the package by name, as users do; here the name points at the sources.
  resolve: { alias: { "effect-agent": new URL("./src/index.ts", import.meta.url).pathname } },
  test: {
    include: ["test/**/*.test.ts", "examples/testing.ts"],
    globalSetup: ["test/globalSetup.ts", "test/postgresSetup.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000
  }
})
