/**
 * The agent's own stdio transport to an MCP server (the SDK's public `Transport` interface): one
 * JSON-RPC message a line, each parsed with the SDK's exported message schema.
 *
 * Why not the SDK's `StdioClientTransport`: its read buffer copied its whole buffer on every chunk
 * (a 100 MiB line cost 4.4 s of CPU before its 10 MiB bound tripped), it read on after the bound,
 * and it reported only the process's exit, not its stdout's end (seen only through its private
 * `_process`). Here a line's chunks are kept as they come and joined once; a line past the bound
 * kills the server at once; the end of stdout closes the connection.
 *
 * The server runs in a process group of its own, and is stopped as a group (as shell commands are,
 * `Shell`): a server started through `sh -c`, a wrapper script or `npx` is the agent's grandchild,
 * and signalling only the direct child left it running after a timeout's restart or the session's
 * end — one more with each restart. The group's leader is a small guardian (`GroupGuardian`) that
 * stops the group once the agent is gone, however it died (a SIGKILLed agent closes nothing).
 *
 * @since 0.5.0
 * @internal
 */
import { type ChildProcess, spawn } from "node:child_process"
import { getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js"
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js"
import { type JSONRPCMessage, JSONRPCMessageSchema } from "@modelcontextprotocol/sdk/types.js"
import type { Socket } from "node:net"
import * as GroupGuardian from "./GroupGuardian.js"

/** The longest line read from a server (the SDK's own bound). */
export const maxLineBytes = 10 * 1024 * 1024

/**
 * The most bytes of the agent's messages a server may leave unread in its stdin (its pipe's and the
 * agent's buffer): as much as one answer of an HTTP server may hold (`BoundedFetch.maxAnswerBytes`).
 * The agent's own messages are small; only a server that stops reading while it asks for answers
 * (`ping`) gets there.
 */
export const maxUnreadBytes = 16 * 1024 * 1024

/** How long a server has to exit at each step of close (stdin ended, then SIGTERM) before the next. */
const graceMillis = 2000
/** How often, while stopping, a server's process group is looked at for its end. */
const groupPollMillis = 25

/** A server stopped for leaving the agent's messages unread (`maxUnreadBytes`): a broken server, not one that sent what is not MCP. */
export class UnreadError extends Error {}

/** Where and how a server runs. */
export interface Params {
  readonly command: string
  readonly args: ReadonlyArray<string>
  readonly env: Readonly<Record<string, string>>
  readonly cwd: string
  readonly maxLineBytes?: number | undefined
  /** The most bytes written to the server and not yet read by it (default `maxUnreadBytes`). */
  readonly maxUnreadBytes?: number | undefined
}

/**
 * Splits chunks into lines: a line's chunks are kept until its newline and joined once, so each byte
 * is copied once. `onLine` gets each line (a trailing `\r` removed); `onTooLong` is called once
 * when a line passes `max` bytes, and nothing more is read.
 */
export const lineSplitter = (max: number, onLine: (line: string) => void, onTooLong: () => void) => {
  let parts: Array<Buffer> = []
  let pending = 0
  let over = false
  return (chunk: Buffer): void => {
    let from = 0
    while (!over) {
      const newline = chunk.indexOf(10, from)
      const end = newline === -1 ? chunk.length : newline
      if (pending + end - from > max) {
        over = true
        parts = []
        return onTooLong()
      }
      if (newline === -1) {
        if (end > from) {
          parts.push(chunk.subarray(from))
          pending += end - from
        }
        return
      }
      const line = parts.length === 0 ? chunk.toString("utf8", from, end) : Buffer.concat([...parts, chunk.subarray(from, end)]).toString("utf8")
      parts = []
      pending = 0
      from = newline + 1
      onLine(line.endsWith("\r") ? line.slice(0, -1) : line)
    }
  }
}

/** A transport that starts `params`'s program and speaks MCP over its stdin and stdout. */
export class StdioTransport implements Transport {
  onclose?: (() => void) | undefined
  onerror?: ((error: Error) => void) | undefined
  onmessage?: (<T extends JSONRPCMessage>(message: T) => void) | undefined
  private child: ChildProcess | undefined
  private closed = false
  // Set while close() stops the server in the spec's order: its end then sends no early SIGTERM.
  private stopping = false
  // The server's process group (its direct child's pid), forgotten once that child has exited and
  // the group has been seen empty: the pid may then lead another group (one of the agent's own
  // detached shell commands), which no signal of this transport may reach.
  private group: number | undefined
  private exited = false
  // The wait for the server's stdin to drain, shared by every send made while it is full.
  private drained: Promise<void> | undefined

  constructor(private readonly params: Params) {}

  start(): Promise<void> {
    if (this.child !== undefined) return Promise.reject(new Error("the MCP server was already started"))
    return new Promise((resolve, reject) => {
      // The server under its guardian, which leads the group and stops it once the agent is gone.
      const child = spawn(process.execPath, ["-e", GroupGuardian.program, "--", this.params.command, ...this.params.args], {
        // The SDK's own defaults under the given environment, as its transport did.
        env: GroupGuardian.guardianEnv({ ...getDefaultEnvironment(), ...this.params.env }),
        cwd: this.params.cwd,
        // fd 3: the guardian's socket, whose other end only this process holds.
        stdio: ["pipe", "pipe", "pipe", "pipe"],
        shell: false,
        // Its own process group: stopping the server stops every process it started.
        detached: true
      })
      this.child = child
      this.group = child.pid
      const guardian = child.stdio[3] as Socket
      // Held for the server's life, but never what keeps the agent running.
      guardian.unref()
      guardian.on("error", () => {})
      guardian.on("data", GroupGuardian.reader((said) => {
        if ("spawned" in said) return resolve()
        const error = Object.assign(new Error(said.error), said.code === undefined ? {} : { code: said.code })
        reject(error)
        this.onerror?.(error)
      }))
      // Looked at once at the exit: a server that left nothing running is forgotten at once.
      child.once("exit", () => {
        this.exited = true
        this.groupRunning()
      })
      child.on("error", (error) => {
        reject(error)
        this.onerror?.(error)
      })
      // Drained so that a chatty server never blocks on a full pipe; kept out of the log.
      child.stderr!.resume()
      child.stdin!.on("error", (error) => this.onerror?.(error))
      const max = this.params.maxLineBytes ?? maxLineBytes
      // Past the bound nothing more is read and the server is killed at once; the error comes before
      // the close (at the process's exit), so the call in flight fails as a bad answer.
      const split = lineSplitter(max, (line) => this.received(line), () => {
        this.stopReading()
        this.kill("SIGKILL")
        this.onerror?.(new Error(`the server wrote a line longer than ${max} bytes`))
      })
      child.stdout!.on("data", split)
      child.stdout!.on("error", (error) => this.onerror?.(error))
      // A server that closed its stdout can never answer, though its process may run on.
      child.stdout!.once("end", () => this.ended())
      child.once("close", () => this.ended())
    })
  }

  /**
   * Writes one message. While the pipe is full, every send waits for the one `drain` (one listener,
   * however many sends wait); past `maxUnreadBytes` written and not read, the server is broken: it
   * is stopped and the connection fails (`onerror`, then the close). Before, each send added its
   * own `drain` listener and buffered without limit: a server that stopped reading its stdin and
   * sent `ping` requests forever grew the agent's memory by 20 MiB a second, with no call running.
   */
  send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.child?.stdin
    if (this.closed || stdin == null || !stdin.writable) return Promise.reject(new Error("Not connected"))
    if (stdin.write(`${JSON.stringify(message)}\n`)) return Promise.resolve()
    const max = this.params.maxUnreadBytes ?? maxUnreadBytes
    if (stdin.writableLength > max) {
      this.stopReading()
      this.kill("SIGKILL")
      const error = new UnreadError(`the server left more than ${max} bytes of the agent's messages unread`)
      this.onerror?.(error)
      this.ended()
      return Promise.reject(error)
    }
    this.drained ??= new Promise<void>((resolve) => {
      const done = () => {
        stdin.off("drain", done)
        stdin.off("close", done)
        this.drained = undefined
        resolve()
      }
      stdin.on("drain", done)
      stdin.on("close", done)
    })
    return this.drained
  }

  /**
   * Stops the server in the order the MCP spec gives for stdio: stdin ended, a grace to exit, then
   * SIGTERM, then SIGKILL — each signal to its whole process group, and each step waiting for the
   * group, not the direct child alone: a wrapper that exits at once leaves the server it started to
   * its grace and then SIGKILL. A SIGTERM at once cut a server in the middle of what the last
   * messages asked of it (a cancellation it was still recording).
   */
  async close(): Promise<void> {
    const child = this.child
    if (child === undefined) return this.ended()
    this.stopping = true
    try {
      child.stdin?.end()
    } catch {
      // a stdin already broken has nothing to end
    }
    for (const signal of [undefined, "SIGTERM", "SIGKILL"] as const) {
      if (!this.groupRunning()) break
      if (signal !== undefined) this.kill(signal)
      await this.groupGone(graceMillis)
    }
    this.ended()
  }

  /**
   * Whether any process of the server's group runs (its direct child, or what that started and left).
   * A group seen empty after its leader's exit is forgotten: the kernel keeps a pid from reuse only
   * while a process or group holds it.
   */
  private groupRunning(): boolean {
    const pid = this.group
    if (pid === undefined) return false
    try {
      process.kill(-pid, 0)
      return true
    } catch (error) {
      // EPERM: a process of the group runs as another user (a setuid program) — still running.
      if ((error as NodeJS.ErrnoException).code === "EPERM") return true
      if (this.exited) this.group = undefined
      return false
    }
  }

  /**
   * Resolves when the group is gone, or after `millis`. The direct child's exit is an event; the
   * exit of a process it left (not the agent's child) is not, so the group is looked at again every
   * `groupPollMillis`.
   */
  private groupGone(millis: number): Promise<void> {
    return new Promise((resolve) => {
      const until = Date.now() + millis
      const look = () => {
        if (!this.groupRunning() || Date.now() >= until) return resolve()
        // Referenced: a program whose only work left is this stop (an embedder's scope closing on a
        // server that ignores its stdin's end) waits for it. Unreferenced, it exited 0 mid-stop, its
        // result or error never seen (review 63b).
        setTimeout(look, Math.min(groupPollMillis, Math.max(0, until - Date.now())))
      }
      look()
    })
  }

  private received(line: string): void {
    let message: JSONRPCMessage
    try {
      message = JSONRPCMessageSchema.parse(JSON.parse(line))
    } catch (error) {
      return this.onerror?.(error instanceof Error ? error : new Error(String(error)))
    }
    this.onmessage?.(message)
  }

  /** Reports the end once: nothing more is read, the server is asked to stop. */
  private ended(): void {
    if (this.closed) return
    this.closed = true
    const child = this.child
    if (child !== undefined) {
      this.stopReading()
      try {
        child.stdin?.end()
      } catch {
        // a stdin already broken has nothing to end
      }
      if (!this.stopping) this.kill("SIGTERM")
    }
    this.onclose?.()
  }

  private stopReading(): void {
    this.child?.stdout?.removeAllListeners("data")
    this.child?.stdout?.destroy()
  }

  /** `signal` to the server's whole process group (what its direct child started too, even after that exited). */
  private kill(signal: NodeJS.Signals): void {
    if (!this.groupRunning()) return
    const pid = this.group!
    try {
      process.kill(-pid, signal)
    } catch {
      // already gone
    }
  }
}
