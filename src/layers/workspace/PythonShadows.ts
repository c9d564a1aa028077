/**
 * What a Python started by the line would import from the folder it starts in instead of its standard
 * library. `python3 -c …`, `python3 -m mod` and a program read from the line (`python3 - <<EOF`) put
 * that folder first on `sys.path`, so a `json.py` (or a `json/` package, `json.*.so`, `json.pyc`)
 * there runs when `python3 -m json.tool x.json` or `python3 -c 'import json …'` imports json, and
 * an `argparse.py` when `python3 -m venv .venv` does (checked with Python 3.11). A rule allowing such
 * a line is a choice to run the standard library's code and the line's, not a repository's file
 * named like a standard module: the policy asks then, naming the file. `-I` and `-P` (or
 * `PYTHONSAFEPATH` on the line) leave the folder off the path; `python3 s.py` runs a file the line
 * names, whose folder is the repository's code already. A relative `PERL5LIB`/`PERLLIB` entry does the same for
 * any Perl the line starts (`PERL5LIB=. shasum f` loads a repository's `strict.pm`; round 26), and a relative or empty
 * `PATH` entry for the programs the line and its programs run (`PATH=bin:/usr/bin git status` ran `bin/git`; round 27).
 *
 * @since 0.1.0
 * @internal
 */
import * as NodeFs from "node:fs/promises"
import * as NodePath from "node:path"
import type * as ToolRouter from "../../services/ToolRouter.js"
import * as Environment from "./Environment.js"

/**
 * The standard library's top-level modules that are not built in (`sys.stdlib_module_names` less
 * `sys.builtin_module_names`, Python 3.11), less those nothing imports unless asked by name (`test`,
 * `this`, …: a project's `test/` package is common). An earlier or later Python's extra names only over-ask.
 */
const standardModules = new Set((
  "__future__ _aix_support _asyncio _bisect _blake2 _bootsubprocess _bz2 _codecs_cn _codecs_hk _codecs_iso2022 _codecs_jp " +
  "_codecs_kr _codecs_tw _collections_abc _compat_pickle _compression _contextvars _crypt _csv _ctypes _curses " +
  "_curses_panel _datetime _dbm _decimal _elementtree _frozen_importlib _frozen_importlib_external _gdbm _hashlib _heapq " +
  "_json _lsprof _lzma _markupbase _md5 _msi _multibytecodec _multiprocessing _opcode _osx_support _overlapped _pickle " +
  "_posixshmem _posixsubprocess _py_abc _pydecimal _pyio _queue _random _scproxy _sha1 _sha256 _sha3 _sha512 " +
  "_sitebuiltins _socket _sqlite3 _ssl _statistics _strptime _struct _threading_local _tkinter _typing _uuid _weakrefset " +
  "_winapi _zoneinfo abc aifc argparse array ast asynchat asyncio asyncore audioop base64 bdb binascii bisect bz2 " +
  "cProfile calendar cgi cgitb chunk cmath cmd code codecs codeop collections colorsys compileall concurrent configparser " +
  "contextlib contextvars copy copyreg crypt csv ctypes curses dataclasses datetime dbm decimal difflib dis distutils " +
  "doctest email encodings ensurepip enum fcntl filecmp fileinput fnmatch fractions ftplib functools genericpath getopt " +
  "getpass gettext glob graphlib grp gzip hashlib heapq hmac html http imaplib imghdr imp importlib inspect io ipaddress " +
  "json keyword lib2to3 linecache locale logging lzma mailbox mailcap math mimetypes mmap modulefinder msilib msvcrt " +
  "multiprocessing netrc nis nntplib nt ntpath nturl2path numbers opcode operator optparse os ossaudiodev pathlib pdb " +
  "pickle pickletools pipes pkgutil platform plistlib poplib posixpath pprint profile pstats pty py_compile pyclbr pydoc " +
  "pydoc_data pyexpat queue quopri random re readline reprlib resource rlcompleter runpy sched secrets select selectors " +
  "shelve shlex shutil signal site smtpd smtplib sndhdr socket socketserver spwd sqlite3 sre_compile sre_constants " +
  "sre_parse ssl stat statistics string stringprep struct subprocess sunau symtable sysconfig syslog tabnanny tarfile " +
  "telnetlib tempfile termios textwrap threading timeit tkinter token tokenize tomllib trace traceback tracemalloc tty " +
  "turtle types typing unicodedata unittest urllib uu uuid venv warnings wave weakref webbrowser winreg winsound wsgiref " +
  "xdrlib xml xmlrpc zipapp zipfile zipimport zlib zoneinfo"
).split(" "))

