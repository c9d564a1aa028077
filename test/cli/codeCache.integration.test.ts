/**
 * The CLI's compile cache (src/cli/CodeCache.ts) on the built CLI, as real subprocesses: the first
 * run of a command writes its cache, the next runs use it unchanged; a damaged cache is compiled
 * without and replaced; a folder that cannot be written or the opt-out runs as before and writes
 * nothing; processes started at once share the folder (one whole cache, no temporary file left);
 * `EFFECT_AGENT_DEBUG=1` stacks still name the sources. Every run's answer is the same.
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { basename, join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { run, sessionIdIn } from "./subprocess.js"

const dir = mkdtempSync(join(tmpdir(), "effect-agent-code-cache-"))
const dataDir = join(dir, "data")
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** Node 20 has no compile cache of its own: there the CLI keeps V8's, which these tests read (Node ≥ 22.1 keeps its own). */
const nodeHasCompileCache = typeof (await import("node:module") as { enableCompileCache?: unknown }).enableCompileCache === "function"

let folders = 0
const freshFolder = () => join(dir, `cache-${++folders}`)

/** `sessions` with the cache in `folder` (and any other env), expecting it to succeed. */
const sessions = async (folder: string, env: Record<string, string> = {}) => {
  const result = await run(["sessions", "--data-dir", dataDir], { env: { EFFECT_AGENT_CODE_CACHE_DIR: folder, ...env } })
  expect(result.code, result.stderr).toBe(0)
  return result
}

/** The cache files of `sessions` in a folder (none when it does not exist). */
const cachesIn = (folder: string) => {
  try {
    return readdirSync(folder).filter((name) => name.endsWith("-sessions.v8"))
  } catch {
    return []
  }
}

/** A listing run in `folder` that leaves its cache there: the cache file's path. */
const cacheMadeIn = async (folder: string) => {
  await sessions(folder)
  const [cache] = cachesIn(folder)
  return join(folder, cache!)
}

let listing = ""
const expected = async () => {
  if (listing === "") {
    const made = await run(["run", "hello from the cache test", "--provider", "fake", "--data-dir", dataDir], { cwd: dir, env: { EFFECT_AGENT_NO_CODE_CACHE: "1" } })
    expect(sessionIdIn(made.stderr), made.stderr).toBeDefined()
    listing = (await run(["sessions", "--data-dir", dataDir], { env: { EFFECT_AGENT_NO_CODE_CACHE: "1" } })).stdout
    expect(listing).toMatch(/hello from the cache test/)
  }
  return listing
}

