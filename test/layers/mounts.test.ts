/**
 * Which paths `SafeFile` and `Paths` may touch with synchronous system calls: only those on a file
 * system that answers from memory or a local disk, read from the mount table.
 */
import { describe, expect, it } from "@effect/vitest"
import { tmpdir } from "node:os"
import { vi } from "vitest"
import * as Mounts from "../../src/layers/workspace/Mounts.js"

const table = [
  "22 1 253:1 / / rw,relatime shared:1 - ext4 /dev/vda rw",
  "23 22 0:21 / /proc rw,nosuid shared:12 - proc proc rw",
  "24 22 0:22 / /sys rw,nosuid shared:7 - sysfs sysfs rw",
  "25 22 0:5 / /dev rw,nosuid shared:2 - devtmpfs udev rw",
  "26 25 0:23 / /dev/shm rw shared:3 - tmpfs tmpfs rw",
  "27 22 0:40 / /net rw,relatime shared:30 - autofs -hosts rw,fd=5",
  "28 22 0:41 / /home/u/remote rw,nosuid,nodev shared:40 - nfs4 server:/export rw",
  "29 22 0:42 / /home/u/my\\040drive rw,nosuid,nodev shared:41 master:9 - fuse.sshfs u@host: rw",
  "30 22 0:43 / /home/u/work rw shared:42 - btrfs /dev/vdb rw",
  "31 22 0:44 / /mnt/odd rw - somethingnew none rw"
].join("\n") + "\n"

describe("Mounts", () => {
  it("takes every mount point of a type that is not local as not local, an unknown type included", () => {
    expect(Mounts.notLocal(table)).toEqual(["/proc", "/sys", "/dev", "/net", "/home/u/remote", "/home/u/my drive", "/mnt/odd"])
  })

  it("a path is local when no such mount point is at or above it", () => {
    const points = Mounts.notLocal(table)
    expect(Mounts.outside(points, "/home/u/work/src/a.ts")).toBe(true)
    expect(Mounts.outside(points, "/home/u/remote")).toBe(false)
    expect(Mounts.outside(points, "/home/u/remote/a.ts")).toBe(false)
    expect(Mounts.outside(points, "/home/u/remote-copy/a.ts")).toBe(true)
    expect(Mounts.outside(points, "/home/u/my drive/a.ts")).toBe(false)
    expect(Mounts.outside(points, "/net/10.0.0.1/export")).toBe(false)
    // Below /dev, even a tmpfs: what is under a mount that is not local is not looked at.
    expect(Mounts.outside(points, "/dev/shm/x")).toBe(false)
    expect(Mounts.outside(points, "/proc/self/root/home/u/work/a.ts")).toBe(false)
  })

  it("a root that is not local, or a line it cannot read, makes nothing local", () => {
    expect(Mounts.outside(Mounts.notLocal("22 1 0:30 / / rw - nfs srv:/ rw\n"), "/home/u/a.ts")).toBe(false)
    expect(Mounts.outside(Mounts.notLocal("garbage\n"), "/home/u/a.ts")).toBe(false)
  })

  it("this machine's table is read, and its temporary folder is local (the synchronous reads are tried here)", async () => {
    await Mounts.refresh()
    expect(Mounts.isLocal("/proc/self/status")).toBe(false)
  })

  it("a copy of the table is trusted for its age in time passed, not by the wall clock: stepped back an hour, a copy 3 s old is not trusted", async () => {
    await Mounts.refresh()
    const local = Mounts.isLocal(tmpdir())
    const wall = Date.now()
    const monotonic = performance.now()
    const dateNow = vi.spyOn(Date, "now").mockReturnValue(wall - 60 * 60 * 1000 + 3_000)
    const performanceNow = vi.spyOn(performance, "now").mockReturnValue(monotonic + 3_000)
    try {
      // Too old to answer from: nothing is local until the copy read again (in the background) is in.
      expect(Mounts.isLocal(tmpdir())).toBe(false)
    } finally {
      dateNow.mockRestore()
      performanceNow.mockRestore()
    }
    await Mounts.refresh()
    expect(Mounts.isLocal(tmpdir())).toBe(local)
  })
})
