/**
 * What a command of a line writes into a folder without the line naming it, and what a copy or a
 * move lands as: read before a git of the same line runs there (`GitPrograms.chosenByRepository`).
 *
 * `tar xf t.tar && git status` unpacks whatever the archive holds into cwd — a `.git/config`, a
 * staged submodule's `sub/.git` — and no word of the line names it; so do `unzip`, `cpio -i`/`-p`,
 * `ar x`, `jar x`, `7z x`, `pax -r`, `python3 -m tarfile -e`, `patch` (the files its diff names),
 * GNU sed's `e` command, a copy of a folder's contents (`cp -r x/. d`, `cp -T x d`, `rsync x/ d`,
 * `ditto x d`, a glob's names) and a move or copy run by `xargs`, `parallel` or `find -exec`
 * (its sources and destination come from what the runner reads), and program text the line runs
 * (`python3 -c 'os.rename(…)'`, `perl -e`, `node -e`, an awk program that runs or writes: it may
 * move or write anything below cwd, which it fills). Such a folder is *filled*: what
 * it holds then is known only when the line runs (round 23; before, an exact rule for `tar xf t.tar
 * && git status` ran the unpacked `core.fsmonitor`). A copy, move or link of named sources lands
 * each as `dest/<name>` (`mv d1/sub .` makes `./sub`): those are named, as the destination is.
 *
 * @since 0.1.0
 * @internal
 */
import * as NodePath from "node:path"
import * as CommandLine from "./CommandLine.js"
import * as CommandRisk from "./CommandRisk.js"
import * as GlobalOptions from "./GlobalOptions.js"
import * as Options from "./Options.js"

/** Programs that unpack an archive or apply a patch, writing entries the line does not name. */
const unpackers = new Set([
  "tar", "bsdtar", "unzip", "cpio", "bsdcpio", "ar", "patch", "jar", "7z", "7za", "7zr", "7zz", "7zzs", "pax", "lha", "unrar", "rar", "unar", "dpkg-deb",
  // Round 26: cabextract (`-d dir`), unsquashfs (`-d dir`, else `squashfs-root`; `-f` writes into one already there).
  "cabextract", "unsquashfs"
])

/** Compressors that, given `-r`, decompress (or compress) every file below the folders they name, in place. */
const recursiveCompressors = new Set(["gzip", "gunzip", "pigz", "unpigz", "zstd", "unzstd", "lz4", "brotli"])

/** Downloaders that name the files they write from the URL or the server's answer (`wget http://h/.git` writes `./.git`). */
const downloaders = new Set([
  "wget", "curl", "aria2c",
  // Round 26: wget2 (as wget), axel (`-o` names a file or a folder), and those whose files are named by the server or by
  // commands they read (lftp's `mirror`, sftp's `get -r`, ftp, tftp, smbclient, httrack, yt-dlp): they fill cwd.
  "wget2", "axel", "lftp", "sftp", "ftp", "tftp", "smbclient", "httrack", "yt-dlp", "youtube-dl"
])

/** Programs that copy, move or link named sources into a destination. */
const placers = new Set(["cp", "mv", "ln", "install", "rsync", "ditto", "scp"])

/** Runners that give a program words the line does not show (their input, what find finds). */
const runners = new Set(["xargs", "parallel", "find"])

/** The value of an option `-X v`, `-Xv` or `--long=v` / `--long v`, each time it is given. */
const valuesOf = (args: ReadonlyArray<string>, short: string, long: string): ReadonlyArray<string> =>
  args.flatMap((w, i) => {
    if ((w === short || w === long) && args[i + 1] !== undefined) return [args[i + 1]!]
    if (w.startsWith(`${long}=`)) return [w.slice(long.length + 1)]
    return w.length > 2 && w.startsWith(short) && !w.startsWith("--") ? [w.slice(2)] : []
  })