describe.skipIf(nodeHasCompileCache)("the CLI's V8 code cache (Node 20)", () => {
  it("the first run writes the command's cache; the next one uses it as it is; both answer the same", async () => {
    const want = await expected()
    const folder = freshFolder()
    expect((await sessions(folder)).stdout).toBe(want)
    const [cache] = cachesIn(folder)
    expect(cache).toBeDefined()
    const before = statSync(join(folder, cache!))
    expect(before.size).toBeGreaterThan(100_000)
    expect((await sessions(folder)).stdout).toBe(want)
    // Accepted: not written again (a rejected cache is replaced by a rename, a new inode).
    const after = statSync(join(folder, cache!))
    expect([after.ino, after.mtimeMs]).toEqual([before.ino, before.mtimeMs])
    expect(readdirSync(folder).filter((name) => name.endsWith(".tmp"))).toEqual([])
  })

  it("a damaged cache is compiled without and replaced by a good one", async () => {
    const want = await expected()
    const folder = freshFolder()
    const file = await cacheMadeIn(folder)
    const good = readFileSync(file)
    // Same length, other bytes: V8 rejects it (its header and checksum no longer match).
    writeFileSync(file, Buffer.alloc(good.length, 7))
    expect((await sessions(folder)).stdout).toBe(want)
    const replaced = readFileSync(file)
    expect(replaced.equals(Buffer.alloc(good.length, 7))).toBe(false)
    const kept = statSync(file)
    expect((await sessions(folder)).stdout).toBe(want)
    expect(statSync(file).ino).toBe(kept.ino)
  })

  it("a folder that cannot be made or written: the same answer, nothing written, nothing said", async () => {
    const want = await expected()
    // A path under a regular file cannot be made, whoever runs the test (root writes any folder).
    const blocker = join(dir, "not-a-folder")
    writeFileSync(blocker, "")
    const result = await sessions(join(blocker, "cache"))
    expect(result.stdout).toBe(want)
    expect(result.stderr).toBe("")
    const readOnly = freshFolder()
    mkdirSync(readOnly)
    chmodSync(readOnly, 0o500)
    try {
      const second = await sessions(readOnly)
      expect(second.stdout).toBe(want)
      expect(second.stderr).toBe("")
    } finally {
      chmodSync(readOnly, 0o700)
    }
  })

  /**
   * A cache made in `folder`, overwritten with damaged data (were it read, it would be replaced: see
   * above), then `open` made writable by others (mode `opened`): the next run neither reads nor
   * replaces it, and answers as before.
   */
  const plantedStaysUnread = async (folder: string, open: string, opened: number, restore: number) => {
    const want = await expected()
    const file = await cacheMadeIn(folder)
    const planted = Buffer.alloc(statSync(file).size, 7)
    writeFileSync(file, planted)
    chmodSync(open, opened)
    try {
      const result = await sessions(folder)
      expect(result.stdout).toBe(want)
      expect(result.stderr).toBe("")
      expect(readFileSync(file).equals(planted)).toBe(true)
      expect(cachesIn(folder)).toEqual([basename(file)])
    } finally {
      chmodSync(open, restore)
    }
  }

  it("a folder others can write is never read: a cache in it is code another user could have put there", async () => {
    const folder = freshFolder()
    await plantedStaysUnread(folder, folder, 0o777, 0o700)
  })

  it("a folder below one others can write is never read: they could swap ours for theirs between the check and the read", async () => {
    const shared = join(dir, "shared-open")
    await plantedStaysUnread(join(shared, "cache"), shared, 0o777, 0o755)
  })

  it("below a sticky shared folder (as /tmp is) the cache is kept: others cannot rename what is not theirs", async () => {
    const want = await expected()
    const shared = join(dir, "shared-sticky")
    mkdirSync(shared)
    chmodSync(shared, 0o1777)
    const folder = join(shared, "cache")
    expect((await sessions(folder)).stdout).toBe(want)
    expect(cachesIn(folder)).toHaveLength(1)
  })

  it("a cache file others can write is not read: it is replaced by this run's own", async () => {
    const want = await expected()
    const folder = freshFolder()
    const file = await cacheMadeIn(folder)
    chmodSync(file, 0o666)
    const before = statSync(file)
    expect((await sessions(folder)).stdout).toBe(want)
    const after = statSync(file)
    // Not read, so this run wrote its own through a new file: another inode, this user's mode.
    expect(after.ino).not.toBe(before.ino)
    expect(after.mode & 0o777).toBe(0o600)
  })

  it("EFFECT_AGENT_NO_CODE_CACHE=1 and EFFECT_AGENT_DEBUG=1 write no cache", async () => {
    const want = await expected()
    const folder = freshFolder()
    expect((await sessions(folder, { EFFECT_AGENT_NO_CODE_CACHE: "1" })).stdout).toBe(want)
    expect((await sessions(folder, { EFFECT_AGENT_DEBUG: "1" })).stdout).toBe(want)
    expect(cachesIn(folder)).toEqual([])
  })

  it("processes started at once share one folder: each answers, one whole cache, no temporary file left", async () => {
    const want = await expected()
    const folder = freshFolder()
    const results = await Promise.all(Array.from({ length: 4 }, () => sessions(folder)))
    for (const result of results) expect(result.stdout).toBe(want)
    expect(cachesIn(folder)).toHaveLength(1)
    expect(readdirSync(folder).filter((name) => name.endsWith(".tmp"))).toEqual([])
    const [cache] = cachesIn(folder)
    const before = statSync(join(folder, cache!))
    // Whole: the next run accepts it.
    expect((await sessions(folder)).stdout).toBe(want)
    expect(statSync(join(folder, cache!)).ino).toBe(before.ino)
  })

  it("with a cache in place, EFFECT_AGENT_DEBUG=1 still prints a failure's stack with the sources' names", async () => {
    const folder = freshFolder()
    const env = { EFFECT_AGENT_CODE_CACHE_DIR: folder }
    await run(["replay", "no-such-session", "--data-dir", dataDir], { env })
    expect(readdirSync(folder).some((name) => name.endsWith("-replay.v8"))).toBe(true)
    const debug = await run(["replay", "no-such-session", "--data-dir", dataDir], { env: { ...env, EFFECT_AGENT_DEBUG: "1" } })
    expect(debug.code).toBe(1)
    expect(debug.stderr).toMatch(/\/src\/[\w/]+\.ts:\d+:\d+/)
    const plain = await run(["replay", "no-such-session", "--data-dir", dataDir], { env })
    expect(plain.code).toBe(1)
    expect(plain.stderr.trim().split("\n")).toEqual([expect.stringMatching(/^effect-agent: .*no-such-session/)])
  })
})

describe("a relative EFFECT_AGENT_CODE_CACHE_DIR (review 62a)", () => {
  it("is ignored with one warning: resolved against the current directory, a cloned repository's folder would be the code the CLI runs", async () => {
    const want = await expected()
    const repo = join(dir, "repo-relative")
    mkdirSync(repo)
    const result = await run(["sessions", "--data-dir", dataDir], { cwd: repo, env: { EFFECT_AGENT_CODE_CACHE_DIR: "rel-cache", XDG_CACHE_HOME: join(dir, "xdg") } })
    expect(result.code, result.stderr).toBe(0)
    expect(result.stdout).toBe(want)
    expect(result.stderr).toBe(
      `effect-agent: EFFECT_AGENT_CODE_CACHE_DIR="rel-cache" is not an absolute path, so it is ignored (a relative one would name a folder in each project you run in)\n`
    )
    expect(existsSync(join(repo, "rel-cache"))).toBe(false)
  })
})
