/**
 * `run --image <file>` as users run it: the built CLI as a subprocess, real image files (one outside
 * the working directory: the user named it), the official Anthropic SDK against the local wire
 * server — the request body it sent carries the image — and clear one-line errors that store nothing.
 */
import { execFileSync } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as WireServer from "../layers/WireServer.js"
import { eventsOf, run } from "./subprocess.js"

const fixtures = resolve(import.meta.dirname, "../../fixtures/images")
const dir = mkdtempSync(join(tmpdir(), "effect-agent-cli-images-"))
const cwd = join(dir, "project")
const elsewhere = join(dir, "elsewhere")
mkdirSync(cwd)
mkdirSync(elsewhere)
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const png = readFileSync(join(fixtures, "photo.png"))
const gif = readFileSync(join(fixtures, "pixel.gif"))
writeFileSync(join(elsewhere, "photo.png"), png)
writeFileSync(join(cwd, "pixel.gif"), gif)
writeFileSync(join(cwd, "drawing.svg"), readFileSync(join(fixtures, "evil.svg")))
// A PNG by its first bytes, over the 5 MiB cap.
writeFileSync(join(cwd, "huge.png"), Buffer.concat([png.subarray(0, 8), Buffer.alloc(5 * 1024 * 1024 + 1)]))
execFileSync("mkfifo", [join(cwd, "pipe.png")])
// Links a session's command can make in the workspace for a later `/image`: a /proc file whose size
// says 0 and that holds gigabytes (8 bytes for each page of the address space), one that fails its
// read, and a device without end.
symlinkSync("/proc/self/pagemap", join(cwd, "pagemap.png"))
symlinkSync("/proc/self/mem", join(cwd, "mem.png"))
symlinkSync("/dev/zero", join(cwd, "zero.png"))

let server: WireServer.WireServer
beforeAll(async () => {
  server = await WireServer.start()
})
afterAll(() => server.close())

const sessionsIn = (dataDir: string) => existsSync(join(dataDir, "sessions")) ? readdirSync(join(dataDir, "sessions")).filter((f) => f.endsWith(".jsonl")) : []

describe("run --image", () => {
  it("sends each named image with the message: the SDK's request carries them; the log names them; the blobs are in the data dir", async () => {
    const dataDir = join(dir, "data-ok")
    server.respond(WireServer.recording("anthropic", "text"))
    const result = await run(
      ["run", "what are these?", "--image", join(elsewhere, "photo.png"), "--image", "pixel.gif", "--provider", "anthropic", "--base-url", server.url, "--data-dir", dataDir],
      { cwd, env: { ANTHROPIC_API_KEY: "sk-ant-cli-test" } }
    )
    expect(result.stderr).not.toContain("Error")
    expect(result.code).toBe(0)
    const content = server.received.at(-1)!.body.messages[0].content
    expect(content).toEqual([
      { type: "image", source: { type: "base64", media_type: "image/png", data: png.toString("base64") } },
      { type: "image", source: { type: "base64", media_type: "image/gif", data: gif.toString("base64") } },
      // The last user message's last block is a prompt-cache breakpoint (caching is on by default).
      { type: "text", text: "what are these?", cache_control: { type: "ephemeral" } }
    ])
    const sessionId = /session (sess_\S+)/.exec(result.stderr)![1]!
    const log = eventsOf((await run(["replay", sessionId, "--json", "--data-dir", dataDir])).stdout)
    const images = log.find((e) => e.type === "user.message")!.payload as { images: ReadonlyArray<{ blob: string; mediaType: string; bytes: number }> }
    expect(images.images.map((i) => [i.mediaType, i.bytes])).toEqual([["image/png", png.byteLength], ["image/gif", gif.byteLength]])
    for (const image of images.images) {
      expect(readFileSync(join(dataDir, "blobs", image.blob.slice(0, 2), image.blob)).byteLength).toBe(image.bytes)
    }
  })

  it("the built-in echo model takes no images: it reads a note in the image's place", async () => {
    const dataDir = join(dir, "data-echo")
    const result = await run(["run", "look", "--image", "pixel.gif", "--data-dir", dataDir], { cwd })
    expect(result.code).toBe(0)
    expect(result.stdout).toMatch(/^Echo: look\n\[image image\/gif, \d+ bytes \([0-9a-f]{12}\): this model does not take images\]\n$/)
  })

  const refusals: ReadonlyArray<[string, ReadonlyArray<string>, RegExp]> = [
    ["a missing file", ["--image", "nope.png"], /^--image nope\.png: no such file$/],
    ["an SVG", ["--image", "pixel.gif", "--image", "drawing.svg"], /^--image drawing\.svg: only PNG, JPEG, GIF and WebP images are accepted .*\[unsupported_type\]$/],
    ["a file over 5 MiB", ["--image", "huge.png"], /^--image huge\.png: 5242889 bytes is over the 5242880 bytes \(5 MiB\) an image may be \[too_large\]$/],
    ["a directory", ["--image", "."], /^--image \.: a directory, not an image file$/],
    // Opened without blocking: before, the open waited for a writer for good (the session's own
    // command can make one in the workspace for a later `/image`).
    ["a named pipe", ["--image", "pipe.png"], /^--image pipe\.png: not a regular file$/],
    // Read up to the cap and no further: before, its gigabytes were read whole (5 GB held after 60 s).
    ["a link to a /proc file of size 0 that holds gigabytes", ["--image", "pagemap.png"], /^--image pagemap\.png: holds more than the 5242880 bytes \(5 MiB\) an image may be \[too_large\]$/],
    ["a link to /proc/self/mem", ["--image", "mem.png"], /^--image mem\.png: cannot be read \(EIO\)$/],
    ["a link to /dev/zero", ["--image", "zero.png"], /^--image zero\.png: not a regular file$/],
    ["--image with --follow-up", ["--image", "pixel.gif", "--follow-up"], /--image goes with a new turn/]
  ]
  for (const [what, args, message] of refusals) {
    it(`refuses ${what}: one line, exit 1, nothing stored`, async () => {
      const dataDir = join(dir, `data-${what.replace(/\W+/g, "-")}`)
      const result = await run(["run", "look", ...args, "--data-dir", dataDir], { cwd })
      expect(result.code).toBe(1)
      const lines = result.stderr.trim().split("\n")
      expect(lines).toHaveLength(1)
      expect(lines[0]!.replace(/^effect-agent: /, "")).toMatch(message)
      expect(result.stderr).not.toMatch(/\n\s+at /)
      expect(sessionsIn(dataDir)).toEqual([])
      expect(existsSync(join(dataDir, "blobs"))).toBe(false)
    })
  }
})