/**
 * Installed tools' top-level modules a Python commonly imports from the path (`python3 -m pip`, a
 * `pip3` or `pytest` started with `PYTHONPATH=.`): a repository's `pip/` or `pytest.py` stands in
 * for them as a `json.py` does for json. A heuristic: a short list, not what is installed here.
 */
const toolModules = new Set((
  "pip pytest _pytest pluggy black click mypy setuptools pkg_resources wheel build virtualenv packaging requests urllib3 " +
  "idna certifi typing_extensions six yaml tomli platformdirs colorama"
).split(" "))

/** Whether a repository's module of this name stands in for one a Python imports unasked or by a tool's name. */
const shadowable = (module: string): boolean => standardModules.has(module) || toolModules.has(module)

/** A module name a folder's entry provides: `x.py`, `x.pyc`, `x.<tag>.so`, a package `x/` (read as one when it holds `__init__.py`). */
const moduleOf = (entry: string): string | undefined => /^([A-Za-z_][A-Za-z0-9_]*)(?:\.pyc?|(?:\.[A-Za-z0-9_-]+)?\.(?:so|pyd))$/.exec(entry)?.[1]

/** Where a Python's folder (the `base` it starts in, relative to cwd) is known only when it runs, with why. */
export interface PythonAt {
  readonly base: string
  readonly unknownFolder?: string | undefined
  /**
   * What else than a Python's start folder: one a Perl searches first (`PERL5LIB=.`), whose `strict.pm` or `File/` stands
   * in for Perl's own (see `perlShadowable`); a `PATH` folder (`program`), a library one (`library`); a Python's own `lib`
   * folder (`pythonLib`: `PYTHONHOME`'s, the user site's), whose `python3.11/` is its standard library or its start-up code;
   * a `PYTHONPATH` folder (`python`), checked as a start folder is, whose absolute form counts inside cwd only (round 29);
   * a javac class path entry (`processor`: a folder, a jar, or `dir/*`'s jars), whose processors javac runs (`processors`);
   * the folder a Maven starts from (`jvm`), whose project's `.mvn/jvm.config` its launcher gives the JVM (`mavenJvmOptions`).
   */
  readonly language?: "perl" | "program" | "library" | "pythonLib" | "python" | "processor" | "jvm" | undefined
  /** The absolute folders beside a `program` folder in its `PATH`: their programs' names are looked for too. */
  readonly alongside?: ReadonlyArray<string> | undefined
}

/**
 * The names of the programs the system has, for a folder a relative `PATH` entry puts first (`language: "program"`):
 * an executable there named as one of them (`bin/git`, `./ls`, `ssh`) runs in its place, for the line's own programs and
 * for what they start. A repository's own tool no system folder has (`node_modules/.bin/jest`) is the rule's, as
 * `PERL5LIB=lib`'s own modules are; a `git-…` program too (git runs `git-upload-pack` from `GIT_EXEC_PATH`). The names
 * are those of the `PATH` commands get (`env.set`'s, else the agent's: absolute folders) and of the absolute folders the
 * line's own `PATH` names beside the relative one (round 28: `PATH=bin:/opt/x/bin mytool` ran `bin/mytool`, and a
 * program only `env.set`'s `PATH` has was not looked for). Each folder is read once a check.
 */
