/**
 * A 400 for a body the API cannot decode says what was wrong in one line: an unknown key by name
 * with the keys allowed there, any other mismatch as `<where>: <what>`. It used to be the schema's
 * tree — the route's whole body type written out over several lines — before the one fact that
 * mattered. Every route that decodes a body, against `effect-agent serve` as a real subprocess; and
 * no wire error carries a path of the server's or a stack trace.
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startServe } from "./serveProcess.js"

const root = mkdtempSync(join(tmpdir(), "effect-agent-bad-request-"))
const cwd = join(root, "work")
const dataDir = join(root, "data")
mkdirSync(cwd, { recursive: true })
let serve: Awaited<ReturnType<typeof startServe>>
let sessionId: string

beforeAll(async () => {
  serve = await startServe(["--data-dir", dataDir], { cwd })
  const created = await post("/sessions", {})
  sessionId = ((await created.json()) as { sessionId: string }).sessionId
}, 60_000)
afterAll(async () => {
  serve?.server.child.kill("SIGTERM")
  await serve?.server.done
  rmSync(root, { recursive: true, force: true })
})

const request = (method: string, path: string, body?: string) =>
  fetch(`${serve.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${serve.token}`, "content-type": "application/json" },
    ...(body === undefined ? {} : { body })
  })
const post = (path: string, body: unknown) => request("POST", path, JSON.stringify(body))

/** A 400's message: one line, short, no schema type written out, nothing of the server's. */
const refusal = async (response: Response) => {
  expect(response.status).toBe(400)
  const body = (await response.json()) as { error: string; message: string }
  expect(body.error).toBe("BadRequest")
  expect(body.message).not.toContain("\n")
  expect(body.message).not.toMatch(/readonly|ReadonlyArray|└─/)
  expect(body.message.length).toBeLessThanOrEqual(400)
  expect(body.message).not.toContain(root)
  expect(body.message).not.toMatch(/node_modules|\bat .*:\d+:\d+/)
  return body.message
}

