// One line per measure that bench/all.ts gathers into the closing table of `npm run bench`: the
// measure, the floor it is compared with (measured in the same run, side by side), their ratio and
// the goal. Each benchmark prints its own lines as it ends; a line starts with RATIO_MARK.

export const RATIO_MARK = "bench-ratio ";

export interface Ratio {
  measure: string;
  /** what was measured, with its unit */
  value: string;
  /** the floor, with what it is */
  floor: string;
  /** value / floor */
  ratio: number;
  goal: string;
  met: boolean;
  /**
   * each run's own ratio (its measure over the floor measured beside it, the runs interleaved), when
   * the bench ran several: the closing table prints their spread next to the ratio
   */
  samples?: number[];
}

/** Each run's ratio: `xs[i] / floors[i]`, paired in the order they ran. */
export function pairedRatios(xs: readonly number[], floors: readonly number[]): number[] {
  return xs.map((x, i) => x / Math.max(1e-9, floors[i] ?? NaN)).filter((r) => Number.isFinite(r));
}

export function printRatio(ratio: Ratio): void {
  console.log(`${RATIO_MARK}${JSON.stringify(ratio)}`);
}