const systemPrograms = async (folders: ReadonlyArray<string>, read: Map<string, ReadonlyArray<string>>): Promise<ReadonlySet<string>> => {
  const names = new Set<string>()
  for (const folder of folders) {
    if (!read.has(folder)) read.set(folder, await NodeFs.readdir(folder).catch(() => []))
    for (const name of read.get(folder)!) names.add(name)
  }
  return names
}
/** A Python's standard library or user site folder in a `lib` folder (`python3.11/`): see `PythonAt.language`. */
const pythonLibrary = /^python[0-9]/
/**
 * What a folder `LD_LIBRARY_PATH` or `GCONV_PATH` puts first offers a program (`language: "library"`): a shared library
 * (`libselinux.so.1` stands in for the one `ls` loads) or glibc's `gconv-modules` list. A heuristic that over-asks a
 * build's own libraries (`LD_LIBRARY_PATH=build ./build/app`): "always" then covers the line while the same files are there.
 */
const sharedLibrary = /\.so(?:\.[0-9.]+)?$|^gconv-modules/
/** Whether a folder's entry is a file (or a link to one) anyone may run. */
const runnable = (path: string): Promise<boolean> =>
  NodeFs.stat(path).then((s) => s.isFile() && (s.mode & 0o111) !== 0, () => false)

/**
 * The top-level names of Perl's core modules (and namespaces: `File/Basename.pm`) its tools load unasked: `strict`,
 * `warnings`, `Getopt::Long`, `JSON::PP` (`shasum`, `json_pp`, `prove`, `cpan`, `perldoc` are Perl). A heuristic,
 * as `toolModules`: a repository's own `lib/My/App.pm` named by `PERL5LIB=lib` is the rule's.
 */
const perlModules = new Set((
  "strict warnings vars utf8 feature constant lib integer bytes overload overloading parent base fields bigint bignum " +
  "Carp Config Cwd Exporter Fcntl POSIX Errno Encode Storable Socket Symbol SelectSaver Tie Time Text Term Test IO File " +
  "Getopt Data Digest MIME JSON List Scalar Hash Sub Pod Unicode B Benchmark CPAN ExtUtils Module Params Safe Opcode " +
  "DynaLoader XSLoader AutoLoader SelfLoader Math Memoize Sys Thread threads Filter Env English FindBin I18N " +
  "IPC Locale Net PerlIO Search attributes autodie autouse bigrat blib charnames deprecate diagnostics encoding if less " +
  "locale mro open ops re sigtrap sort subs version vmsish"
).split(" "))

/** A module name a folder's entry gives Perl: `X.pm`, `X.pmc`, a namespace folder `X/`. */
const perlShadowable = (entry: string, isFolder: boolean): boolean => perlModules.has(isFolder ? entry : /^(.+)\.pmc?$/.exec(entry)?.[1] ?? "")

/** The file of a class path entry (a folder, or a jar's member) naming the annotation processors javac loads from it. */
const processorServices = "META-INF/services/javax.annotation.processing.Processor"
/** Most bytes of one jar read for its member names (stored uncompressed in the zip's directory); a larger one asks. */
const jarLimit = 16 * 1024 * 1024
/**
 * What of a javac class path entry (`base`, at `path`) names annotation processors javac would run: a folder's
 * services file, a jar holding one, each jar of a `dir/*` entry (to 4,096 entries). Unread (too large) is named too.
 */
