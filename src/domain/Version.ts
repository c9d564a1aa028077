/**
 * The package's version, as every surface reports it: the CLI's `--version`, the ACP agent's
 * `initialize` (`agentInfo`) and the server's `/openapi.json` (`info.version`). One constant, not read
 * from package.json at run time (the library loads no file on import, and the CLI bundle moves
 * relative to it); test/version.test.ts keeps it equal to package.json's `version`, so a release
 * that bumps one and not the other fails the suite.
 *
 * @since 0.1.0
 */
export const version = "0.1.0"