describe("effect-agent serve: a body the API cannot decode", () => {
  it("an unknown key, on every route that decodes a body: one line naming it and the keys allowed", async () => {
    const s = "/sessions/ID"
    const cases: ReadonlyArray<readonly [string, Record<string, unknown>, string, string]> = [
      ["/sessions", { cwdd: cwd }, "cwdd", `"cwd", "mcpServers"`],
      [`${s}/turns`, { mesage: "hi" }, "mesage", `"message", "images", "budget"`],
      [`${s}/steer`, { message: "look", images: [] }, "images", `"message", "turnId"`],
      [`${s}/followups`, { message: "later", image: [] }, "image", `"message"`],
      [`${s}/title`, { title: "x", titel: "y" }, "titel", `"title"`],
      [`${s}/compact`, { keep: 1 }, "keep", `"keepRecentTokens"`],
      [`${s}/fork`, { atSequence: 1, at: 2 }, "at", `"atSequence"`],
      [`${s}/rewind`, { toSequence: 1, forced: true }, "forced", `"toSequence", "force"`],
      [`${s}/approvals/call_1`, { decision: "allow", remeber: true }, "remeber", `"decision", "remember"`]
    ]
    for (const [path, body, key, allowed] of cases) {
      const message = await refusal(await post(path.replace("ID", sessionId), body))
      expect(message, path).toBe(`Unknown key "${key}"; allowed keys: ${allowed}`)
    }
    // Nested: the place is named.
    expect(await refusal(await post(`/sessions/${sessionId}/turns`, { message: "hi", budget: { maxTokens: 5, tokens: 1 } }))).toBe(
      `Unknown key "tokens" in budget; allowed keys: "maxTokens", "maxCost", "maxSteps"`
    )
  })

  it("other mismatches: one line saying where and what", async () => {
    expect(await refusal(await post("/sessions", { cwd: 5 }))).toBe("cwd: Expected string, actual 5")
    expect(await refusal(await post(`/sessions/${sessionId}/turns`, {}))).toBe(`Missing key "message"`)
    expect(await refusal(await post(`/sessions/${sessionId}/turns`, { message: "hi", budget: { maxTokens: "x" } }))).toBe(
      `budget.maxTokens: Expected number, actual "x"`
    )
    expect(await refusal(await post(`/sessions/${sessionId}/compact`, { keepRecentTokens: -1 }))).toBe(
      "keepRecentTokens: Expected a non-negative number, actual -1"
    )
    expect(await refusal(await post(`/sessions/${sessionId}/approvals/call_1`, { decision: "maybe" }))).toMatch(/^decision: Expected "allow"/)
    // A server of the wrong shape: the keys it was given are named (a misspelt one among them).
    expect(await refusal(await post("/sessions", { mcpServers: { files: { comand: "npx" } } }))).toBe(
      `mcpServers.files: a server is {"command", "args"?, "env"?} or {"url", "headers"?}, not {"comand"}`
    )
    expect(await refusal(await post("/sessions", [1]))).toBe("the body: Expected a JSON object, actual [1]")
    expect(await refusal(await post(`/sessions/${sessionId}/turns`, { message: "hi", images: "x" }))).toBe(`images: Expected an array, actual "x"`)
    expect(await refusal(await request("GET", `/sessions/${sessionId}/events?after=abc`))).toBe(`after: Unable to decode "abc" into a number`)
    // A value the client sent is quoted, but cut: the message stays short.
    expect((await refusal(await post("/sessions", { cwd: { big: "x".repeat(10_000) } }))).endsWith("…")).toBe(true)
  })

  // The leftovers round: `budget.maxSteps` and `maxTokens` took a fraction (2.5 acted as its
  // ceiling) and a count past 2^53 (no longer exact); `--max-steps` and `--max-tokens` refuse both.
  // JSON's 1e400 is Infinity, which `maxCost` took as no limit at the schema. Every numeric field of
  // the API, body and query, refuses a fraction where it counts, a negative, Infinity and NaN.
  it("numbers: a count that is a fraction, past 2^53, negative or infinite is a 400 saying so", async () => {
    const turns = `/sessions/${sessionId}/turns`
    const raw = (path: string, body: string) => request("POST", path, body)
    expect(await refusal(await post(turns, { message: "hi", budget: { maxSteps: 2.5 } }))).toBe("budget.maxSteps: Expected an integer, actual 2.5")
    expect(await refusal(await post(turns, { message: "hi", budget: { maxTokens: 2.5 } }))).toBe("budget.maxTokens: Expected an integer, actual 2.5")
    expect(await refusal(await post(turns, { message: "hi", budget: { maxSteps: 2 ** 53 } }))).toBe("budget.maxSteps: Expected an integer, actual 9007199254740992")
    expect(await refusal(await post(turns, { message: "hi", budget: { maxTokens: -1 } }))).toMatch(/maxTokens must be a positive number/)
    expect(await refusal(await raw(turns, `{"message":"hi","budget":{"maxCost":1e400}}`))).toBe("budget.maxCost: Expected a finite number, actual Infinity")
    expect(await refusal(await post(turns, { message: "hi", budget: { maxCost: "NaN" } }))).toBe(`budget.maxCost: Expected number, actual "NaN"`)
    expect(await refusal(await post(`/sessions/${sessionId}/compact`, { keepRecentTokens: 1.5 }))).toBe("keepRecentTokens: Expected an integer, actual 1.5")
    expect(await refusal(await raw(`/sessions/${sessionId}/compact`, `{"keepRecentTokens":1e400}`))).toBe("keepRecentTokens: Expected an integer, actual Infinity")
    expect(await refusal(await post(`/sessions/${sessionId}/fork`, { atSequence: 2 ** 53 }))).toBe("atSequence: Expected an integer, actual 9007199254740992")
    expect(await refusal(await post(`/sessions/${sessionId}/rewind`, { toSequence: 0.5 }))).toBe("toSequence: Expected an integer, actual 0.5")
    for (const after of ["NaN", "Infinity", "1.5", "-1"]) expect(await refusal(await request("GET", `/sessions/${sessionId}/events?after=${after}`)), after).toMatch(/^after: /)
    for (const limit of ["NaN", "2.5", "0", "1e400"]) expect(await refusal(await request("GET", `/sessions?limit=${limit}`)), limit).toContain("limit is a whole number from 1 to 100000")
  })

  it("the other 400s: one line, nothing of the server's", async () => {
    for (
      const [path, body] of [
        ["/sessions", { cwd: "relative" }],
        ["/sessions", { cwd: "/etc/passwd" }],
        ["/sessions", { mcpServers: { "a b": { command: "x" } } }],
        ["/sessions", { mcpServers: { a: { command: "x", arg: [] } } }],
        [`/sessions/${sessionId}/turns`, { message: " " }],
        [`/sessions/${sessionId}/turns`, { message: "hi", images: [{ data: "zz" }] }],
        [`/sessions/${sessionId}/title`, { title: "" }]
      ] as const
    ) await refusal(await post(path, body))
    await refusal(await request("POST", "/sessions", "{"))
    await refusal(await request("GET", "/sessions?limit=abc"))
  })
})