const processors = async (path: string, base: string): Promise<ReadonlyArray<string>> => {
  if (NodePath.basename(base) === "*") {
    const jars = (await NodeFs.readdir(NodePath.dirname(path)).catch(() => [])).filter((name) => /\.jar$/i.test(name))
    if (jars.length > 4096) return [`(${base}: more than 4,096 entries, not checked)`]
    const found: Array<string> = []
    for (const jar of jars) found.push(...(await processors(NodePath.join(NodePath.dirname(path), jar), NodePath.join(NodePath.dirname(base), jar))))
    return found
  }
  const stat = await NodeFs.stat(path).catch(() => undefined)
  if (stat?.isDirectory() === true) {
    return (await NodeFs.stat(NodePath.join(path, processorServices)).then(() => true, () => false)) ? [NodePath.join(base, processorServices)] : []
  }
  if (stat?.isFile() !== true) return []
  if (stat.size > jarLimit) return [`(${base}: a jar over 16 MiB, not checked)`]
  const bytes = await NodeFs.readFile(path).catch(() => undefined)
  return bytes !== undefined && bytes.includes(processorServices) ? [`${base} (${processorServices})`] : []
}
/**
 * The JVM options of a `.mvn/jvm.config` that load no code: heap and stack sizes, `-XX` flags and numeric or named
 * settings (not `-XX:OnError=…`, `-XX:Flags=…`, a CDS archive, …), system properties outside the JVM's own (`java.*`,
 * `jdk.*`, …: `java.system.class.loader` loads a class) and Maven's loading ones, a few common JVM ones, module
 * openings, assertions. Anything else — `-javaagent:`, `-agentpath:`, `-Xbootclasspath`, `-cp`, an `@argfile`, a glob
 * (the launcher expands the file's words unquoted), a value with a `/` — makes the line ask.
 */
const jvmOptionsSafe = [
  /^-X(?:ms|mx|mn|ss)[0-9]+[kKmMgGtT]?$/,
  /^-XX:[+-][A-Za-z0-9]+$/,
  /^-XX:(?!On|Flags|VMOptionsFile|SharedArchiveFile|ArchiveClassesAtExit|CompileCommandFile|AOT|CRaC|JVMCI)[A-Za-z0-9]+=[A-Za-z0-9.,:+-]*$/,
  /^-D(?!(?:java|javax|jdk|sun|maven\.ext|classworlds|library\.jansi)\.)[A-Za-z0-9_.-]+(?:=[A-Za-z0-9_.,:@+-]*)?$/,
  /^-D(?:file\.encoding|sun\.jnu\.encoding|java\.awt\.headless|java\.net\.prefer(?:IPv4Stack|IPv6Addresses)|jdk\.tls\.client\.protocols)=[A-Za-z0-9_.,:+-]*$/,
  /^--(?:add-opens|add-exports|add-reads|add-modules|enable-native-access)=[A-Za-z0-9_.,/=-]+$/,
  /^-(?:ea|da|esa|dsa|server|client|Xshare:(?:auto|off|on)|Xrs|Xint|Xmixed|Xbatch|Xnoclassgc|showversion|-enable-preview)$/
]
/** The options above whose value is the next word (`--add-opens java.base/java.lang=ALL-UNNAMED`). */
const jvmOptionsValued = /^--(?:add-opens|add-exports|add-reads|add-modules|enable-native-access)$/
const jvmOptionValue = /^[A-Za-z0-9_.,/=-]+$/
/** Most bytes of a `.mvn/jvm.config` read; a larger one asks. */
const jvmConfigLimit = 64 * 1024
/**
 * The project's `.mvn/jvm.config` a Maven started in `folder` (relative to cwd: `base`) runs with, when it names an option
 * that may load code: the first folder at or above it holding a `.mvn/` folder is the project's, as Maven's launcher
 * finds it (3.8's `find_maven_basedir`), and the file's words are options of the JVM it starts. Checked with Maven 3.8.7:
 * a `-javaagent:a.jar` there ran the repository's agent on `mvn -v` (round 30).
 */
const mavenJvmOptions = async (folder: string, base: string): Promise<ReadonlyArray<string>> => {
  let at = folder
  for (;;) {
    if ((await NodeFs.stat(NodePath.join(at, ".mvn")).catch(() => undefined))?.isDirectory() === true) break
    const up = NodePath.dirname(at)
    if (up === at) return []
    at = up
  }
  const config = NodePath.join(at, ".mvn", "jvm.config")
  const shown = NodePath.join(base, NodePath.relative(folder, config))
  const stat = await NodeFs.stat(config).catch(() => undefined)
  if (stat?.isFile() !== true) return []
  if (stat.size > jvmConfigLimit) return [`(${shown}: over 64 KiB, not checked)`]
  const words = (await NodeFs.readFile(config, "utf8").catch(() => "")).split(/[ \t\r\n]+/).filter((w) => w !== "")
  for (let i = 0; i < words.length; i++) {
    if (jvmOptionsValued.test(words[i]!) && jvmOptionValue.test(words[i + 1] ?? "")) i++
    else if (!jvmOptionsSafe.some((safe) => safe.test(words[i]!))) return [shown]
  }
  return []
}

