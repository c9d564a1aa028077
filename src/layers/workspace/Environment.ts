/**
 * The environment a tool's command runs with: built from an allow-list, never from the agent's own
 * environment minus a few names, so `AWS_SECRET_ACCESS_KEY`, `GITHUB_TOKEN`, `SSH_AUTH_SOCK` and
 * any key the agent holds stay out of reach unless the user passes them on by name.
 *
 * @since 0.1.0
 */
import * as NodePath from "node:path"

/** What the user adds to the allow-list. */
export interface Options {
  /**
   * More names to pass on from the agent's environment; a name ending in `*` is a prefix (`NPM_CONFIG_*`).
   * A prefix never passes a name that looks like a credential (`looksSecret`): those go by exact name only.
   */
  readonly allow?: ReadonlyArray<string> | undefined
  /** Variables set to fixed values (they win over passed-on ones). */
  readonly set?: Readonly<Record<string, string>> | undefined
}

/** The names passed on by default: what programs need to find themselves, their files and the user's locale. */
export const defaultAllow: ReadonlyArray<string> = [
  "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "LC_*", "TERM", "COLORTERM", "NO_COLOR", "TZ",
  "TMPDIR", "TMP", "TEMP", "PWD"
]

const secretWords = new Set([
  "KEY", "KEYS", "APIKEY", "TOKEN", "TOKENS", "SECRET", "SECRETS", "PASSWORD", "PASSWORDS", "PASSWD", "PASS", "PASSPHRASE",
  "CREDENTIAL", "CREDENTIALS", "CREDS", "AUTH", "COOKIE", "COOKIES", "SESSION", "PRIVATE", "DSN", "SIGNING", "SAS"
])
const secretPrefixes = ["AWS_", "AZURE_", "ARM_", "GOOGLE_", "GCLOUD_", "GCP_", "CLOUDSDK_", "VAULT_", "DIGITALOCEAN_", "HEROKU_", "CLOUDFLARE_"]
const secretNames = new Set(["DATABASE_URL", "SSH_AUTH_SOCK", "GPG_AGENT_INFO", "KUBECONFIG", "NETRC", "DOCKER_AUTH_CONFIG", "PGPASSFILE", "REDIS_URL", "MONGODB_URI", "XAUTHORITY"])

/**
 * More credentials by name (review 52): personal access tokens (`GITHUB_PAT`, `GH_PAT`), JWTs
 * (`CI_JOB_JWT`), webhooks (`SLACK_WEBHOOK_URL`: the URL is the secret), `*_PWD` (`MYSQL_PWD`; not
 * `PWD` itself), and a database's or broker's URL, which carries its password (`POSTGRES_URL`,
 * `MONGO_URL`, `AMQP_URL`, `REDIS_URI`, …). Kept apart from the lists above so that they merge.
 */
const moreSecretWords = new Set(["PAT", "PATS", "JWT", "WEBHOOK", "WEBHOOKS", "OTP", "TOTP"])
const serviceWords = new Set([
  "DB", "DATABASE", "SQL", "POSTGRES", "POSTGRESQL", "PG", "MYSQL", "MARIADB", "MSSQL", "MONGO", "MONGODB", "REDIS", "VALKEY", "AMQP",
  "RABBITMQ", "BROKER", "KAFKA", "NATS", "MQTT", "ELASTIC", "ELASTICSEARCH", "OPENSEARCH", "CLICKHOUSE", "NEO4J", "CASSANDRA", "COUCHDB",
  "MEMCACHED", "SMTP", "IMAP", "FTP", "SFTP", "LDAP", "CONNECTION"
])
const looksSecretToo = (upper: string): boolean => {
  const words = upper.split(/_+/)
  return words.some((word) => moreSecretWords.has(word)) || (upper !== "PWD" && words.at(-1) === "PWD") ||
    ((words.at(-1) === "URL" || words.at(-1) === "URI") && words.slice(0, -1).some((word) => serviceWords.has(word)))
}

/**
 * Whether a variable's name looks like it holds a credential: a word such as `KEY`, `TOKEN`,
 * `SECRET`, `PASSWORD`, `AUTH`, `SESSION` (`GITHUB_TOKEN`, `OPENAI_API_KEY`, `NPM_AUTH_TOKEN`), a
 * cloud provider's prefix (`AWS_*`, `AZURE_*`, `GOOGLE_*` …), or a known one (`DATABASE_URL`,
 * `SSH_AUTH_SOCK`, `KUBECONFIG` …). Such names are passed on by exact name only, never by a wildcard.
 */
