/**
 * Issue 20 (the tool step): `Paths.realPath` asks the system's `realpath` first (one threadpool trip)
 * and walks the path component by component only when that fails. Both must say the same thing of
 * every path a hostile repository can hold: links in and out, chains, `..` after a link, absolute
 * and relative targets, dangling links, loops, a file used as a folder, missing components, a folder
 * that may not be searched. The walk is the reference (it is what resolved every path before).
 * And the read that now stops at a regular file's size still reads a file that grew, or a `/proc`
 * file whose size says 0, to its end.
 */
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import * as Mounts from "../../src/layers/workspace/Mounts.js"
import * as Paths from "../../src/layers/workspace/Paths.js"
import * as SafeFile from "../../src/layers/workspace/SafeFile.js"

const root = NodeFs.realpathSync(NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "effect-agent-realpath-")))
afterAll(() => {
  NodeFs.chmodSync(NodePath.join(root, "ws", "locked"), 0o755)
  NodeFs.rmSync(root, { recursive: true, force: true })
})
const ws = NodePath.join(root, "ws")
const out = NodePath.join(root, "out")
const at = (...parts: Array<string>) => NodePath.join(ws, ...parts)
NodeFs.mkdirSync(at("src", "deep", "er"), { recursive: true })
NodeFs.mkdirSync(out, { recursive: true })
NodeFs.writeFileSync(at("src", "a.txt"), "a\n")
NodeFs.writeFileSync(NodePath.join(out, "secret"), "s\n")
NodeFs.symlinkSync(out, at("out_abs"))
NodeFs.symlinkSync("../out", at("out_rel"))
NodeFs.symlinkSync("src/deep", at("deep_link"))
NodeFs.symlinkSync("deep_link/er", at("chain"))
NodeFs.symlinkSync("nowhere/at/all", at("dangling"))
NodeFs.symlinkSync(NodePath.join(out, "missing", "file"), at("dangling_out"))
NodeFs.symlinkSync("loop_b", at("loop_a"))
NodeFs.symlinkSync("loop_a", at("loop_b"))
NodeFs.symlinkSync(".", at("self"))
// A chain of 30 links: over glibc's older limit of 20, under the walk's (and Linux's) 40.
for (let i = 0; i < 30; i++) NodeFs.symlinkSync(i === 29 ? "src/a.txt" : `hop${i + 1}`, at(`hop${i}`))
// A chain of 45: more than anyone resolves.
for (let i = 0; i < 45; i++) NodeFs.symlinkSync(i === 44 ? "src/a.txt" : `far${i + 1}`, at(`far${i}`))
NodeFs.mkdirSync(at("locked", "inner"), { recursive: true })
NodeFs.writeFileSync(at("locked", "inner", "f"), "f\n")
NodeFs.chmodSync(at("locked"), 0o000)
// Links into /proc: `/proc/self/root` leads to `/` again, `/proc/<pid>/root` into another process's
// mount namespace (where a sandboxed command may have mounted a FUSE file system that never answers).
NodeFs.symlinkSync(`/proc/self/root${ws}/src`, at("via_proc"))
NodeFs.symlinkSync(`/proc/self/root${ws}`, at("via_proc_dir"))

const requested = [
  "src/a.txt",
  "src/../src/a.txt",
  "src/deep/er/../../a.txt",
  "out_abs/secret",
  "out_rel/secret",
  "out_rel/../ws/src/a.txt",
  "deep_link/..",
  "deep_link/../a.txt",
  "chain",
  "chain/..",
  "chain/../../a.txt",
  "dangling",
  "dangling/more",
  "dangling_out",
  "loop_a",
  "loop_a/x",
  "self/self/self/src/a.txt",
  "hop0",
  "far0",
  "far0/..",
  "src/a.txt/inside",
  "src/a.txt/..",
  "missing/../src/a.txt",
  "missing/deeper/file",
  "missing/../out_abs/secret",
  "missing/deeper/../../out_rel/secret",
  "missing/deeper/../x",
  "src/a.txt/inside/../../../out_abs/secret",
  "locked/inner/f",
  "locked/../src/a.txt",
  ".",
  "..",
  "../../../../..",
  "/",
  "//proc/self/../self/status",
  "/proc/self/fd/0",
  "/dev/null",
  "via_proc/a.txt",
  "via_proc_dir/src/../src/a.txt"
]

