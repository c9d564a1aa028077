/**
 * A server of a `.mcp.json` that a launcher fetches from a package registry at each start (`npx -y
 * foo`, `pnpm dlx foo`, `bunx foo`, `uvx foo`, `pipx run foo`): trust is for the file's line, and
 * the line names a package, not its code — the registry may serve another `foo` tomorrow (a new
 * release, a taken-over name). Trust cannot bind that; the summary says so, and whether the line
 * pins an exact version (`foo@1.2.3`, `foo==1.2.3`), which at least binds the release.
 *
 * @since 0.14.0
 * @internal
 */

/** What one server fetches: the package as the line names it, and whether that names one exact version. */
export interface Fetched {
  readonly launcher: string
  readonly pkg: string
  readonly pinned: boolean
}

/** Launchers that fetch the package they are given: the program, and the subcommand before the package when it has one. */
const launchers: ReadonlyArray<readonly [string, string | undefined]> = [
  ["npx", undefined], ["pnpx", undefined], ["bunx", undefined], ["uvx", undefined],
  ["npm", "exec"], ["pnpm", "dlx"], ["yarn", "dlx"], ["bun", "x"], ["pipx", "run"], ["uv", "tool"]
]

/** The options whose value is the package to fetch (`npx -p foo bar`, `uvx --from foo bar`). */
const packageOptions = new Set(["-p", "--package", "--from", "--spec"])

/** An exact version after the name: `@1.2.3` (npm's, a scope's leading `@` aside), `==1.2.3` or `@1.2.3` (uv's). */
const exactVersion = /^(@?[^@=\s]+)(?:@|==)v?\d+\.\d+\.\d+(?:[-+][\w.-]+)?$/

/** What `command args` fetches from a registry, if it is such a launcher's line. */
export const fetchedBy = (command: string, args: ReadonlyArray<string>): Fetched | undefined => {
  const program = command.split(/[\\/]/).at(-1)!
  const launcher = launchers.find(([name, sub]) => name === program && (sub === undefined || args[0] === sub))
  if (launcher === undefined) return undefined
  // `uv tool run foo`: its subcommand is two words.
  const rest = args.slice(launcher[1] === undefined ? 0 : launcher[1] === "tool" ? (args[1] === "run" ? 2 : Number.POSITIVE_INFINITY) : 1)
  let pkg: string | undefined
  for (let i = 0; i < rest.length && pkg === undefined; i++) {
    const arg = rest[i]!
    const eq = arg.indexOf("=")
    if (packageOptions.has(arg)) pkg = rest[i + 1]
    else if (arg.startsWith("--") && eq > 0 && packageOptions.has(arg.slice(0, eq))) pkg = arg.slice(eq + 1)
    else if (!arg.startsWith("-")) pkg = arg
  }
  return pkg === undefined ? undefined : { launcher: launcher[1] === undefined ? program : `${program} ${launcher[1]}`, pkg, pinned: exactVersion.test(pkg) }
}

/** The summary's line for a server that fetches from a registry (see the module's comment). */
export const describe = (name: string, fetched: Fetched): string =>
  `  ${name}: ${fetched.launcher} fetches ${JSON.stringify(fetched.pkg)} from its registry at each start: trust covers this line, not what the registry serves` +
  (fetched.pinned ? " (an exact version is pinned)" : "; no exact version is pinned, so a new release runs unasked (pin one: name@1.2.3, name==1.2.3)")
