/**
 * The event loop's longest turns, in CPU time: preload into a server (`node --import
 * ./bench/loop-probe.mjs dist/cli/bin.js serve …`), then `kill -USR2 <pid>` prints to stderr the
 * longest gap between two ticks of a 1 ms timer since the last signal, in CPU (`process.cpuUsage`:
 * the machine's load does not stretch it; GC and other threads of the process count) and wall
 * time, and the gaps over 25 ms of CPU. A `/healthz` answer waits for at most about one such gap
 * (see docs/benchmarks.md, rows 15–18); wall latencies on a shared machine say more about the load.
 *
 * On Linux it also reads the main thread's scheduler counters (`/proc/thread-self/schedstat`: its
 * time on a CPU and its time runnable but waiting for one) and prints, for the longest gap in wall
 * time and in total, how that wall time splits: on a CPU, waiting for a CPU (the machine's load:
 * other processes, or this process's own GC and compiler threads), or neither (blocked: idle in the
 * poll, or waiting in the GC for its helper threads). A turn long in wall time and short on a CPU
 * is the machine's, not the server's (docs/benchmarks.md, probe18).
 */
import { openSync, readSync } from "node:fs"

let last = process.cpuUsage()
let lastWall = performance.now()
let maxCpu = 0
let maxWall = 0
const gaps = []

/** The main thread's time on a CPU and runnable but waiting for one, in ms; undefined off Linux. */
const schedFd = (() => {
  try {
    return openSync("/proc/thread-self/schedstat", "r")
  } catch {
    return undefined
  }
})()
const schedBuffer = Buffer.alloc(128)
const sched = () => {
  if (schedFd === undefined) return [0, 0]
  const length = readSync(schedFd, schedBuffer, 0, schedBuffer.length, 0)
  const [running, waiting] = schedBuffer.toString("latin1", 0, length).split(" ")
  return [Number(running) / 1e6, Number(waiting) / 1e6]
}
let lastSched = sched()
const since = { wall: 0, running: 0, waiting: 0 }
let worstWall = { wall: 0, running: 0, waiting: 0 }

const tick = () => {
  const now = process.cpuUsage()
  const wall = performance.now()
  const [running, waiting] = sched()
  const cpu = (now.user + now.system - last.user - last.system) / 1000
  const turn = { wall: wall - lastWall, running: running - lastSched[0], waiting: waiting - lastSched[1] }
  if (cpu > maxCpu) maxCpu = cpu
  if (turn.wall > maxWall) maxWall = turn.wall
  if (turn.wall > worstWall.wall) worstWall = turn
  since.wall += turn.wall
  since.running += turn.running
  since.waiting += turn.waiting
  if (cpu > 25) gaps.push(`${cpu.toFixed(0)}/${turn.wall.toFixed(0)}`)
  last = now
  lastWall = wall
  lastSched = [running, waiting]
}
setInterval(tick, 1).unref()

const split = (t) => `${t.wall.toFixed(1)} ms wall = ${t.running.toFixed(1)} on a CPU + ${t.waiting.toFixed(1)} waiting for one + ${Math.max(0, t.wall - t.running - t.waiting).toFixed(1)} neither`
process.on("SIGUSR2", () => {
  tick()
  process.stderr.write(`loop: longest turn ${maxCpu.toFixed(1)} ms CPU, ${maxWall.toFixed(1)} ms wall; turns over 25 ms CPU (CPU/wall): ${gaps.splice(0).join(" ") || "none"}\n`)
  if (schedFd !== undefined) process.stderr.write(`loop, main thread: longest turn ${split(worstWall)}; since the last signal ${split(since)}\n`)
  maxCpu = 0
  maxWall = 0
  worstWall = { wall: 0, running: 0, waiting: 0 }
  since.wall = since.running = since.waiting = 0
})
