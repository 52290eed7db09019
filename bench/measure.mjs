// How the fork benchmarks time a piece of work next to JSON.parse (bench/run.mjs, bench/floors.ts).

/**
 * `warmups` unmeasured rounds, then `rounds` measured ones. Each round: `run()` (timed; what it
 * returns is kept until the next round starts, then dropped before the next run is timed), then a
 * fresh JSON.parse of `json` (timed, result dropped). Interleaving gives both measurements the same
 * machine load (the development machine is shared) and the same heap. No forced GC between them: a
 * forced full GC makes V8 shrink its young generation, which no real process runs with, and slows
 * any allocating code several times over.
 */
export function interleavedRounds(run, json, warmups, rounds) {
  const runTimes = [];
  const parseTimes = [];
  let last;
  for (let r = 0; r < warmups + rounds; r++) {
    last = undefined;
    const t0 = performance.now();
    last = run();
    const t1 = performance.now();
    JSON.parse(json);
    const t2 = performance.now();
    if (r < warmups) continue;
    runTimes.push(t1 - t0);
    parseTimes.push(t2 - t1);
  }
  void last;
  return { runTimes, parseTimes };
}

export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

export function min(values) {
  return values.reduce((a, b) => Math.min(a, b), Number.POSITIVE_INFINITY);
}