export const looksSecret = (name: string): boolean => {
  const upper = name.toUpperCase()
  return upper.split(/_+/).some((word) => secretWords.has(word)) ||
    /SECRET|PASSWORD|PASSWD|TOKEN|CREDENTIAL|APIKEY|API_KEY|PRIVATE_KEY/.test(upper) ||
    secretPrefixes.some((prefix) => upper.startsWith(prefix)) ||
    secretNames.has(upper) || upper.endsWith("_DATABASE_URL") || upper.endsWith("_DSN") || upper.endsWith("CONNECTION_STRING") ||
    looksSecretToo(upper)
}

const steeringNames = new Set([
  // Which program runs, and the shells' own start-up code.
  "PATH", "HOME", "ENV", "CDPATH", "IFS", "PS1", "PS2", "PS4", "PROMPT_COMMAND", "SHELL", "SHELLOPTS", "BASHOPTS", "GLOBIGNORE",
  "ZDOTDIR", "FPATH", "EDITOR", "VISUAL", "PAGER", "MANPAGER", "BROWSER", "SSH_ASKPASS", "SUDO_ASKPASS",
  // What a program loads: libraries, modules, start-up files and configuration that can name a program.
  "NODE_OPTIONS", "NODE_PATH", "NODE_REPL_EXTERNAL_MODULE", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "JDK_JAVAC_OPTIONS", "JAVA_HOME",
  "CLASSPATH", "MAVEN_OPTS", "GRADLE_OPTS", "GRADLE_USER_HOME", "SBT_OPTS", "GCONV_PATH", "LOCPATH", "NLSPATH", "OPENSSL_CONF",
  "OPENSSL_ENGINES", "OPENSSL_MODULES", "CURL_HOME", "WGETRC", "INPUTRC", "LESSOPEN", "LESSCLOSE", "LESSKEY", "VIMINIT", "EXINIT",
  "MYVIMRC", "EMACSLOADPATH", "GEM_HOME", "GEM_PATH", "BUNDLE_GEMFILE", "RUSTC_WRAPPER", "RUSTC_WORKSPACE_WRAPPER", "RUSTC",
  "RUSTDOC", "CC", "CXX", "CPP", "LD", "AR", "AS", "CFLAGS", "CXXFLAGS", "CPPFLAGS", "LDFLAGS", "MAKEFLAGS", "MFLAGS", "MAKEFILES",
  "GOFLAGS", "GOTOOLCHAIN", "GOPROXY", "GOROOT", "GOENV", "LUA_INIT", "LUA_PATH", "LUA_CPATH", "TCLLIBPATH", "PHPRC",
  "PHP_INI_SCAN_DIR", "R_PROFILE", "R_PROFILE_USER", "R_ENVIRON", "R_ENVIRON_USER", "R_LIBS", "R_LIBS_USER", "VIRTUAL_ENV",
  "CONDA_PREFIX", "KUBECONFIG", "DOCKER_HOST", "DOCKER_CONFIG",
  // Options and configuration read from the environment that make a plain program run another one:
  // tar's (`--to-command`), rg's (`--pre`), man's (`-P`), zip's (`-TT`), make's (`--eval`), a
  // compiler's subprograms, pkg-config's program, pagers and editors of gh, systemd and sudoedit.
  "TAR_OPTIONS", "RIPGREP_CONFIG_PATH", "MANOPT", "ZIPOPT", "GNUMAKEFLAGS", "GCC_EXEC_PREFIX", "COMPILER_PATH", "PKG_CONFIG", "PERLLIB",
  "GH_PAGER", "GH_BROWSER", "GH_EDITOR", "SYSTEMD_PAGER", "SYSTEMD_EDITOR", "SUDO_EDITOR"
])
const steeringPrefixes = [
  "LD_", "DYLD_", "GIT_", "BASH_", "PYTHON", "PERL5", "PERL_", "RUBY", "NPM_CONFIG_", "YARN_", "PNPM_", "BUN_", "DENO_", "COREPACK_",
  "NVM_", "VOLTA_", "PYENV_", "RBENV_", "PIP_", "PIPX_", "PIPENV_", "POETRY_", "UV_", "CARGO_", "RUSTUP_", "XDG_", "SSH_", "DOTNET_",
  "COMPLUS_", "CORECLR_", "ELECTRON_", "AWS_", "CMAKE_", "CCACHE_"
]

