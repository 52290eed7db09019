// The budget of a parent session's background work: tokens charged in full (as maxTaskTokens counts
// them: spend/caps.ts chargedTokens) and dollars, over all of the session's tasks together, finished ones
// included. Options `sessionBudgetTokens` / `sessionBudgetCost` give one budget (0: none); each raise
// by a person adds one more. At BUDGET_WARN_SHARE the parent is warned; at 100% no task starts and
// running ones pause after their step. Pure: the running totals and what is persisted are
// budget-ledger.ts's; what it says is budget.txt.ts's.

import type { PluginOptions } from "../../options.js";
import { chargedTokens } from "./caps.js";
import type { Usage } from "../../task-record.js";

export type BudgetOptions = Pick<PluginOptions, "sessionBudgetTokens" | "sessionBudgetCost">;

/** What a session spent, or what it may spend (0: no limit in that unit). */
export interface Spend {
  tokens: number;
  cost: number;
}

export const NO_SPEND: Spend = { tokens: 0, cost: 0 };

/** The share of the budget at which the parent is warned (a toast, a line in the next notice and in the list). */
export const BUDGET_WARN_SHARE = 0.8;

/** `under` the warning, `warn` from 80%, `reached` at 100%; `none` when there is no budget. */
export type BudgetLevel = "none" | "under" | "warn" | "reached";

/** What one task's usage counts against its parent's budget. */
export function spendOfUsage(usage: Usage | undefined): Spend {
  return usage ? { tokens: chargedTokens(usage), cost: usage.cost } : NO_SPEND;
}

export function addSpend(a: Spend, b: Spend, sign: 1 | -1 = 1): Spend {
  return { tokens: a.tokens + sign * b.tokens, cost: a.cost + sign * b.cost };
}

/** The session's budget: the options' one, once more per raise by a person. */
export function budgetOf(options: BudgetOptions, raises: number): Spend {
  const times = 1 + Math.max(0, Math.floor(raises));
  return { tokens: options.sessionBudgetTokens * times, cost: options.sessionBudgetCost * times };
}

/** The larger of the two shares spent (0 with no budget). */
export function budgetShare(spent: Spend, budget: Spend): number {
  const tokens = budget.tokens > 0 ? spent.tokens / budget.tokens : 0;
  const cost = budget.cost > 0 ? spent.cost / budget.cost : 0;
  return Math.max(tokens, cost);
}

export function budgetLevel(spent: Spend, budget: Spend): BudgetLevel {
  if (budget.tokens <= 0 && budget.cost <= 0) return "none";
  const share = budgetShare(spent, budget);
  return share >= 1 ? "reached" : share >= BUDGET_WARN_SHARE ? "warn" : "under";
}

/**
 * What a child does after a step, by its parent's budget: go on, or stop here. A step that ended the
 * run (its model answered without a tool call) is not stopped: the run is over anyway and its answer
 * counts. `stop` under `opencode run` (nobody can raise it there), else `pause` (continued in place).
 */
export function afterStep(level: BudgetLevel, step: { lastStep: boolean }, oneShotRun: boolean): "go on" | "pause" | "stop" {
  if (level !== "reached" || step.lastStep) return "go on";
  return oneShotRun ? "stop" : "pause";
}
