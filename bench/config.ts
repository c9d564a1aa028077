/**
 * Sizes and repetitions of the benchmarks. `--quick` (or BENCH_QUICK=1) picks small sizes that finish in
 * about two minutes on 2 cores; every size can be overridden by an environment variable, e.g.
 * `BENCH_TURN_DELTAS=20000 npm run bench`. `--only=1,3,8` runs a subset of the rows.
 */
const argv = process.argv.slice(2)
export const quick = argv.includes("--quick") || process.env.BENCH_QUICK === "1"

const onlyArg = argv.find((a) => a.startsWith("--only="))?.slice("--only=".length) ?? process.env.BENCH_ONLY
/** The rows to run (all when unset). */
export const only: ReadonlySet<number> | undefined = onlyArg === undefined || onlyArg === ""
  ? undefined
  : new Set(onlyArg.split(",").map((s) => Number(s.trim())))

const num = (name: string, full: number, small: number): number => {
  const raw = process.env[`BENCH_${name}`]
  const value = raw === undefined || raw === "" ? (quick ? small : full) : Number(raw)
  if (!Number.isFinite(value) || value <= 0) throw new Error(`BENCH_${name} must be a positive number, got ${raw}`)
  return value
}

export const config = {
  /** Rows 1–2: text deltas streamed in the one scripted turn, and interleaved repetitions. */
  turnDeltas: num("TURN_DELTAS", 10_000, 10_000),
  // A turn lasts ~20 ms, which one GC pause or scheduling hiccup can double: row 2 read 0.42× and
  // 0.58× on the same code with 7 repetitions; the median of 21 is steadier.
  turnReps: num("TURN_REPS", 21, 7),
  /** Rows 10–11: repetitions of the turn through the SDK (a vendor process; each ~0.5 s). */
  sdkTurnReps: num("SDK_TURN_REPS", 7, 5),
  /** Row 24: deltas of the turn from the paced vendor (each turn lasts about deltas × pace ms), repetitions; the pace (rows 24–25). */
  pacedDeltas: num("PACED_DELTAS", 2_000, 500),
  pacedReps: num("PACED_REPS", 5, 3),
  vendorPaceMs: num("VENDOR_PACE_MS", 1, 1),
  /** Row 25: turns whose first delta's latency is sampled, and deltas per turn. */
  firstDeltaTurns: num("FIRST_DELTA_TURNS", 100, 30),
  firstDeltaDeltas: num("FIRST_DELTA_DELTAS", 10, 10),
  /** Row 3: events appended per repetition. */
  appendEvents: num("APPEND_EVENTS", 10_000, 5_000),
  appendReps: num("APPEND_REPS", 9, 5),
  /** Row 4: size of the replayed log (MB), repetitions, and the two log sizes whose replay RSS is compared. */
  replayMb: num("REPLAY_MB", 10, 10),
  /** Row 4's second log (MB), replayed the same way. */
  replayLargeMb: num("REPLAY_LARGE_MB", 100, 100),
  replayReps: num("REPLAY_REPS", 5, 3),
  rssSmallMb: num("RSS_SMALL_MB", 10, 10),
  rssLargeMb: num("RSS_LARGE_MB", 100, 40),
  /** Row 5: size of the hydrated session (MB) and child-process repetitions per contender. */
  hydrateMb: num("HYDRATE_MB", 100, 25),
  hydrateReps: num("HYDRATE_REPS", 2, 1),
  rssReps: num("RSS_REPS", 2, 1),
  /** Rows 22–23: size of the forked and rewound session (MB) and child-process repetitions per contender. */
  forkMb: num("FORK_MB", 100, 25),
  forkReps: num("FORK_REPS", 2, 1),
  /** Row 6: turn number measured in the long session, deltas per stored turn, deltas of a measured turn, repetitions, turns per sample. */
  growthTurns: num("GROWTH_TURNS", 2_000, 2_000),
  growthStoredDeltas: num("GROWTH_STORED_DELTAS", 20, 20),
  growthDeltas: num("GROWTH_DELTAS", 20, 20),
  growthReps: num("GROWTH_REPS", 40, 20),
  growthBatch: num("GROWTH_BATCH", 20, 20),
  /** Row 7: cancellations measured per store. */
  cancelReps: num("CANCEL_REPS", 200, 50),
  /** Row 8: CLI cold starts measured. */
  cliReps: num("CLI_REPS", 10, 5),
  /** Row 9: sessions touched by one engine (more than twice the engine's default cache, 1,024 sessions). */
  sessions: num("SESSIONS", 3_000, 2_200),
  /** Rows 12–13: sessions listed, and CLI runs per contender. */
  listSessions: num("LIST_SESSIONS", 10_000, 10_000),
  listReps: num("LIST_REPS", 5, 3),
  /** Row 12: sessions a cluster runner drives in sequence. */
  runnerSessions: num("RUNNER_SESSIONS", 10_000, 1_000),
  /** Rows 15–16: deltas of the watched turn, SSE clients compared with one, and repetitions (rows 15–18). */
  serveDeltas: num("SERVE_DELTAS", 10_000, 2_000),
  serveClients: num("SERVE_CLIENTS", 100, 100),
  serveReps: num("SERVE_REPS", 3, 1),
  /** Rows 26–27: deltas of the paced watched turn (the scripted delay of VENDOR_PACE_MS before each). */
  servePacedDeltas: num("SERVE_PACED_DELTAS", 2_000, 500),
  /** Rows 17–18: deltas of the turn during which /healthz is probed, and the watchers of each row. */
  healthDeltas: num("HEALTH_DELTAS", 2_000, 2_000),
  healthWatchers: num("HEALTH_WATCHERS", 50, 50),
  healthWatchersMany: num("HEALTH_WATCHERS_MANY", 500, 500),
  // Rows 19–20: tool steps per turn, repetitions; trivial turns per run.
  toolSteps: num("TOOL_STEPS", 50, 20),
  toolStepReps: num("TOOL_STEP_REPS", 7, 3),
  trivialTurns: num("TRIVIAL_TURNS", 200, 50),
  // Row 21: concurrent sessions, deltas each, repetitions.
  concurrentSessions: num("CONCURRENT_SESSIONS", 1_000, 1_000),
  concurrentDeltas: num("CONCURRENT_DELTAS", 100, 100),
  concurrentReps: num("CONCURRENT_REPS", 3, 1)
}
