/**
 * `POST /sessions` naming MCP servers: they start before the session is created, then are bound to
 * it. A client gone while they are bound (Serve's bind: the servers made the session's, then their
 * file saved) used to interrupt the bind and discard the servers of a stored session (review45);
 * an embedder's older `sessionServers` shape used to store a session and then fail 500 on
 * `pending.bind` being undefined. Both failed on main before the fix. No sleeps: the bind waits on a
 * gate the test opens, and the test waits for the bind's own end.
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServer from "@effect/platform/HttpServer"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { describe, expect, it } from "vitest"
import { Server, ServerConfig } from "../../src/server.js"
import { embedderEngine, workspace } from "./harness.js"

const token = "t0ken-for-create-with-servers"

const setup = (sessionServers: unknown) => {
  const { cwd, dataDir } = workspace()
  const config = ServerConfig.make({ token, defaultCwd: cwd, sessionServers } as Parameters<typeof ServerConfig.make>[0])
  const { dispose, handler } = HttpApiBuilder.toWebHandler(
    Layer.mergeAll(Server.layer(config).pipe(Layer.provide(embedderEngine(dataDir))), HttpServer.layerContext)
  )
  const auth = { authorization: `Bearer ${token}` }
  const list = async () => (await (await handler(new Request("http://127.0.0.1/sessions", { headers: auth }))).json()) as Array<{ sessionId: string }>
  const create = (signal?: AbortSignal, body = JSON.stringify({ mcpServers: { s: { command: "x" } } })) =>
    handler(new Request("http://127.0.0.1/sessions", {
      method: "POST",
      ...(signal === undefined ? {} : { signal }),
      headers: { ...auth, "content-type": "application/json" },
      body
    }))
  return { dispose, create, list }
}

const promised = () => {
  let resolve!: () => void
  const promise = new Promise<void>((r) => (resolve = r))
  return { promise, resolve }
}

describe("POST /sessions with MCP servers", () => {
  it("a client gone while the servers are bound: the bind runs to its end, the stored session keeps its servers", async () => {
    const events: Array<string> = []
    const binding = promised()
    const gate = promised()
    const settled = promised()
    const { create, dispose, list } = setup((_cwd: string, _servers: unknown) =>
      Effect.succeed({
        bind: (sessionId: string) =>
          Effect.sync(() => {
            events.push(`bind ${sessionId}`)
            binding.resolve()
          }).pipe(
            Effect.zipRight(Effect.promise(() => gate.promise)),
            Effect.zipRight(Effect.sync(() => events.push("saved"))),
            Effect.ensuring(Effect.sync(() => settled.resolve()))
          ),
        discard: Effect.sync(() => {
          events.push("discard")
          settled.resolve()
        })
      }))
    const abort = new AbortController()
    const answer = create(abort.signal).catch((error: unknown) => error)
    await binding.promise
    abort.abort()
    gate.resolve()
    await answer
    await settled.promise
    const sessions = await list()
    await dispose()
    expect(sessions.length).toBe(1)
    expect(events).toEqual([`bind ${sessions[0]!.sessionId}`, "saved"])
  })

  it("an embedder's older sessionServers shape ((session, servers) => Effect<void>) is a 500 naming the new one, and stores nothing", async () => {
    const { create, dispose, list } = setup((_session: unknown, _servers: unknown) => Effect.void)
    const response = await create()
    const body = (await response.json()) as { error: string; message: string }
    const sessions = await list()
    await dispose()
    expect(response.status).toBe(500)
    expect(body.error).toBe("ServerMisconfigured")
    expect(body.message).toContain("(cwd, servers) => Effect<{ bind: (sessionId) => Effect<void>, discard: Effect<void> }>")
    expect(sessions).toEqual([])
  })

  // Decoded into a record, a `__proto__` key set the record's prototype and was gone: a server of
  // that name, or such an env or header entry, was dropped and the session created without it (201).
  it("a __proto__ server name, env variable or header is a 400 naming it, and stores nothing", async () => {
    const started: Array<unknown> = []
    const { create, dispose, list } = setup((_cwd: string, servers: unknown) =>
      Effect.sync(() => started.push(servers)).pipe(Effect.as({ bind: () => Effect.void, discard: Effect.void })))
    const bodies = [
      '{"mcpServers": {"__proto__": {"command": "x"}}}',
      '{"mcpServers": {"s": {"command": "x", "env": {"__proto__": "y"}}}}',
      '{"mcpServers": {"s": {"url": "http://127.0.0.1:1/mcp", "headers": {"__proto__": "y"}}}}'
    ]
    const answers: Array<{ status: number; message: string }> = []
    for (const body of bodies) {
      const response = await create(undefined, body)
      answers.push({ status: response.status, message: ((await response.json()) as { message: string }).message })
    }
    const sessions = await list()
    await dispose()
    for (const answer of answers) {
      expect(answer.status).toBe(400)
      expect(answer.message).toContain("__proto__")
    }
    expect(started).toEqual([])
    expect(sessions).toEqual([])
  })
})
