/**
 * Red team 7, item 4: a session whose cwd is the file system's root. Everything is then "inside the
 * workspace": `write_file /etc/profile.d/x.sh` or `/usr/local/bin/git` was an edit like any other in
 * `acceptEdits` (run later by every login or `git`, outside the sandbox), `read_file /etc/shadow` a
 * read inside the project in `default`, and the command sandbox failed with a mount error naming
 * `/run/dbus`. Such a cwd is now refused where every adapter checks a session's cwd
 * (`WorkingDirectory.canonical`), with `InvalidInput {field: "cwd"}` saying why — `/` itself, and a
 * link or `..` path that leads there.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { afterAll } from "vitest"
import * as WorkingDirectory from "../../src/layers/WorkingDirectory.js"

const root = NodeFs.realpathSync(NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "effect-agent-root-cwd-")))
afterAll(() => NodeFs.rmSync(root, { recursive: true, force: true }))
NodeFs.symlinkSync("/", NodePath.join(root, "to-root"))

describe("a session's cwd at the file system's root is refused", () => {
  it.effect("/ , a link to it and a path with .. that leads there fail InvalidInput {field: cwd}; a folder below it is fine", () =>
    Effect.gen(function*() {
      for (const cwd of ["/", "//", NodePath.join(root, "to-root"), `${root}/${"../".repeat(root.split("/").length)}`]) {
        const refused = yield* Effect.flip(WorkingDirectory.canonical(cwd))
        expect(refused, cwd).toMatchObject({ _tag: "InvalidInput", field: "cwd", detail: expect.stringContaining("root of the file system") })
      }
      expect(yield* WorkingDirectory.canonical(root)).toBe(root)
    }))

  it.effect("/proc, /sys, /dev, a folder below one and a link there fail InvalidInput {field: cwd} naming the kernel's folder", () =>
    Effect.gen(function*() {
      NodeFs.symlinkSync("/proc", NodePath.join(root, "to-proc"))
      const kernel = ["/proc", "/proc/self", "/proc/self/fd", "/dev", NodePath.join(root, "to-proc"), ...["/dev/shm", "/sys", "/sys/kernel"].filter((dir) => NodeFs.existsSync(dir))]
      for (const cwd of kernel) {
        const refused = yield* Effect.flip(WorkingDirectory.canonical(cwd))
        expect(refused, cwd).toMatchObject({ _tag: "InvalidInput", field: "cwd", detail: expect.stringMatching(/^is in the .*\((\/proc|\/sys|\/dev)\), not a project folder/) })
      }
      // A link inside /proc to a real folder (a process's cwd) is that folder; a name that only begins like one is not in it.
      expect(yield* WorkingDirectory.canonical("/proc/self/cwd")).toBe(NodeFs.realpathSync(process.cwd()))
      expect(WorkingDirectory.kernelArea("/devices")).toBeUndefined()
      expect(WorkingDirectory.kernelArea("/home/u/proc")).toBeUndefined()
    }))
})
