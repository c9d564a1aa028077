/**
 * Awaiting processes a test does not own (a command's children, grandchildren that left its group)
 * without polling /proc: the command redirects into a named pipe (`sleep 300 >held`), so each such
 * process holds the pipe's write end while it lives. The kernel then says when one has opened it
 * (the process is there) and when the last one holding it is gone (end of file) — events, not a
 * loop with a sleep.
 */
import { execFileSync } from "node:child_process"
import { closeSync, constants, open, openSync, readSync } from "node:fs"
import { Socket } from "node:net"

export interface Holders {
  /** Resolves once a process has opened the pipe for writing (its redirect ran). */
  readonly opened: Promise<void>
  /** Resolves once a process opened it and every process holding it has exited. */
  readonly closed: Promise<void>
  /** Whether a process holds the pipe now (asked of the kernel at once, nothing awaited). */
  readonly held: () => boolean
}

/** Makes the named pipe `path` and watches who holds its write end. */
export const holders = (path: string): Holders => {
  execFileSync("mkfifo", [path])
  // A blocking open for reading returns (in libuv's thread pool) once a writer has opened the pipe.
  const fd = new Promise<number>((resolve, reject) => open(path, constants.O_RDONLY, (error, fd) => (error ? reject(error) : resolve(fd))))
  // As a socket the read end is watched by the event loop: it ends when no writer is left.
  const closed = fd.then((fd) =>
    new Promise<void>((resolve) => {
      const socket = new Socket({ fd, readable: true, writable: false })
      socket.on("close", () => resolve())
      socket.resume()
    })
  )
  const held = () => {
    // Read without waiting: nothing to read but a writer present is EAGAIN; no writer is end of file.
    const probe = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK)
    try {
      readSync(probe, Buffer.alloc(1))
      return false
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "EAGAIN") return true
      throw error
    } finally {
      closeSync(probe)
    }
  }
  return { opened: fd.then(() => undefined), closed, held }
}
