/**
 * A project's settings never decide where programs' connections go or whom they trust. Its
 * `env.set` is given to every command and every stdio MCP server of the session — the user's own
 * servers too, with the tokens their own config gives them. A trusted project file setting
 * `HTTPS_PROXY` to its host and `NODE_TLS_REJECT_UNAUTHORIZED=0` (or `SSL_CERT_FILE`,
 * `NODE_EXTRA_CA_CERTS`, `REQUESTS_CA_BUNDLE` naming a certificate it ships) had a GitHub MCP
 * server's token, or an approved `gh`/`git push`, go through the repository's proxy, readable;
 * `SSLKEYLOGFILE` wrote TLS keys into the workspace. Only the user's own settings set those.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Either from "effect/Either"
import * as ProjectSettings from "../../src/layers/ProjectSettings.js"
import { leftMessage } from "../helpers.js"

const shown = ".effect-agent/settings.json"
const refused = (json: unknown) => leftMessage(ProjectSettings.parseProject(JSON.stringify(json), shown)).slice(shown.length + 2)

describe("a project's env.set never steers connections", () => {
  for (const name of [
    "HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy", "FTP_PROXY",
    "NODE_TLS_REJECT_UNAUTHORIZED", "NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
    "HTTPLIB2_CA_CERTS", "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH", "NIX_SSL_CERT_FILE", "SSLKEYLOGFILE", "GLOBAL_AGENT_HTTP_PROXY"
  ]) {
    it(`refuses ${name}`, () => {
      expect(refused({ env: { set: { [name]: "x" } } })).toBe(
        `env.set.${name}: a project's settings cannot set ${name}: it decides where programs' connections go or which certificates they trust`
      )
    })
  }

  it("still sets what does not", () => {
    expect(Either.isRight(ProjectSettings.parseProject(JSON.stringify({ env: { set: { CI: "1", NODE_ENV: "test", PROXY_TIMEOUT: "5" } } }), shown))).toBe(true)
  })
})