/**
 * More of what decides which program runs, what it loads, or where it takes code from (review 52),
 * kept apart from the lists above so that they merge: npm's `PREFIX` (its global `npmrc`, whose
 * `node-options=--require` runs a file), Go's module checks and caches (`GOSUMDB`, `GONOSUMDB`,
 * `GOINSECURE`, `GOPRIVATE`, `GONOPROXY`, `GOAUTH`, `GOVCS`, `GOPATH`, `GOMODCACHE`, `GOCACHE`, `GOWORK`,
 * `GOBIN`; `GODEBUG`, which can let `exec.LookPath` take `./prog`), Bundler's configuration (`BUNDLE_*`,
 * `BUNDLER_VERSION`, `GEMRC`), cgo's compiler flags (`CGO_*` but `CGO_ENABLED`), `RUSTFLAGS` and
 * `RUSTDOCFLAGS`, Mercurial's, Subversion's and CVS's configuration and programs, a remote shell
 * (`*_RSH`, `RSYNC_CONNECT_PROG`, `SVN_SSH`), the Erlang VM's flags (`ERL_*`, `ELIXIR_ERL_OPTIONS`),
 * gh's and GnuPG's configuration folders (gpg-agent's `pinentry-program`), conda's, Terraform's and
 * Helm's, terminfo. A project may still set what only picks a target or a feature: `GOOS`, `GOARCH`,
 * `GOARM`, `GOAMD64`, `CGO_ENABLED`, `GOEXPERIMENT`.
 */
const moreSteeringNames = new Set([
  "PREFIX", "GOSUMDB", "GONOSUMDB", "GOINSECURE", "GOPRIVATE", "GONOPROXY", "GOAUTH", "GOVCS", "GOPATH", "GOMODCACHE", "GOCACHE", "GOWORK",
  "GOBIN", "GODEBUG", "BUNDLER_VERSION", "GEMRC", "RUSTFLAGS", "RUSTDOCFLAGS", "HGRCPATH", "HGEDITOR", "HGMERGE", "SVN_SSH", "SVN_EDITOR",
  "SVN_MERGE", "CVSEDITOR", "CVS_SERVER", "RSYNC_CONNECT_PROG", "ELIXIR_ERL_OPTIONS", "GH_CONFIG_DIR", "GNUPGHOME", "CONDARC", "MAMBARC",
  "TF_CLI_CONFIG_FILE", "TF_PLUGIN_CACHE_DIR", "HELM_PLUGINS", "TERMINFO", "TERMINFO_DIRS"
])
const moreSteeringPrefixes = ["BUNDLE_", "CGO_", "ERL_"]
const steersMore = (upper: string): boolean =>
  moreSteeringNames.has(upper) || upper.endsWith("_RSH") ||
  (upper !== "CGO_ENABLED" && moreSteeringPrefixes.some((prefix) => upper.startsWith(prefix)))

/**
 * Whether setting a variable could decide which program runs or what it loads — and so turn an
 * allowed command into other code: `PATH`, `HOME` and `XDG_*` (where git and others find their
 * configuration), `LD_*`, `DYLD_*`, `GIT_*`, `BASH_ENV`, `ENV`, `BASH_FUNC_*`, `SHELLOPTS`, `PS4`,
 * `IFS`, `NODE_OPTIONS`, `PYTHON*`, `PERL5*`, `RUBY*`, `JAVA_TOOL_OPTIONS`, `npm_config_*`,
 * `CARGO_*`, `GOFLAGS`, `CC`, `MAKEFLAGS`, `EDITOR`, `PAGER`, `GCONV_PATH`, `OPENSSL_CONF` …
 * (case does not matter: npm reads `npm_config_*` in either). A project's settings never set these.
 */
export const steersPrograms = (name: string): boolean => {
  const upper = name.toUpperCase()
  return steeringNames.has(upper) || steeringPrefixes.some((prefix) => upper.startsWith(prefix)) || steersMore(upper)
}

const connectionNames = new Set([
  "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "FTP_PROXY", "SOCKS_PROXY", "SOCKS5_PROXY", "RSYNC_PROXY",
  "NODE_TLS_REJECT_UNAUTHORIZED", "NODE_EXTRA_CA_CERTS", "NODE_USE_ENV_PROXY", "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE",
  "CURL_CA_BUNDLE", "HTTPLIB2_CA_CERTS", "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH", "NIX_SSL_CERT_FILE", "SSLKEYLOGFILE", "WEBSOCKET_CLIENT_CA_BUNDLE"
])

