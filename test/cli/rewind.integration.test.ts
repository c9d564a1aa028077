import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { expectWellFormedLog } from "../helpers.js"
import { binPath, run, scratch, sessionIdIn, start } from "./subprocess.js"

const { dataDir, dir, replay } = scratch("rewind")

const script = (name: string, responses: ReadonlyArray<unknown>) => {
  const file = join(dir, `${name}.json`)
  writeFileSync(file, JSON.stringify({ responses }))
  return file
}

describe("effect-agent rewind (subprocess)", () => {
  it("restores the files a turn wrote and removed through the shell; lists files changed outside the agent and exits 1 until --force", async () => {
    const cwd = join(dir, "work")
    await import("node:fs/promises").then((fs) => fs.mkdir(cwd, { recursive: true }))
    writeFileSync(join(cwd, "keep.txt"), "keep\n")
    const first = await run(["run", "one", "--data-dir", dataDir], { cwd })
    expect(first.code).toBe(0)
    const sessionId = sessionIdIn(first.stderr)!
    const point = (await replay(sessionId)).length

    const changing = script("changing", [
      { chunks: ["Writing."], toolCalls: [{ tool: "write_file", args: { path: "a.txt", content: "new\n" } }] },
      { chunks: ["Removing."], toolCalls: [{ tool: "shell", args: { command: "rm keep.txt" } }] },
      { chunks: ["Done."] }
    ])
    const second = await run(["run", "change", "--session", sessionId, "--script", changing, "--mode", "bypass", "--data-dir", dataDir], { cwd })
    expect(second.code).toBe(0)
    expect(existsSync(join(cwd, "keep.txt"))).toBe(false)
    expect(readFileSync(join(cwd, "a.txt"), "utf8")).toBe("new\n")

    const rewound = await run(["rewind", sessionId, "--to", String(point), "--data-dir", dataDir])
    expect(rewound.code).toBe(0)
    expect(rewound.stdout).toContain(`rewound ${sessionId} to #${point}`)
    expect(rewound.stdout).toContain("removed  a.txt")
    expect(rewound.stdout).toContain("restored keep.txt")
    // keep.txt's removal was seen by the command's snapshot: whoever removed it while `rm` ran is not known (kernel45).
    expect(rewound.stderr).toContain("changed while a command ran (by it, or by you or another program meanwhile): keep.txt")
    expect(rewound.stderr).not.toContain("meanwhile): a.txt")
    // On the store this rewind used: the printed command names its data dir (review58b).
    expect(rewound.stderr).toMatch(new RegExp(`what they held is kept: effect-agent rewind ${sessionId} --to \\d+ --data-dir ${dataDir.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")} brings it back`))
    expect(existsSync(join(cwd, "a.txt"))).toBe(false)
    expect(readFileSync(join(cwd, "keep.txt"), "utf8")).toBe("keep\n")
    const log = await replay(sessionId)
    expectWellFormedLog(log)
    expect(log.at(-1)).toMatchObject({ type: "session.rewound", payload: { toSequence: point } })

    // The conversation goes on from the point.
    const third = await run(["run", "three", "--session", sessionId, "--data-dir", dataDir], { cwd })
    expect(third.stdout).toBe("Echo: three\n")

    const writing = script("writing", [
      { chunks: ["Writing."], toolCalls: [{ tool: "write_file", args: { path: "b.txt", content: "agent\n" } }] },
      { chunks: ["Done."] }
    ])
    const beforeWrite = (await replay(sessionId)).length
    expect((await run(["run", "write b", "--session", sessionId, "--script", writing, "--mode", "bypass", "--data-dir", dataDir], { cwd })).code).toBe(0)
    writeFileSync(join(cwd, "b.txt"), "mine\n")
    const refused = await run(["rewind", sessionId, "--to", String(beforeWrite), "--data-dir", dataDir])
    expect(refused.code).toBe(1)
    expect(refused.stderr).toContain("changed outside the agent")
    expect(refused.stderr).toContain("  b.txt")
    expect(refused.stderr).toContain("--force")
    expect(refused.stderr).not.toMatch(/\n\s+at /)
    // Said once: the list and the command to run, not the same refusal again as a line of its own.
    expect(refused.stderr).not.toContain("Cannot rewind")
    expect(readFileSync(join(cwd, "b.txt"), "utf8")).toBe("mine\n")
    const forced = await run(["rewind", sessionId, "--to", String(beforeWrite), "--force", "--data-dir", dataDir])
    expect(forced.code).toBe(0)
    expect(forced.stderr).toContain("overwritten (changed outside the agent): b.txt")
    expect(existsSync(join(cwd, "b.txt"))).toBe(false)

    const inside = await run(["rewind", sessionId, "--to", "3", "--data-dir", dataDir])
    expect(inside.code).toBe(1)
    // Named by the flag the user typed, not the API's field ("Invalid toSequence: …").
    expect(inside.stderr).toContain("effect-agent: --to 3: sequence 3 is inside a turn or compaction: rewind to the end of a closed turn (the nearest before it: 1)")
    expect(inside.stderr).not.toContain("toSequence")
  })

  // review58b: the hints named no store — printed after `rewind … --data-dir ~/x` (or `--store sqlite`),
  // they rewound the default data dir's session, or found none. Each printed command is run here as
  // printed, by a POSIX shell, with `effect-agent` on the PATH.
  it("the commands a rewind prints run as printed on the store it used: a data dir with a space, --store sqlite", async () => {
    const cwd = join(dir, "hints")
    mkdirSync(cwd, { recursive: true })
    const bin = join(dir, "bin")
    mkdirSync(bin, { recursive: true })
    writeFileSync(join(bin, "effect-agent"), `#!/bin/sh\nexec '${process.execPath}' '${binPath}' "$@"\n`)
    chmodSync(join(bin, "effect-agent"), 0o755)
    const printed = async (command: string) =>
      await start([], { cwd, prefix: ["sh", "-c", `${command} #`], env: { PATH: `${bin}:${process.env.PATH ?? ""}` } }).done
    const storage = ["--data-dir", join(dir, "hint's data"), "--store", "sqlite"]
    writeFileSync(join(cwd, "keep.txt"), "keep\n")
    const first = await run(["run", "one", ...storage], { cwd })
    expect(first.code).toBe(0)
    const sessionId = sessionIdIn(first.stderr)!
    const replayed = async () => (await run(["replay", sessionId, "--json", ...storage])).stdout.trim().split("\n").length
    const point = await replayed()
    const removing = script("hints-removing", [{ toolCalls: [{ tool: "shell", args: { command: "rm keep.txt" } }] }, { chunks: ["Done."] }])
    expect((await run(["run", "rm", "--session", sessionId, "--script", removing, "--mode", "bypass", ...storage], { cwd })).code).toBe(0)

    const rewound = await run(["rewind", sessionId, "--to", String(point), ...storage], { cwd })
    expect(rewound.code).toBe(0)
    const back = /what they held is kept: (.*) brings it back\n/.exec(rewound.stderr)?.[1]
    expect(back).toBe(`effect-agent rewind ${sessionId} --to ${(await replayed()) - 1} --data-dir '${join(dir, "hint")}'\\''s data' --store sqlite`)
    const broughtBack = await printed(back!)
    expect(broughtBack.code, broughtBack.stderr).toBe(0)
    expect(broughtBack.stdout).toContain(`rewound ${sessionId}`)
    expect(existsSync(join(cwd, "keep.txt"))).toBe(false)

    const writing = script("hints-writing", [{ toolCalls: [{ tool: "write_file", args: { path: "b.txt", content: "agent\n" } }] }, { chunks: ["Done."] }])
    const beforeWrite = await replayed()
    expect((await run(["run", "write b", "--session", sessionId, "--script", writing, "--mode", "bypass", ...storage], { cwd })).code).toBe(0)
    writeFileSync(join(cwd, "b.txt"), "mine\n")
    const refused = await run(["rewind", sessionId, "--to", String(beforeWrite), ...storage], { cwd })
    expect(refused.code).toBe(1)
    const overwrite = /to overwrite them: (.*)\n/.exec(refused.stderr)?.[1]
    expect(overwrite).toMatch(/ --force --data-dir '.*' --store sqlite$/)
    expect((await printed(overwrite!)).code).toBe(0)
    expect(existsSync(join(cwd, "b.txt"))).toBe(false)
  })
})
