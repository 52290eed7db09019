// Spend caps: a task whose child has used more than `maxTaskTokens` tokens charged in full, or more
// than `maxTaskCost` dollars (when the provider reports cost), summed over every run of the task, is
// stopped like the other runaway guards (watchdog.ts). Cache reads are reported but never capped: a
// native fork reads the parent's whole context from cache on every step by design. Pure.

import type { PluginOptions } from "../../options.js";
import { chargedTokens } from "../../format.js";
import type { Usage } from "../../task-record.js";

export { chargedTokens };

export type SpendLimits = Pick<PluginOptions, "maxTaskTokens" | "maxTaskCost">;

/** Why a task that used `usage` must stop, or undefined while it is within both caps (0 = no cap). */
export function spendOverCap(usage: Usage | undefined, limits: SpendLimits): string | undefined {
  if (!usage) return undefined;
  const tokens = chargedTokens(usage);
  if (limits.maxTaskTokens > 0 && tokens > limits.maxTaskTokens) {
    return `stopped: used ${Math.round(tokens)} tokens charged in full (uncached input, output, reasoning, cache writes; cache reads not counted), over the cap (maxTaskTokens: ${limits.maxTaskTokens})`;
  }
  if (limits.maxTaskCost > 0 && usage.cost > limits.maxTaskCost) {
    return `stopped: cost $${usage.cost.toFixed(4)}, over the cap (maxTaskCost: ${limits.maxTaskCost})`;
  }
  return undefined;
}