/** A variable that leaves the folder off Python's path (any non-empty value). */
export const safePath = /^PYTHONSAFEPATH=./

/** Python's options that take a value, the rest of their cluster or the next word (`-W ignore`, `-XI`: `I` is -X's value). */
const pythonTakesValue = /^[WXQ]$/
/** Python's long options that take the next word as their value, unless given with `=`. */
const pythonLongTakesValue = /^--check-hash-based-pycs$/

/** How a Python reads its options: whether it starts from its folder, and whether it ignores `PYTHON*` variables (`-E`, `-I`). */
export interface PythonStart {
  readonly fromFolder: boolean
  readonly ignoresEnv: boolean
}

/**
 * How a python command (its words from the interpreter on) starts: whether it puts the folder it
 * starts in first on `sys.path` (`-c`, `-m`, `-` or no script: the program from its input, without
 * `-I` or `-P`; `PYTHONSAFEPATH` set for it, `safePath`, counts unless `-E` ignores it), and whether
 * it reads `PYTHONPATH` (not with `-E` or `-I`). Checked with Python 3.11: `-XI` is `-X I`, not `-I`.
 */
export const pythonStart = (args: ReadonlyArray<string>, safePath: boolean): PythonStart => {
  let ignoresEnv = false
  const start = (fromFolder: boolean): PythonStart => ({ fromFolder: fromFolder && (ignoresEnv || !safePath), ignoresEnv })
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!
    if (arg === "-" || arg === "--") return start(true)
    if (!arg.startsWith("-")) return start(false)
    if (arg.startsWith("--")) {
      if (/^--(?:version|help(?:-env|-xoptions|-all)?)$/.test(arg)) return start(false)
      if (pythonLongTakesValue.test(arg)) i++
      continue
    }
    // A cluster (`-IE`, `-Sc`): `-I` (isolated, ignores the environment too) and `-P` leave the folder off the path,
    // `-c`/`-m` end the options, and an option taking a value takes the rest of the cluster, or the next word.
    const letters = arg.slice(1)
    for (let k = 0; k < letters.length; k++) {
      const letter = letters[k]!
      if (letter === "I") return { fromFolder: false, ignoresEnv: true }
      if (letter === "P") return { fromFolder: false, ignoresEnv }
      if (letter === "E") ignoresEnv = true
      if (letter === "c" || letter === "m") return start(true)
      if (letter === "V" || letter === "h") return start(false)
      if (pythonTakesValue.test(letter)) {
        if (k === letters.length - 1) i++
        break
      }
    }
  }
  return start(true)
}

/** Whether a python command puts the folder it starts in first on `sys.path` (`pythonStart`). */
export const startsFromFolder = (args: ReadonlyArray<string>, safePath: boolean): boolean => pythonStart(args, safePath).fromFolder

/**
 * What "always" remembers for a line whose Python would import the repository's files: the exact
 * line and those files, sorted. A remembered answer covers the line only while the same files are
 * there (a new one asks again). JSON keeps it apart from every `CommandRisk.scopeOf` scope (a line
 * may hold any text, a newline too; a program's scope ends in its risk, never in `{`).
 */
export const rememberedScope = (line: string, shadows: ReadonlyArray<string>): string =>
  `shell:python:${JSON.stringify({ line: line.trim(), shadows: [...shadows].sort() })}`

/**
 * What a repository's file found would stand in for, one reason each in the question (round 29: every case said
 * "Python's (or Perl's) standard modules … PATH entry"): `unknown` for a folder the check could not read.
 */
