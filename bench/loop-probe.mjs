/**
 * The event loop's longest turns, in CPU time: preload into a server (`node --import
 * ./bench/loop-probe.mjs dist/cli/bin.js serve …`), then `kill -USR2 <pid>` prints to stderr the
 * longest gap between two ticks of a 1 ms timer since the last signal, in CPU (`process.cpuUsage`:
 * the machine's load does not stretch it; GC and other threads of the process count) and wall
 * time, and the gaps over 25 ms of CPU. A `/healthz` answer waits for at most about one such gap
 * (see docs/benchmarks.md, rows 15–18); wall latencies on a shared machine say more about the load.
 */
let last = process.cpuUsage()
let lastWall = performance.now()
let maxCpu = 0
let maxWall = 0
const gaps = []
const tick = () => {
  const now = process.cpuUsage()
  const wall = performance.now()
  const cpu = (now.user + now.system - last.user - last.system) / 1000
  if (cpu > maxCpu) maxCpu = cpu
  if (wall - lastWall > maxWall) maxWall = wall - lastWall
  if (cpu > 25) gaps.push(`${cpu.toFixed(0)}/${(wall - lastWall).toFixed(0)}`)
  last = now
  lastWall = wall
}
setInterval(tick, 1).unref()
process.on("SIGUSR2", () => {
  tick()
  process.stderr.write(`loop: longest turn ${maxCpu.toFixed(1)} ms CPU, ${maxWall.toFixed(1)} ms wall; turns over 25 ms CPU (CPU/wall): ${gaps.splice(0).join(" ") || "none"}\n`)
  maxCpu = 0
  maxWall = 0
})