/** Option letters: dash clusters, and a first word without a dash (`tar xf`, `ar x`). */
const lettersOf = (args: ReadonlyArray<string>): string =>
  args.map((w, i) => (i === 0 && !w.startsWith("-") ? w : /^-[^-]/.test(w) ? w.slice(1) : "")).join("")

/**
 * How GNU tar (and bsdtar) read the options that say whether it extracts and where: by any unambiguous prefix, read
 * against these (`--d` names several and is refused; `--dir` is `--directory`).
 */
export const tarOptions: Options.Syntax = {
  shortArg: "CfTXbFgKLNVIH",
  longArg: ["--directory", "--file", "--files-from", "--exclude-from", "--listed-incremental", "--blocking-factor", "--format", "--info-script", "--new-volume-script", "--to-command", "--use-compress-program", "--checkpoint-action", "--rsh-command", "--rmt-command", "--owner", "--group", "--mode", "--mtime", "--newer", "--after-date", "--suffix", "--volno-file", "--label", "--starting-file", "--tape-length", "--record-size", "--exclude", "--transform", "--xform", "--strip-components"],
  // Every option that is itself a prefix of one taking a value is here: an exact name wins (`--checkpoint`).
  longFlags: ["--checkpoint", "--extract", "--get", "--create", "--append", "--update", "--list", "--diff", "--compare", "--delete", "--catenate", "--concatenate", "--dereference", "--delay-directory-restore", "--no-delay-directory-restore"],
  prefixes: true
}

/** The folders an unpacker writes into, where it writes at all (`tar x`, not `tar c`; `unzip`, not `unzip -l`). */
const unpackedInto = (program: string, args: ReadonlyArray<string>): ReadonlyArray<string> => {
  const into = (named: ReadonlyArray<string>) => (named.length === 0 ? ["."] : named)
  switch (program) {
    case "tar":
    case "bsdtar": {
      // GNU tar and bsdtar take a long option by any unambiguous prefix (`tar --extr`, `--direc=out`).
      const read = Options.parse(tarOptions, args)
      if (!lettersOf(args).includes("x") && !read.long.has("--extract") && !read.long.has("--get")) return []
      const folders = read.given.filter(([option]) => option === "C" || option === "--directory").map(([, folder]) => folder)
      // An ambiguous prefix taking a value: which word is a folder is the program's to say.
      return read.unsure ? [".", ...folders] : into(folders)
    }
    case "unzip":
      return args.some((w) => /^-[ltvpZz]$/.test(w)) ? [] : into(valuesOf(args, "-d", "-d"))
    case "cpio":
    case "bsdcpio": {
      // `cpio -p dest` (pass-through) copies the names it reads into dest. GNU cpio (argp) takes long options by prefix.
      const letters = lettersOf(args.filter((w) => w.startsWith("-")))
      if (letters.includes("p") || args.some((w) => Options.names(w, ["--pass-through"]))) return args.filter((w) => !w.startsWith("-")).slice(-1)
      return /^[^-]*i/.test(letters) || args.some((w) => Options.names(w, ["--extract"])) ? into(valuesOf(args, "-D", "--directory")) : []
    }
    case "ar":
      return /x/.test(args[0]?.replace(/^-/, "") ?? "") ? ["."] : []
    // `jar xf t.jar` (into cwd), `7z x t.7z -oout`, `pax -r < t.pax` (a copy with `-rw` into its last operand).
    case "jar":
      return /x/.test(args[0]?.replace(/^-/, "") ?? "") ? ["."] : []
    case "7z":
    case "7za":
    case "7zr":
    case "7zz":
    case "7zzs":
      return args[0] === "x" || args[0] === "e" ? into(args.filter((w) => w.startsWith("-o")).map((w) => w.slice(2))) : []
    case "pax": {
      const letters = lettersOf(args.filter((w) => w.startsWith("-")))
      return !letters.includes("r") ? [] : letters.includes("w") ? args.filter((w) => !w.startsWith("-")).slice(-1) : ["."]
    }
    // `lha x a.lzh` (`e`, `-x`; `xw=dir` extracts into dir), `unrar x a.rar [dir/]` (`-op<dir>`), `unar a.rar -o dir`,
    // `dpkg-deb -x a.deb dir` (`-R`/`--raw-extract` too, with the package's control files).
    case "lha":
      return /^-?[a-z]*[xe]/.test(args[0] ?? "") ? into(args[0]!.split("w=").slice(1)) : []
    case "unrar":
    case "rar":
      return args[0] === "x" || args[0] === "e" ? into([...args.slice(2).filter((w) => w.endsWith("/")), ...args.filter((w) => w.startsWith("-op")).map((w) => w.slice(3))]) : []
    case "unar":
      return into(valuesOf(args, "-o", "-output-directory"))
    case "cabextract":
      return args.some((w) => /^(?:-[lt]|--(?:list|test))$/.test(w)) ? [] : into(valuesOf(args, "-d", "--directory"))
    case "unsquashfs":
      return args.some((w) => /^-(?:l|ll|lls|lc|llc|ls|lln|s|stat|cat|mkfs-time|fstime)$/.test(w)) ? [] : valuesOf(args, "-d", "-dest").concat(args.some((w) => w === "-d" || w === "-dest") ? [] : ["squashfs-root"])
    case "dpkg-deb":
      return args.some((w) => /^(?:-[xXR]|--(?:extract|vextract|raw-extract))$/.test(w)) ? args.filter((w) => !w.startsWith("-")).slice(1, 2) : []
    default:
      return args.includes("--dry-run") ? [] : into(valuesOf(args, "-d", "--directory"))
  }
}