export type ShadowKind = ToolRouter.ShadowKind
const kindOf = (at: PythonAt): ShadowKind => at.language ?? "python"
/** The files found (`shadowing`), and the kinds among them. */
export interface Shadowed {
  readonly files: ReadonlyArray<string>
  readonly kinds: ReadonlyArray<ShadowKind>
}
/**
 * The files in each folder a line's Pythons start in that would stand in for a standard module, as
 * `<folder>/<entry>` relative to cwd, or the note why a folder is not known; empty when none (the
 * common case). A folder is read once, to 4,096 entries (past that it is named as not checked).
 */
export const shadowing = async (cwd: string, pythons: ReadonlyArray<PythonAt>, searchPath = process.env.PATH): Promise<Shadowed> => {
  const files = new Set<string>()
  const kinds = new Set<ShadowKind>()
  // Each file found, with what it stands in for (the question names each kind: round 29).
  const found = {
    add: (file: string, kind: ShadowKind = kindOf(at)) => {
      files.add(file)
      kinds.add(kind)
    }
  }
  let at: PythonAt = { base: "" }
  const folders = new Map<string, ReadonlyArray<string>>()
  const systems = new Map<string, ReadonlySet<string>>()
  for (at of pythons) {
    if (at.unknownFolder !== undefined) {
      found.add(`(a Python whose folder is known only when it runs: ${at.unknownFolder})`, "unknown")
      continue
    }
    // A search path's absolute folder (`PATH=/abs/repo/bin:/usr/bin`) counts inside cwd only, named from cwd.
    if (at.language !== undefined && NodePath.isAbsolute(at.base)) {
      const inside = NodePath.relative(cwd, at.base)
      if (inside === ".." || inside.startsWith(`..${NodePath.sep}`) || NodePath.isAbsolute(inside)) continue
      at = { ...at, base: inside }
    }
    const folder = NodePath.resolve(cwd, at.base)
    if (at.language === "jvm") {
      for (const file of await mavenJvmOptions(folder, at.base)) found.add(file, file.startsWith("(") ? "unknown" : "jvm")
      continue
    }
    if (at.language === "processor") {
      for (const file of await processors(folder, at.base)) found.add(file, file.startsWith("(") ? "unknown" : "processor")
      continue
    }
    const entries = await NodeFs.readdir(folder, { withFileTypes: true }).catch(() => [])
    if (entries.length > 4096) {
      found.add(`(${at.base === "" ? "." : at.base}: more than 4,096 entries, not checked)`, "unknown")
      continue
    }
    for (const entry of entries) {
      const path = NodePath.join(at.base, entry.name)
      if (at.language === "program") {
        const key = at.alongside?.join(":") ?? ""
        if (!systems.has(key)) systems.set(key, await systemPrograms([...Environment.searchFolders(searchPath), ...(at.alongside ?? [])], folders))
        const system = systems.get(key)!
        if ((system.has(entry.name) || entry.name.startsWith("git-")) && (await runnable(NodePath.join(folder, entry.name)))) found.add(path)
        continue
      }
      if (at.language === "pythonLib") {
        if (pythonLibrary.test(entry.name)) found.add(path)
        continue
      }
      if (at.language === "library") {
        if (sharedLibrary.test(entry.name)) found.add(path)
        continue
      }
      if (at.language === "perl") {
        if (perlShadowable(entry.name, entry.isDirectory() || (entry.isSymbolicLink() && !/\.pmc?$/.test(entry.name)))) found.add(path)
        continue
      }
      const module = moduleOf(entry.name)
      // A file (or a link) named like a module; a folder named like a package (a link to one too) holding `__init__.py`.
      if (module !== undefined && shadowable(module)) found.add(path)
      else if (shadowable(entry.name) && (await NodeFs.stat(NodePath.join(folder, entry.name, "__init__.py")).catch(() => undefined)) !== undefined) found.add(path)
    }
  }
  return { files: [...files], kinds: [...kinds] }
}
