// Types of bench/measure.mjs (plain JavaScript, so the benchmark child processes run it without a build).

/** Interleaved rounds of `run` and JSON.parse(json): the measured times of each, in ms. */
export function interleavedRounds(run: () => unknown, json: string, warmups: number, rounds: number): { runTimes: number[]; parseTimes: number[] };
export function median(values: readonly number[]): number;
export function min(values: readonly number[]): number;
