/**
 * stores45: what counts as this machine's own record of a boot (src/layers/writer/Boots.ts): a
 * record it made, in a folder of this user's that no one else writes, on a local file system.
 */
import { randomUUID } from "node:crypto"
import { chmodSync, readdirSync, symlinkSync } from "node:fs"
import { join } from "node:path"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Boots from "../../src/layers/writer/Boots.js"
import { tempDir } from "../helpers.js"

describe("this machine's records of its boots", () => {
  it.scoped("a record made here counts, for its boot and host name only; made once", () =>
    Effect.gen(function*() {
      const folder = join(yield* tempDir, "boots")
      const boot = randomUUID()
      expect(Boots.recordedIn(folder, boot, "h")).toBe(false)
      Boots.recordIn(folder, boot, "h")
      Boots.recordIn(folder, boot, "h")
      expect(readdirSync(folder)).toHaveLength(1)
      expect(Boots.recordedIn(folder, boot, "h")).toBe(true)
      expect(Boots.recordedIn(folder, boot, "other")).toBe(false)
      expect(Boots.recordedIn(folder, randomUUID(), "h")).toBe(false)
      // Not a boot id: names no record (nor a path).
      expect(Boots.recordedIn(folder, "../boots", "h")).toBe(false)
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("a folder others may write, or a link to a folder, holds no record that counts", () =>
    Effect.gen(function*() {
      const folder = join(yield* tempDir, "boots")
      const boot = randomUUID()
      Boots.recordIn(folder, boot, "h")
      chmodSync(folder, 0o770)
      expect(Boots.recordedIn(folder, boot, "h")).toBe(false)
      chmodSync(folder, 0o700)
      const link = join(yield* tempDir, "linked")
      symlinkSync(folder, link)
      expect(Boots.recordedIn(link, boot, "h")).toBe(false)
      // Nor is anything recorded through it.
      const other = randomUUID()
      Boots.recordIn(link, other, "h")
      expect(Boots.recordedIn(folder, other, "h")).toBe(false)
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("the folder is the user's state folder, never the data dir: XDG_STATE_HOME (absolute), else ~/.local/state", () =>
    Effect.gen(function*() {
      expect(Boots.folder({ XDG_STATE_HOME: "/s" })).toBe("/s/effect-agent/boots")
      expect(Boots.folder({ XDG_STATE_HOME: "relative" })).toMatch(/\/\.local\/state\/effect-agent\/boots$/)
      expect(Boots.onLocalFileSystem(yield* tempDir)).toBe(true)
    }).pipe(Effect.provide(NodeContext.layer)))
})