/**
 * The forge host `gh`, `hub` and `glab` send the token they hold to (`GH_HOST`, `GITHUB_HOST`,
 * `GITLAB_HOST`, `GL_HOST`; review 52: github-mcp-server read `GITHUB_HOST` too), kept apart from
 * the list above so that they merge.
 */
const hostNames = new Set(["GH_HOST", "GITHUB_HOST", "GITLAB_HOST", "GL_HOST"])

/**
 * Whether setting a variable decides where a program's connections go or which certificates it
 * trusts: proxies (`HTTPS_PROXY`, `ALL_PROXY`, any case, and `GLOBAL_AGENT_*`), certificate authorities
 * (`NODE_EXTRA_CA_CERTS`, `SSL_CERT_FILE`, `REQUESTS_CA_BUNDLE`, …), `NODE_TLS_REJECT_UNAUTHORIZED`,
 * and `SSLKEYLOGFILE` (TLS keys written to a file). A project's settings never set these: the
 * commands and MCP servers they reach carry the user's tokens.
 */
export const steersConnections = (name: string): boolean => {
  const upper = name.toUpperCase()
  return connectionNames.has(upper) || upper.startsWith("GLOBAL_AGENT_") || hostNames.has(upper)
}

/** Whether a string is a variable name a shell accepts (`BASH_FUNC_ls%%` is not). */
export const isName = (name: string): boolean => /^[A-Za-z_][A-Za-z0-9_]*$/.test(name)

const matcher = (names: ReadonlyArray<string>) => {
  const exact = new Set(names.filter((n) => !n.endsWith("*")))
  const prefixes = names.filter((n) => n.endsWith("*")).map((n) => n.slice(0, -1))
  return (name: string) => exact.has(name) || (prefixes.some((p) => name.startsWith(p)) && !looksSecret(name))
}

/**
 * `PATH` with only its absolute folders. An empty entry (`:/usr/bin`, what `PATH=$EXTRA:$PATH`
 * makes when `EXTRA` is empty), `.` or any relative one (`node_modules/.bin`) is searched from the
 * folder the command runs in — the workspace, which a cloned repository fills and the model writes:
 * `git status`, approved as git, ran the repository's own `./git`.
 */
export const searchPath = (path: string): string => searchFolders(path).join(NodePath.delimiter)

/** The folders of `PATH` a program is looked up in: its absolute ones (see `searchPath`). */
export const searchFolders = (path: string | undefined): ReadonlyArray<string> =>
  (path ?? "").split(NodePath.delimiter).filter((folder) => folder !== "" && NodePath.isAbsolute(folder))

/**
 * The environment for a command: the allowed names from `source` (a wildcard never passes a
 * credential-looking name, see `looksSecret`), minus `hidden`, plus `set`, with `PWD` naming the
 * directory it runs in and `PATH` searching absolute folders only (`searchPath`).
 */
export const build = (
  source: Readonly<Record<string, string | undefined>>,
  options: Options & { readonly hidden?: ReadonlyArray<string>; readonly cwd: string }
): Record<string, string> => {
  const allowed = matcher([...defaultAllow, ...(options.allow ?? [])])
  const hidden = new Set(options.hidden ?? [])
  const env: Record<string, string> = {}
  for (const [name, value] of Object.entries(source)) {
    if (value !== undefined && allowed(name) && !hidden.has(name)) env[name] = value
  }
  env.PWD = options.cwd
  const built: Record<string, string> = { ...env, ...options.set }
  if (built.PATH !== undefined) built.PATH = searchPath(built.PATH)
  return built
}

/**
 * `env` with git told to use a bare repository only when named (`safe.bareRepository=explicit`,
 * appended to any `GIT_CONFIG_COUNT` list already there). A repository can commit a folder that is
 * a bare repository — `HEAD`, `config`, `objects/`, no name git refuses — whose config names
 * programs git runs (`core.fsmonitor`, with `core.worktree` pointing back): `git -C that status`,
 * or `git status` run inside it, would run them.
 */
export const withSafeGit = (env: Readonly<Record<string, string>>): Record<string, string> => {
  const given = Number(env.GIT_CONFIG_COUNT ?? "0")
  const count = Number.isSafeInteger(given) && given >= 0 ? given : 0
  return {
    ...env,
    GIT_CONFIG_COUNT: String(count + 1),
    [`GIT_CONFIG_KEY_${count}`]: "safe.bareRepository",
    [`GIT_CONFIG_VALUE_${count}`]: "explicit"
  }
}