/** Paths the synchronous resolution answers itself (every step on this test's local file system), and paths it leaves to the asynchronous way. */
const ordinary = ["src/a.txt", "src/deep/er/../../a.txt", "out_rel/../ws/src/a.txt", "chain/../../a.txt", "dangling/more", "loop_a", "hop0", "far0/..", "src/a.txt/inside", "missing/deeper/file", "missing/../out_abs/secret", "missing/deeper/../../out_rel/secret", "."]
const notOrdinary = requested.filter((p) => p.includes("proc") || p.startsWith("/dev"))

describe("Paths.realPath", () => {
  it.each(requested)("%s resolves as the walk resolves it", async (path) => {
    const absolute = path.startsWith("/") ? path : `${ws}/${path}`
    expect(await Paths.realPath(absolute)).toEqual(await Paths.walk(absolute))
  })

  describe("synchronously (Paths.realPathNow)", () => {
    beforeAll(() => Mounts.refresh())

    it.each(requested)("%s resolves as the walk resolves it, or is left to the asynchronous way", async (path) => {
      const absolute = path.startsWith("/") ? path : `${ws}/${path}`
      const now = Paths.realPathNow(absolute)
      if (now !== undefined) expect(now).toEqual(await Paths.walk(absolute))
      if (ordinary.includes(path)) expect(now).toBeDefined()
      if (notOrdinary.includes(path)) expect(now).toBeUndefined()
    })

    /** What `Paths.resolveNow` answered before, from the walk: the cwd and the path resolved apart. */
    const walked = async (cwd: string, path: string) => {
      const root = (await Paths.walk(NodePath.resolve(cwd))).path
      const real = await Paths.walk(path.startsWith("/") ? path : `${NodePath.resolve(cwd)}/${path}`)
      const inside = real.exact && Paths.isInside(NodePath, root, real.path)
      return { requested: path, resolved: real.path, insideCwd: inside, relative: inside ? NodePath.relative(root, real.path) || "." : undefined, access: "read" }
    }

    // The cwd and a relative path are walked in one pass: the cwd's real path is where the walk stood
    // once the cwd's names were looked at, through links in the cwd too.
    for (const cwd of [ws, at("deep_link"), at("chain"), at("out_rel"), at("self", "src"), at("missing", "cwd")]) {
      it.each(requested)(`%s from ${NodePath.relative(root, cwd)} resolves as the cwd and the path walked apart`, async (path) => {
        const now = Paths.resolveSync(NodePath, cwd, path, "read")
        if (now !== undefined) expect(now).toEqual(await walked(cwd, path))
        if (ordinary.includes(path) && cwd === ws) expect(now).toBeDefined()
        expect(await Paths.resolveNow(NodePath, cwd, path, "read")).toEqual(await walked(cwd, path))
      })
    }

    it("nothing on a mount that is not local is looked at synchronously: the asynchronous way answers the same", async () => {
      // This test's folder as if it were an NFS mount.
      Mounts.assume(`22 1 253:1 / / rw shared:1 - ext4 /dev/vda rw\n40 22 0:50 / ${root} rw shared:9 - nfs4 server:/x rw\n`)
      try {
        expect(Paths.realPathNow(at("src", "a.txt"))).toBeUndefined()
        expect(Paths.resolveSync(NodePath, ws, "src/a.txt", "read")).toBeUndefined()
        expect(SafeFile.readSmallNow(at("src", "a.txt"), 1000)).toBeUndefined()
        expect(await Paths.realPath(at("out_rel", "secret"))).toEqual(await Paths.walk(at("out_rel", "secret")))
        expect(Buffer.from(await SafeFile.readFileNow(at("src", "a.txt"), 1000)).toString()).toBe("a\n")
        // A root that is not local: not even `/` is opened.
        Mounts.assume("22 1 0:30 / / rw - nfs srv:/ rw\n")
        expect(Paths.realPathNow("/")).toBeUndefined()
      } finally {
        await Mounts.refresh()
      }
      expect(Paths.realPathNow(at("src", "a.txt"))).toEqual({ path: at("src", "a.txt"), exact: true })
      expect(Buffer.from(SafeFile.readSmallNow(at("src", "a.txt"), 1000)!).toString()).toBe("a\n")
    })

    /**
     * A link's target may be a path of thousands of names, and 40 links each lead to one: the walk
     * would look at each name with a system call on the event loop — 80,000 calls holding every
     * session for a good part of a second, for one call. The synchronous walk stops early and
     * leaves such a path to the asynchronous way.
     */
    it("a path of more names than any ordinary one is left to the asynchronous way", async () => {
      const deep = Array.from({ length: Paths.maxNamesNow + 10 }, () => "d").join("/")
      NodeFs.mkdirSync(at("deep", deep), { recursive: true })
      NodeFs.symlinkSync(`deep/${deep}`, at("to_deep"))
      expect(Paths.realPathNow(at("to_deep"))).toBeUndefined()
      expect(await Paths.realPath(at("to_deep"))).toEqual({ path: at("deep", deep), exact: true })
      // Below the bound, answered at once.
      const shallow = Array.from({ length: 20 }, () => "d").join("/")
      expect(Paths.realPathNow(at("deep", shallow))).toEqual({ path: at("deep", shallow), exact: true })
      // And a file that deep is read the asynchronous way.
      NodeFs.writeFileSync(at("deep", deep, "f.txt"), "deep\n")
      expect(SafeFile.readSmallNow(at("deep", deep, "f.txt"), 1000)).toBeUndefined()
      expect(Buffer.from(await SafeFile.readFileNow(at("deep", deep, "f.txt"), 1000)).toString()).toBe("deep\n")
      NodeFs.writeFileSync(at("deep", shallow, "f.txt"), "shallow\n")
      expect(Buffer.from(SafeFile.readSmallNow(at("deep", shallow, "f.txt"), 1000)!).toString()).toBe("shallow\n")
    })

    it("never looks into /proc, nor follows a link there: that is left to the asynchronous way", async () => {
      expect(Paths.realPathNow("/proc/self/status")).toBeUndefined()
      expect(Paths.realPathNow(at("via_proc", "a.txt"))).toBeUndefined()
      // Followed, but not exact: `/proc/self` is the agent's own process, not the command's (procSelfPaths.test.ts).
      expect(await Paths.realPath(at("via_proc", "a.txt"))).toEqual({ path: at("src", "a.txt"), exact: false })
    })
  })

  // A program that makes the missing folder first (`mkdir -p`, `install -D`) then goes up from it
  // and through what follows: a link after the `..` leads where it leads.
  it.each([
    ["missing/../out_abs/secret", () => NodePath.join(out, "secret")],
    ["missing/deeper/../../out_rel/secret", () => NodePath.join(out, "secret")],
    ["missing/deeper/../x", () => at("missing", "x")],
    ["src/a.txt/inside/../../../out_abs/secret", () => NodePath.join(out, "secret")]
  ])("a link after `..` out of a missing folder is followed: %s", async (path, expected) => {
    await Mounts.refresh()
    const absolute = `${ws}/${path}`
    expect(await Paths.walk(absolute)).toEqual({ path: expected(), exact: true })
    expect(Paths.realPathNow(absolute)).toEqual({ path: expected(), exact: true })
    expect(await Paths.resolveNow(NodePath, ws, path, "write")).toMatchObject({ resolved: expected() })
  })

  it("a link chain longer than the system's own limit is still followed, and a longer one than 40 is not exact", async () => {
    expect(await Paths.realPath(at("hop0"))).toEqual({ path: at("src", "a.txt"), exact: true })
    expect((await Paths.realPath(at("far0"))).exact).toBe(false)
    expect((await Paths.realPath(at("loop_a"))).exact).toBe(false)
  })
})

