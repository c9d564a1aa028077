/** What a command fills without the line naming it, and what named sources land as (`LineFills`, round 23). */
import { describe, expect, it } from "@effect/vitest"
import * as CommandLine from "../../src/layers/workspace/CommandLine.js"
import * as LineFills from "../../src/layers/workspace/LineFills.js"

const of = (line: string) => LineFills.of(CommandLine.tokenize(line).tokens.filter((t): t is CommandLine.Word => t._tag === "Word"))

describe("LineFills.of", () => {
  it("round 25: more unpackers, -r compressors, downloads named by the server, git init/clone given a template", () => {
    const fills: ReadonlyArray<readonly [string, ReadonlyArray<string>]> = [
      ["lha xw=out a.lzh", ["out"]],
      ["unrar x a.rar out/", ["out/"]],
      ["unrar x -opout a.rar", ["out"]],
      ["unar a.rar -o out", ["out"]],
      ["dpkg-deb -x a.deb out", ["out"]],
      ["7zz x a.7z -oout", ["out"]],
      ["gunzip -r z y", ["z", "y"]],
      ["gzip -dr z", ["z"]],
      ["wget -r -P out http://h/", ["out"]],
      ["wget http://h/x", ["."]],
      ["curl -sOJ --output-dir out http://h/x", ["out"]],
      ["git init --template=t", ["."]],
      ["git -C x clone --template=t https://h/repo.git", ["x/repo"]],
      ["git clone -c a=b ../ev.git/ n", ["n"]],
      ["nice git init --template t sub", ["sub"]]
    ]
    for (const [line, filled] of fills) expect(of(line).filled, line).toEqual(filled)
    for (const line of ["unrar l a.rar", "lha l a.lzh", "gzip -d a.gz", "wget -qO- http://h/x", "curl -o f http://h/x", "git init", "git clone x n", "git status"]) {
      expect(of(line).filled, line).toEqual([])
    }
  })

  it("review 45: git's option prefixes and clusters, wget's value clusters, curl's config files", () => {
    const fills: ReadonlyArray<readonly [string, ReadonlyArray<string>]> = [
      ["git init --templ=t", ["."]],
      ["git init --t=t", ["."]],
      ["git init --tem t empty", ["empty"]],
      ["git init --template=t --shared empty", ["empty"]],
      ["git clone --conf a=b src n", ["n"]],
      ["git clone -qc a=b src n", ["n"]],
      ["git clone -qca=b src n", ["n"]],
      ["git clone -bmain --config=a=b src n", ["n"]],
      // `--t` is --template in git 2.39, ambiguous with --tags since: which word is the folder depends on the version.
      ["git clone --t t src n", ["."]],
      ["wget -q -UOK --content-disposition http://h/x", ["."]],
      ["wget -qO f -e recursive=on http://h/", ["."]],
      ["wget -qO f --recur http://h/", ["."]],
      ["curl -s -K k http://h/x", ["."]],
      ["curl -sK k http://h/x", ["."]],
      ["curl --config=k http://h/x", ["."]]
    ]
    for (const [line, filled] of fills) expect(of(line).filled, line).toEqual(filled)
    for (const line of ["git clone --no-template src n", "git clone --qu src n", "wget -UOK -O f http://h/x", "wget -qO- http://h/x", "curl -s http://h/x"]) {
      expect(of(line).filled, line).toEqual([])
    }
    // The line's variables name the home whose .curlrc curl reads, unless -q comes first.
    const words = (line: string) => CommandLine.tokenize(line).tokens.filter((t): t is CommandLine.Word => t._tag === "Word")
    expect(LineFills.of(words("curl -s http://h/x"), true).filled).toEqual(["."])
    expect(LineFills.of(words("curl -q -s http://h/x"), true).filled).toEqual([])
  })

  it("round 26: long options by prefix (getopt_long, curl, argparse) and options after operands (GNU sed)", () => {
    const fills: ReadonlyArray<readonly [string, ReadonlyArray<string>]> = [
      ["tar --extr -f t.tar", ["."]],
      ["tar -x --direc=out -f t.tar", ["out"]],
      ["tar -x --checkpoint -C out -f t.tar", ["out"]],
      ["tar -xvCout -f t.tar", ["out"]],
      ["sed -n --expr='1e id' f", ["."]],
      ["sed -n --e='1e id' f", ["."]],
      ["sed -n f -e '1e id'", ["."]],
      ["sed -n f --fi=s.sed", ["."]],
      ["gawk --sour='BEGIN{system(\"id\")}' f", ["."]],
      ["gawk --ass x=1 'BEGIN{system(\"id\")}'", ["."]],
      ["gawk --fi=p.awk f", []],
      ["python3 -m tarfile --ext t.tar out", ["out"]],
      ["python3 -m zipfile --extract=t.zip out", ["out"]],
      ["curl -s --conf k http://h/x", ["."]],
      ["curl -s --remote-name-a http://h/x", ["."]],
      ["cpio --ext", ["."]],
      ["cpio --pass out", ["out"]]
    ]
    for (const [line, filled] of fills) expect(of(line).filled, line).toEqual(filled)
    for (const line of ["tar --li -f t.tar", "tar --cre -f t.tar .", "sed -n --sand '1e id' f", "sed -i.bak 's/a/b/' f", "sed -ie 's/a/b/' f", "curl -s --compressed http://h/x"]) {
      expect(of(line).filled, line).toEqual([])
    }
  })

  it("unpackers fill cwd or the folder they are told to write in, when they write", () => {
    expect(of("tar xf t.tar")).toEqual({ filled: ["."], landed: [] })
    expect(of("tar -xzf t.tgz -C out")).toEqual({ filled: ["out"], landed: [] })
    expect(of("tar --extract --file=t.tar --directory=out")).toEqual({ filled: ["out"], landed: [] })
    expect(of("nice bsdtar xf t.tar")).toEqual({ filled: ["."], landed: [] })
    expect(of("unzip -oq t.zip -d out")).toEqual({ filled: ["out"], landed: [] })
    expect(of("cpio -idv")).toEqual({ filled: ["."], landed: [] })
    expect(of("ar x lib.a")).toEqual({ filled: ["."], landed: [] })
    expect(of("patch -p1 -d sub")).toEqual({ filled: ["sub"], landed: [] })
    for (const line of ["tar cf t.tar .", "tar tf t.tar", "unzip -l t.zip", "cpio -o", "ar t lib.a", "patch --dry-run -p1"]) expect(of(line).filled, line).toEqual([])
  })

  it("a folder's contents copied in fill the destination; named sources land as dest/<name>", () => {
    expect(of("cp -r ev/. .")).toEqual({ filled: ["."], landed: [] })
    expect(of("rsync -a ev/ ./")).toEqual({ filled: ["./"], landed: [] })
    expect(of("cp -r ev/* .").filled).toEqual(["."])
    expect(of("ditto ev out").filled).toEqual(["out"])
    expect(of("mv d1/sub .")).toEqual({ filled: [], landed: ["sub"] })
    expect(of("cp -r d1/ev/.git d1/x out")).toEqual({ filled: [], landed: ["out/.git", "out/x"] })
    expect(of("ln -s d1/ev/.git .")).toEqual({ filled: [], landed: [".git"] })
    expect(of("cp -t out -S .bak a b")).toEqual({ filled: [], landed: ["out/a", "out/b"] })
    expect(of("cp a.txt")).toEqual({ filled: [], landed: [] })
  })

  it("program text the line runs fills cwd; a file's code, a module, or text that only reads does not", () => {
    for (const line of ["python3 -c 'import os'", "nice python3 -Ic x", "node -e x", "node --eval=x", "perl -pi -e s/a/b/ f", "ruby -e x", "php -r x", "deno eval x", "python3 -", "python3", "awk 'BEGIN{system(\"x\")}'", "gawk '{print > \"f\"}' a"]) {
      expect(of(line).filled, line).toEqual(["."])
    }
    for (const line of ["python3 s.py", "python3 -m pytest", "node build.js", "python3 --version", "awk '{print $1}' f", "awk -f prog.awk f", "git log --grep node", "grep python3 f"]) {
      expect(of(line).filled, line).toEqual([])
    }
  })

  it("run by xargs, parallel or find: what it moves is read when it runs, cwd is filled", () => {
    expect(of("xargs -I{} mv d1/clone {}").filled).toEqual(["."])
    expect(of("find d1 -name sub -exec mv {} . ;").filled).toEqual(["."])
  })

  it("round 24: an interpreter's option taking a value does not end the scan before its program text", () => {
    for (const line of [`awk -v x=1 'BEGIN{system("x")}'`, "perl -I . -e x", "node -r fs -e x", "node --require fs -e x", "python3 -W ignore -c x", "ruby -r fileutils -e x", "gawk -e 'BEGIN{system(\"x\")}'"]) {
      expect(of(line).filled, line).toEqual(["."])
    }
    expect(of("awk -v x=1 '{print $1}' f").filled).toEqual([])
  })

  it("round 24: an awk program that compares asks nothing; one that runs, pipes or prints to a file fills", () => {
    for (const line of ["awk '$1 > 3' f", "awk '$1 > 3 || $2 < 1 {print $1}' f", "awk '{ if (a >= b) print }' f"]) expect(of(line).filled, line).toEqual([])
    for (const line of ["awk '{print | \"sh\"}' f", "awk 'BEGIN{\"id\" | getline x}'", "awk '{printf \"%s\", $0 >> \"f\"}' a", "awk 'BEGIN { system (\"x\") }'"]) {
      expect(of(line).filled, line).toEqual(["."])
    }
  })

  it("round 24: cp -T, a trailing slash on cp's source, and more unpackers fill", () => {
    const fills: ReadonlyArray<readonly [string, string]> = [
      ["cp -rT src .", "."],
      ["cp -a --no-target-directory src out", "out"],
      ["cp -R ev/ .", "."],
      ["python3 -m tarfile -e t.tar .", "."],
      ["python3 -m zipfile -e t.zip out", "out"],
      ["python3 -m tarfile -e t.tar", "."],
      ["jar xf t.jar", "."],
      ["7z x t.7z -oout", "out"],
      ["7z x t.7z", "."],
      ["pax -r -f t.pax", "."],
      ["pax -rw src out", "out"],
      ["cpio -pdm out", "out"]
    ]
    for (const [line, folder] of fills) expect(of(line).filled, line).toEqual([folder])
    for (const line of ["python3 -m tarfile -l t.tar", "python3 -m pytest", "jar tf t.jar", "7z l t.7z", "pax -f t.pax"]) expect(of(line).filled, line).toEqual([])
  })

  it("round 24: GNU sed's e command, s///e and w run or write; --sandbox and a plain script do not", () => {
    for (const line of ["sed -n '1e cp -r ev/. .' f", "sed 's/x/y/e' f", "sed -e '$w out' f", "sed -n -e p -e '/a/e id' f"]) expect(of(line).filled, line).toEqual(["."])
    for (const line of ["sed --sandbox '1e id' f", "sed -n 's/e/E/gp' f", "sed -i 's/a/b/' f", "sed -e 's/be/we/' f"]) expect(of(line).filled, line).toEqual([])
  })
})
