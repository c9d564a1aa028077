/**
 * `/image <path>` in `effect-agent chat` (a real subprocess, piped stdin, real image files): the
 * image goes with the next message that starts a turn, a bad file is said at once and attaches
 * nothing, and the log names the image.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { eventsOf, run, start } from "./subprocess.js"

const fixtures = resolve(import.meta.dirname, "../../fixtures/images")
const dir = mkdtempSync(join(tmpdir(), "effect-agent-chat-images-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
writeFileSync(join(dir, "photo.png"), readFileSync(join(fixtures, "photo.png")))
writeFileSync(join(dir, "drawing.svg"), readFileSync(join(fixtures, "evil.svg")))

describe("chat /image", () => {
  it("attaches an image to the next message that starts a turn; a refused file attaches nothing", async () => {
    const dataDir = join(dir, "data")
    const chat = start(["chat", "--data-dir", dataDir], { cwd: dir })
    chat.child.stdin!.write("/image drawing.svg\n")
    await chat.waitForStderr(/--image drawing\.svg: only PNG, JPEG, GIF and WebP images are accepted/)
    chat.child.stdin!.write("/image photo.png\n")
    await chat.waitForStderr(/\[photo\.png attached to your next message \(1 image\)\]/)
    chat.child.stdin!.write("what is it?\n")
    // The built-in echo model takes no images: it reads (and echoes) a note in the image's place.
    await chat.waitForStdout(/Echo: what is it\?\n\[image image\/png, \d+ bytes \([0-9a-f]{12}\): this model does not take images\]\n/)
    chat.child.stdin!.write("and this?\n")
    await chat.waitForStdout(/Echo: and this\?\n/)
    chat.child.stdin!.end()
    const finished = await chat.done
    expect(finished.code).toBe(0)
    const sessionId = /session (sess_\S+)/.exec(finished.stderr)![1]!
    const log = eventsOf((await run(["replay", sessionId, "--json", "--data-dir", dataDir])).stdout)
    const messages = log.filter((e) => e.type === "user.message").map((e) => e.payload as { content: string; images?: ReadonlyArray<{ mediaType: string }> })
    expect(messages.map((m) => [m.content, m.images?.map((i) => i.mediaType)])).toEqual([["what is it?", ["image/png"]], ["and this?", undefined]])
    // The transcript names the image, never its bytes.
    const transcript = (await run(["replay", sessionId, "--data-dir", dataDir])).stdout
    expect(transcript).toMatch(/> what is it\?\n> \[image image\/png, \d+ bytes, [0-9a-f]{12}\]\n/)
  })
})
