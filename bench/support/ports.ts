/** Ports for the servers of tests and benchmarks. */
import { createServer } from "node:net"

/** A port of 127.0.0.1 no one listens on now (the kernel's pick); the server binds it a moment later. */
export const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      server.close(() => (typeof address === "object" && address !== null ? resolve(address.port) : reject(new Error("no port"))))
    })
  })
