/**
 * One version for every surface: package.json's. The CLI's `--version`, the ACP agent's
 * `initialize` and the server's `/openapi.json` each had "0.1.0" written in (src/cli/Cli.ts,
 * src/acp/AcpAgent.ts, src/server/Api.ts), so a release bumping package.json would have left them
 * behind. They now read `src/domain/Version.ts`, which this test keeps equal to package.json; no
 * other source file spells the version out. The surfaces: versionSurfaces.integration and
 * server/api.test (`/openapi.json`).
 */
import { readdirSync, readFileSync } from "node:fs"
import { join, relative } from "node:path"
import { describe, expect, it } from "vitest"
import { version } from "../src/index.js"

const root = join(import.meta.dirname, "..")
const packageVersion = (JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { version: string }).version

const filesUnder = (dir: string): Array<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? filesUnder(join(dir, entry.name)) : entry.name.endsWith(".ts") ? [join(dir, entry.name)] : []
  )

describe("the version", () => {
  it("is package.json's, and no source file but src/domain/Version.ts writes it out", () => {
    expect(version).toBe(packageVersion)
    const spelled = filesUnder(join(root, "src"))
      .filter((file) => readFileSync(file, "utf8").includes(`"${packageVersion}"`))
      .map((file) => relative(root, file))
    expect(spelled).toEqual(["src/domain/Version.ts"])
  })
})
