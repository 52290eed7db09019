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
}

export function printRatio(ratio: Ratio): void {
  console.log(`${RATIO_MARK}${JSON.stringify(ratio)}`);
}