describe("SafeFile.readFile stops at a regular file's size only when that is where the file ends", () => {
  it("a file that grew after its fstat is read to its end", async () => {
    const file = NodePath.join(root, "grown.txt")
    NodeFs.writeFileSync(file, "x".repeat(70_000))
    const handle = await NodeFs.promises.open(file, "r")
    try {
      // As if fstat had said 10 bytes: the reads go on until one answers 0.
      const bytes = await SafeFile.readCapped(handle, 1 << 20, undefined, 10)
      expect(bytes.byteLength).toBe(70_000)
    } finally {
      await handle.close()
    }
  })

  it("a /proc file (size 0) is read whole", async () => {
    const handle = await NodeFs.promises.open("/proc/self/status", "r")
    try {
      const info = await handle.stat()
      expect(info.size).toBe(0)
      const text = Buffer.from(await SafeFile.readCapped(handle, 1 << 20, undefined, info.size)).toString("utf8")
      expect(text).toContain("VmRSS")
    } finally {
      await handle.close()
    }
  })

  it("a file read at its size is whole, and over the cap it still fails", async () => {
    const file = NodePath.join(root, "exact.txt")
    NodeFs.writeFileSync(file, "y".repeat(4096))
    expect((await SafeFile.readFileNow(file, 1 << 20)).byteLength).toBe(4096)
    await expect(SafeFile.readFileNow(file, 100)).rejects.toMatchObject({ code: "file_too_large" })
  })
})
