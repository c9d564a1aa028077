/**
 * Red team round 25: fills round 24 left unread. Each line, under the user's exact rule for it, was allowed on main
 * (d3707db) and, run with bash and git 2.39, ran the hostile `core.fsmonitor` it put in place (the cases failed before
 * the fix); the tools not installed here (lha, unrar, bsdcpio, …) are pinned by their decision only.
 */
import { describe, it } from "@effect/vitest"
import { execFileSync } from "node:child_process"
import { cpSync, mkdirSync, writeFileSync } from "node:fs"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { join } from "node:path"
import { fsmonitor, lineChecks } from "./exactGitRule.js"
import { hostileBelow } from "./gitRepositories.js"

/**
 * The hostile repository at d1/d2/d3/ev, a copy at z whose `.git/config` is gzipped (git reads no config there until it
 * is unpacked), the template at t, an empty folder and a sed script whose `e` command copies the hostile repository
 * into cwd.
 */
const { base, hostile, folder } = hostileBelow("redteam25f", fsmonitor, (cwd) => {
  mkdirSync(join(cwd, "empty"))
  cpSync(hostile, join(cwd, "z"), { recursive: true })
  execFileSync("gzip", [join(cwd, "z", ".git", "config")])
  cpSync(join(base, "template"), join(cwd, "t"), { recursive: true })
  writeFileSync(join(cwd, "s.sed"), "1e cp -r d1/d2/d3/ev/. .\n")
  writeFileSync(join(cwd, "a.txt"), "a\n")
})
/** A template folder holding the hostile config: `git init --template` copies it as the new repository's `.git/config`. */
mkdirSync(join(base, "template"))
writeFileSync(join(base, "template", "config"), fsmonitor)
const { asks, allows } = lineChecks(folder)

describe("a sed script from a file (LineFills.runsProgramText)", () => {
  it("sed -f s.sed, --file=, -nf: its e and w commands are read when sed runs", async () => {
    for (const line of ["sed -f s.sed a.txt && git status", "sed --file=s.sed a.txt; git status", "sed -nf s.sed a.txt; git status"]) await asks(line)
    // --sandbox refuses e and w: the rule's.
    await allows("sed --sandbox -f s.sed a.txt && git status")
  })
})

describe("a compressor given -r rewrites what a folder holds (LineFills.recompressed)", () => {
  it("gunzip -r z, gzip -dr z, cd z && gunzip -r .: z/.git/config.gz becomes z/.git/config", async () => {
    for (const line of ["gunzip -r z && git -C z status", "gzip -dr z && git -C z status"]) await asks(line, "z")
    await asks("cd z && gunzip -r . && git status", "z")
    await asks("zstd -dr z && git -C z status", "z", false)
    // One file named: a write into a git folder, asked as before; a file beside the repository stays the rule's.
    await asks("gunzip z/.git/config.gz && git -C z status", "z")
    await allows("gzip -k a.txt && git status")
  })
})

describe("a template or configuration given to git init or git clone (LineFills.gitMade)", () => {
  it("--template=, --template t, a clone's -c, into cwd or a folder that is already there", async () => {
    await asks("git init --template=t && git status")
    await asks("git init --template=t empty && git -C empty status", "empty")
    await asks("git init empty --template t; cd empty; git status", "empty")
    await asks("git clone --template=t d1/d2/d3/ev empty && git -C empty status", "empty")
    await asks("git clone -c core.fsmonitor='touch fsmonitor-ran; false' d1/d2/d3/ev empty && git -C empty status", "empty")
    // A variable naming a template or a config file that may name one (init.templateDir).
    for (const line of ["GIT_TEMPLATE_DIR=t git init empty && git -C empty status", "GIT_CONFIG_GLOBAL=g.cfg git init empty && git -C empty status"]) {
      await asks(line, "empty", false)
    }
  })

  it("without one git copies only its own templates and none of a clone's config: the rule's", async () => {
    await allows("git init && git add a.txt && git status")
    await allows("git clone d1/d2/d3/ev empty && git -C empty status")
  })
})

describe("unpackers round 24 did not list (LineFills.unpackedInto)", () => {
  it("bsdcpio, lha, unrar, rar, unar, 7zz, dpkg-deb (not installed here: decisions only)", async () => {
    const lines = [
      "bsdcpio -i < a.cpio && git status",
      "lha x a.lzh && git status",
      "lha -x a.lzh; git status",
      "unrar x a.rar && git status",
      "unrar x a.rar empty/ && git -C empty status",
      "unar a.rar && git status",
      "7zz x a.7z && git status",
      "dpkg-deb -x a.deb empty && git -C empty status"
    ]
    for (const line of lines) await asks(line, ".", false)
  })
})

describe("a download whose file name the server gives (LineFills.downloadedInto)", () => {
  it("a .git from Content-Disposition or from a page wget -r follows sends git status to the hostile repository", async () => {
    // A URL naming `.git` asks as a path does; these name none: the server names the file.
    const gitdir = "gitdir: d1/d2/d3/ev/.git\n"
    const server = createServer((request, response) => {
      if (request.url === "/") response.end(`<a href=".git">x</a>`)
      else if (request.url === "/.git") response.end(gitdir)
      else if (request.url === "/x") response.writeHead(200, { "content-disposition": `attachment; filename=".git"` }).end(gitdir)
      else response.writeHead(404).end()
    })
    await new Promise<void>((listening) => server.listen(0, "127.0.0.1", listening))
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    try {
      await asks(`curl -sOJ ${url}/x && git status`)
      await asks(`wget -q --content-disposition ${url}/x && git status`)
      await asks(`wget -q -r -nH ${url}/ && git status`)
      // A file the line names, or output to stdout: the rule's.
      await allows(`wget -qO- ${url}/x && git status`)
      await allows(`curl -s ${url}/x && git status`)
      await allows(`curl -so page.html ${url}/x && git status`)
    } finally {
      server.close()
    }
  })
})