/** Options of the placers that take the next word as their value (`cp -S .bak`, `rsync -e ssh`, `install -m 644`). */
const takesValue = /^(?:-[tSeTfmogB]|--(?:target-directory|suffix|rsh|exclude|include|filter|backup-dir|mode|owner|group|files-from|exclude-from|include-from|link-dest|compare-dest|copy-dest|partial-dir|temp-dir|chmod|chown|log-file))$/

/** A source of `scp` or `rsync` on another host whose pattern that host expands (`scp -r 'h:x/*' .`): its names are the host's. */
const remoteGlob = (program: string, source: string): boolean => (program === "scp" || program === "rsync") && /^[^/]*:/.test(source) && /[*?[]/.test(source)

/** What a copy, move or link fills (a folder's contents copied into it) and the names its sources land as. */
const placed = (program: string, words: ReadonlyArray<CommandLine.Word>): { readonly filled: ReadonlyArray<string>; readonly landed: ReadonlyArray<string> } => {
  const values = words.map((w) => w.value)
  const target = valuesOf(values, "-t", "--target-directory")
  const operands = words.filter((w, i) => !w.value.startsWith("-") && !takesValue.test(values[i - 1] ?? ""))
  const destination = target.at(-1) ?? (operands.length >= 2 ? operands.at(-1)!.value : undefined)
  if (destination === undefined) return { filled: [], landed: [] }
  const sources = target.length > 0 ? operands : operands.slice(0, -1)
  // `cp -T x d` (`--no-target-directory`) copies x's contents into d, as `x/.` does.
  if (program === "cp" && target.length === 0 && values.some((w) => w === "--no-target-directory" || /^-[^-]*T/.test(w))) return { filled: [destination], landed: [] }
  // `x/.` (and rsync's `x/`) copies x's contents; ditto always does; a glob's names are known when it runs. So does
  // BSD's (macOS's) `cp -R x/ d`: GNU cp copies x itself, which is asked about here as a fill too.
  const contents = (w: CommandLine.Word) =>
    program === "ditto" || CommandLine.isGlob(w) || w.value.endsWith("/.") || ((program === "rsync" || program === "cp") && w.value.endsWith("/")) || remoteGlob(program, w.value)
  const filled = sources.some(contents) ? [destination] : []
  const landed = sources.filter((w) => !contents(w)).flatMap((w) => {
    const name = NodePath.basename(w.value)
    return name === "" || name === "." || name === ".." ? [] : [NodePath.join(destination, name)]
  })
  return { filled, landed }
}

/** Any program `runsProgramText` looks at, in one test: most commands are none of them. */
const interpreterNames = new RegExp(CommandRisk.interpreters.map((i) => i.names.source).join("|"))

/**
 * Whether an awk program can run a command or write a file: `system(…)`, a pipe to or from a command
 * (`print | "sh"`, `"cmd" | getline`, gawk's `|&`), a `print`/`printf` redirected (`> "f"`, `>> "f"`).
 * A comparison (`$1 > 3`, `a || b`) does neither: before, `awk '$1 > 3' f && git status` asked.
 */
const awkRunsOrWrites = (program: string): boolean =>
  /\bsystem\s*\(|(?:^|[^|])\|(?!\|)|\bprintf?\b[^;{}\n]*>/.test(program.replace(/"(?:[^"\\\n]|\\.)*"/g, '""'))

/**
 * What GNU sed runs or writes from its script: the `e` command and the `s///e` flag run program
 * text, `w`/`W` and `s///w` write a file the script names (`sed -n '1e cp -r ev/. .' f`), unless
 * `--sandbox`. Read loosely: a command letter after an address or a separator, any `s` whose flags
 * hold one; over-reading only asks.
 */
const sedRunsOrWrites = (script: string): boolean =>
  /(?:^|[^A-Za-z]|[IM])\s*[ewW](?:[\s;}]|$)/.test(script) || /(?:^|[^A-Za-z]|[IM])s(.)(?:\\.|(?!\1).)*\1(?:\\.|(?!\1).)*\1[gpIiMm\d]*[ewW]/.test(script)

/** How GNU sed reads its options; every option that is a prefix of one taking a value is listed (an exact name wins). */
const sedSyntax: Options.Syntax = {
  shortArg: "efl",
  shortOptional: "i",
  longArg: ["--expression", "--file", "--line-length"],
  longFlags: [
    "--quiet", "--silent", "--in-place", "--null-data", "--zero-terminated", "--regexp-extended", "--separate", "--sandbox", "--unbuffered",
    "--posix", "--debug", "--follow-symlinks", "--binary", "--help", "--version"
  ],
  prefixes: true
}
/** How gawk reads its options (mawk's and nawk's are fewer: read as gawk's, a misread only asks). */
const awkSyntax: Options.Syntax = {
  shortArg: "fFvEilWe",
  shortOptional: "dDLop",
  longArg: ["--file", "--field-separator", "--assign", "--exec", "--include", "--load", "--source"],
  longFlags: [
    "--characters-as-bytes", "--traditional", "--copyright", "--debug", "--dump-variables", "--gen-pot", "--help", "--lint", "--lint-old", "--bignum",
    "--use-lc-numeric", "--non-decimal-data", "--optimize", "--no-optimize", "--profile", "--pretty-print", "--posix", "--re-interval", "--sandbox",
    "--version", "--csv", "--persist"
  ],
  prefixes: true,
  inOrder: true
}

/** The options of an interpreter (from `at + 1`) up to its first operand, stepping over those taking a value; the operand's index. */
const optionsOf = (values: ReadonlyArray<string>, at: number, takesValue: RegExp): { readonly options: ReadonlyArray<string>; readonly operand: number } => {
  // A scan that stops at the first operand: `watch python3 python3 …` stays linear.
  let end = at + 1
  while (end < values.length && values[end]!.startsWith("-") && values[end] !== "-" && values[end] !== "--") end += takesValue.test(values[end]!) ? 2 : 1
  return { options: values.slice(at + 1, Math.min(end, values.length)), operand: end < values.length ? end : -1 }
}

/**
 * Whether the command runs program text the line holds, which may move or write anything below cwd
 * (`python3 -c 'os.rename(…)'`): given by an option, or read from the line's here-document or pipe
 * (an interpreter with no script: `python3 - <<EOF`). An awk program or a sed script only when it
 * can run a command or write a file (`awk '{print $1}' f` reads).
 */
const runsProgramText = (names: ReadonlyArray<string>, values: ReadonlyArray<string>): boolean =>
  // The program, or one a wrapper runs (`nice python3 -c …`), not a word that only names one (`git log --grep node`).
  names.some((name, at) => {
    if (at > 0 && !CommandRisk.runsOtherPrograms(names[0]!)) return false
    if (name === "sed" || name === "gsed") {
      // GNU sed reads its options wherever they stand (`sed -n f -e '1e …'`), long ones by prefix (`--expr=`, `--sand`).
      const read = Options.parse(sedSyntax, values.slice(at + 1))
      if (read.long.has("--sandbox")) return false
      // A script file (`-f s.sed`, `--file=s.sed`) is read when sed runs, and may be one the line writes first: it may hold `e` or `w`.
      if (read.short.has("f") || read.long.has("--file")) return true
      const scripts = read.given.filter(([option]) => option === "e" || option === "--expression").map(([, script]) => script)
      return (scripts.length > 0 ? scripts : read.operands.slice(0, 1)).some(sedRunsOrWrites)
    }
    if (!interpreterNames.test(name)) return false
    const interpreter = CommandRisk.interpreters.find((i) => i.names.test(name))!
    const { options, operand } = optionsOf(values, at, interpreter.takesValue)
    if (/^(?:awk|gawk|mawk|nawk)$/.test(name)) {
      // gawk takes a long option by prefix (`--sour=`, `--ass x=1`) and stops at its first operand.
      const read = Options.parse(awkSyntax, values.slice(at + 1))
      const sources = read.given.filter(([option]) => option === "e" || option === "--source").map(([, source]) => source)
      const fromFile = read.short.has("f") || read.short.has("E") || read.long.has("--file") || read.long.has("--exec")
      return (sources.length > 0 || fromFile ? sources : read.operands.slice(0, 1)).some(awkRunsOrWrites)
    }
    // `python3 -m tarfile -e t.tar out` and `-m zipfile -e` unpack (into cwd without a folder named).
    const module = valuesOf(options, "-m", "-m").at(0) ?? (options.at(-1) === "-m" && operand >= 0 ? values[operand] : undefined)
    if (module !== undefined) return false
    if (options.some((w) => /^(?:-V|--version|-h|--help)$/.test(w))) return false
    return options.some((w) => interpreter.inline.test(w)) || operand < 0 || values[operand] === "-" || (name === "deno" && values[operand] === "eval")
  })

/** What `python3 -m tarfile -e t.tar [dir]` (or `zipfile`) unpacks into; nothing for another module. */
const unpackedByModule = (names: ReadonlyArray<string>, values: ReadonlyArray<string>): ReadonlyArray<string> => {
  const at = names.findIndex((name) => /^(?:python[0-9.]*|pypy[0-9.]*)$/.test(name))
  if (at < 0) return []
  const module = values.indexOf("-m", at)
  if (module < 0 || !/^(?:tarfile|zipfile)$/.test(values[module + 1] ?? "")) return []
  const rest = values.slice(module + 2)
  // argparse takes a long option by any unambiguous prefix (`--ext`), its first value after `=` too.
  const extract = rest.findIndex((w) => w === "-e" || Options.names(w, ["--extract"]))
  return extract < 0 ? [] : [rest[extract + (rest[extract]!.includes("=") ? 1 : 2)] ?? "."]
}

/** The folders a compressor given `-r` rewrites in place (`gunzip -r z` turns `z/.git/config.gz` into `z/.git/config`). */
const recompressed = (args: ReadonlyArray<string>): ReadonlyArray<string> =>
  args.some((w) => w === "--recursive" || /^-[a-zA-Z0-9]*r/.test(w)) ? args.filter((w) => !w.startsWith("-")) : []

/** wgetrc commands (`-e robots=off`) that leave `-O`'s one file the only one written: the common ones, none recursive. */
const wgetOneFileSettings = new Set([
  "robots", "checkcertificate", "useragent", "timeout", "dnstimeout", "connecttimeout", "readtimeout", "tries", "wait", "waitretry",
  "header", "httpproxy", "httpsproxy", "noproxy", "useproxy", "progress", "quiet", "verbose", "retryconnrefused", "showprogress"
])

/**
 * Whether every setting wget's `-e`/`--execute` gives (`-e robots=off`, `-erobots=off`, `--execute=…`, by any prefix of
 * `--execute`) is one of those: any other may make it recursive (`-e recursive=on`), and `-O` then names no one file.
 * wget reads a command's name without case, `_` or `-` (`check_certificate`). Before, any `-e` filled cwd next to `-O`.
 */
const wgetSettingsKeepOne = (args: ReadonlyArray<string>): boolean =>
  args.every((w, i) => {
    const cluster = /^-[Vhbdqv4F6cNSxErkKmpHL]*e(.*)$/.exec(w)
    const long = /^--exe(?:c(?:u(?:te?)?)?)?(?:=(.*))?$/.exec(w)
    if (cluster === null && long === null) return true
    const value = cluster !== null ? (cluster[1] === "" ? args[i + 1] : cluster[1]) : long![1] ?? args[i + 1]
    const name = /^\s*([A-Za-z_-]+)\s*=/.exec(value ?? "")?.[1]?.toLowerCase().replace(/[_-]/g, "")
    return name !== undefined && wgetOneFileSettings.has(name)
  })

/**
 * Where a downloader writes files whose names the URL or the server gives: wget (unless `-O` names
 * the one file), `curl -O`/`--remote-name` (`-o` names it), aria2c; into `-P`/`--output-dir`/`-d`,
 * or cwd. `wget http://h/.git` writes a `.git` file that may say `gitdir: d1/d2/d3/ev/.git`;
 * `wget -r` writes whatever the server's pages link to.
 */
const downloadedInto = (program: string, args: ReadonlyArray<string>, configured: boolean): ReadonlyArray<string> => {
  const into = (named: ReadonlyArray<string>) => (named.length === 0 ? ["."] : named)
  switch (program) {
    case "wget": {
      // A cluster's letter counts only after flags that take no value (`-qO-`, not the `O` of `-UOK`'s value).
      const named = args.some((w) => /^-[Vhbdqv4F6cNSxErkKmpHL]*O/.test(w) || /^--output-d/.test(w))
      // `-r`/`-m`/`-p` (GNU's long options are read by any prefix, `--recur`), or settings that may hold them:
      // `-e`, `--execute`, a startup file (`--config`, `WGETRC`, the `.wgetrc` of the home the line names).
      const more = configured || args.some((w) => /^-[Vhbdqv4F6cNSxErkKmpHL]*[rmp]|^--(?:rec|mi|pag|conf)/.test(w)) || !wgetSettingsKeepOne(args)
      return named && !more ? [] : into(valuesOf(args, "-P", "--directory-prefix"))
    }
    case "curl": {
      // A config file may say `remote-name`: `-K k`/`--config k`, or the `.curlrc` of a home the line names (`CURL_HOME=.`,
      // `XDG_CONFIG_HOME=.`, `HOME=.`) unless `-q`/`--disable` comes first. Where it writes is then its to say: cwd is filled.
      // curl (7.88) takes a long option by any unambiguous prefix: `--conf k`, `--remote-name-a`.
      if (args.some((w) => /^-[a-zA-Z]*K/.test(w) || Options.names(w, ["--config"])) || (configured && !/^(?:-q|--disable)$/.test(args[0] ?? ""))) return ["."]
      return args.some((w) => /^-[a-zA-Z]*[OJ]/.test(w) || Options.names(w, ["--remote-name", "--remote-name-all", "--remote-header-name"])) ? into(valuesOf(args, "--output-dir", "--output-dir")) : []
    }
    case "wget2":
      return downloadedInto("wget", args, configured)
    case "axel":
      return into(valuesOf(args, "-o", "--output"))
    case "aria2c":
      return into(valuesOf(args, "-d", "--dir"))
    // sftp gets into cwd (or where its batch file's `lcd` says); the others write where the server or what they read say.
    default:
      return ["."]
  }
}

/** git's own options (before the subcommand, read exactly as git reads them) that give a configuration, which `init.templateDir` may be. */
const gitConfigures = /^(?:-c.*|--config-env(?:=.*)?)$/

/**
 * The long options of `git init` and `git clone` (any version's): whether each takes the next word as its value
 * (`--shared`'s is optional, given with `=` only) and whether it gives a template or configuration.
 */
const gitMakesLong: Record<"init" | "clone", ReadonlyArray<readonly [name: string, valued: boolean, configures?: boolean]>> = {
  init: [["template", true, true], ["bare", false], ["shared", false], ["quiet", false], ["separate-git-dir", true], ["initial-branch", true], ["object-format", true], ["ref-format", true]],
  clone: [
    ["template", true, true], ["config", true, true], ["verbose", false], ["quiet", false], ["progress", false], ["reject-shallow", false], ["checkout", false],
    ["bare", false], ["mirror", false], ["local", false], ["hardlinks", false], ["shared", false], ["recurse-submodules", false], ["recursive", false],
    ["jobs", true], ["reference", true], ["reference-if-able", true], ["dissociate", false], ["origin", true], ["branch", true], ["revision", true],
    ["upload-pack", true], ["depth", true], ["shallow-since", true], ["shallow-exclude", true], ["single-branch", false], ["tags", false],
    ["shallow-submodules", false], ["separate-git-dir", true], ["ref-format", true], ["server-option", true], ["ipv4", false], ["ipv6", false],
    ["filter", true], ["also-filter-submodules", false], ["remote-submodules", false], ["sparse", false], ["bundle-uri", true]
  ]
}
/** Their short options that take a value (the rest of a cluster, else the next word: `-qc k=v`, `-bmain`); `-c` configures. */
const gitMakesShort = { init: "b", clone: "obucj" }

/**
 * How `git init`/`git clone` reads its words as git's parse-options does (`Options.parse`): a long option by any
 * unambiguous prefix (`--templ=t`, `--tem t`, `--conf k=v`: git 2.39 copies the template or sets the configuration),
 * short ones in clusters (`-qc k=v`). Its operands; whether a template or configuration is given; `unsure` when a
 * prefix names options of which some take a value (which git runs depends on its version): the operands are then not known.
 */
const gitMakesRead = (subcommand: "init" | "clone", options: ReadonlyArray<string>) => {
  const long = gitMakesLong[subcommand]
  const read = Options.parse({
    shortArg: gitMakesShort[subcommand],
    longArg: long.filter(([, valued]) => valued).map(([name]) => `--${name}`),
    longFlags: long.filter(([, valued]) => !valued).map(([name]) => `--${name}`),
    prefixes: true,
    negations: true
  }, options)
  const configures = (subcommand === "clone" && read.short.has("c")) || long.some(([name, , gives]) => gives === true && read.long.has(`--${name}`))
  return { operands: read.operands, configures, unsure: read.unsure }
}

/**
 * The folder `git init` or `git clone` makes its repository in when the line gives it a template or
 * configuration (`--template=t`, `-c`, `--config`, or `configured`: `GIT_TEMPLATE_DIR`, a config file
 * `GIT_CONFIG_*` names, which may set `init.templateDir`). That repository's `.git/config` and hooks
 * are then the template's, and its folder may already be there, empty (`git clone --template=t x
 * empty && git -C empty status`, `git init --template=t && git status`): it counts as filled. Without
 * one git copies only its own templates and none of a clone's config (`git init && git add .` stays the rule's).
 */
const gitMade = (names: ReadonlyArray<string>, values: ReadonlyArray<string>, configured: boolean): ReadonlyArray<string> => {
  const at = names.indexOf("git")
  if (at < 0) return []
  const words = values.slice(at + 1)
  const sub = GlobalOptions.subcommandIndex("git", words)
  const subcommand = words[sub]
  if (subcommand !== "init" && subcommand !== "clone") return []
  const read = gitMakesRead(subcommand, words.slice(sub + 1))
  if (!configured && !read.configures && !words.slice(0, sub).some((w) => gitConfigures.test(w))) return []
  if (read.unsure) return ["."]
  const moves = valuesOf(words.slice(0, sub), "-C", "-C")
  const { operands } = read
  // A clone without a folder makes one named after the repository (`x.git` and `x/.git` make `x`).
  const humanish = (url: string) => NodePath.basename(url.replace(/\/?\.git\/?$|\/+$/, "").replace(/^.*:/, "")) || "."
  const folder = subcommand === "init" ? operands[0] ?? "." : operands[1] ?? (operands[0] === undefined ? "." : humanish(operands[0]))
  return [[...moves, folder].reduce((base, to) => (NodePath.isAbsolute(to) ? to : NodePath.join(base, to)), ".")]
}

/** Every program `of` looks at first (besides interpreters and what runs other programs). */
const fillers = new Set([...unpackers, ...placers, ...runners, ...recursiveCompressors, ...downloaders, "sed", "gsed", "git"])

const nothing = { filled: [], landed: [] }

/**
 * What one simple command (its words from the program on, wrappers included: `nice tar xf t.tar`)
 * fills and lands: folders as the line names them (`.` for cwd), from cwd. `configured`: the line's variables give
 * git a template or configuration, or a downloader a startup file (`GIT_TEMPLATE_DIR`, `CURL_HOME`, `HOME`, …).
 */
export const of = (
  words: ReadonlyArray<CommandLine.Word>,
  configured = false
): { readonly filled: ReadonlyArray<string>; readonly landed: ReadonlyArray<string> } => {
  // Most commands are none of these, and are told apart by their program alone (a line may hold 30,000 of them).
  const first = NodePath.basename(words[0]?.value ?? "")
  if (!fillers.has(first) && !interpreterNames.test(first) && !CommandRisk.runsOtherPrograms(first)) return nothing
  // A git fills only when it makes a repository from a template (a line may hold thousands of gits).
  if (first === "git" && !words.some((w) => w.value === "init" || w.value === "clone")) return nothing
  const names = words.map((w) => NodePath.basename(w.value))
  const values = words.map((w) => w.value)
  if (first === "git") return { filled: gitMade(names, values, configured), landed: [] }
  if (runsProgramText(names, values)) return { filled: ["."], landed: [] }
  const byModule = unpackedByModule(names, values)
  if (byModule.length > 0) return { filled: byModule, landed: [] }
  // After a wrapper (`nice git init --template=t`).
  const made = gitMade(names, values, configured)
  if (made.length > 0) return { filled: made, landed: [] }
  const at = names.findIndex((name) => unpackers.has(name) || placers.has(name) || recursiveCompressors.has(name) || downloaders.has(name))
  if (at < 0) return nothing
  const program = names[at]!
  // Run by xargs, parallel or find: its sources and destination come from what the runner reads.
  if (names.slice(0, at).some((name) => runners.has(name))) return { filled: ["."], landed: [] }
  const args = words.slice(at + 1)
  const argValues = values.slice(at + 1)
  if (unpackers.has(program)) return { filled: unpackedInto(program, argValues), landed: [] }
  if (recursiveCompressors.has(program)) return { filled: recompressed(argValues), landed: [] }
  if (downloaders.has(program)) return { filled: downloadedInto(program, argValues, configured), landed: [] }
  return placed(program, args)
}

