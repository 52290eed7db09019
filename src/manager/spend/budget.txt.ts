// What the session budget says (budget.ts): the warning line, the refusal of a launch, the reason a
// task paused or stopped, the one notice the parent gets when it is reached, the toasts. Pure strings.

import { formatTokens } from "../../format.js";
import { BUDGET_WARN_SHARE, type Spend, budgetShare } from "./budget.js";

/** How a person raises it (the agent cannot). */
export const WHO_RAISES =
  'Only a person can raise it: in the TUI, /tasks → a task → "Raise the session\'s budget", or the plugin options sessionBudgetTokens / sessionBudgetCost in opencode.json. You cannot raise it yourself.';

/** "16.2M of 20.0M tokens charged in full · $3.10 of $20.00 (81%)": the units that have a limit. */
export function spendText(spent: Spend, budget: Spend): string {
  const parts: string[] = [];
  if (budget.tokens > 0) parts.push(`${formatTokens(spent.tokens)} of ${formatTokens(budget.tokens)} tokens charged in full`);
  if (budget.cost > 0) parts.push(`$${spent.cost.toFixed(2)} of $${budget.cost.toFixed(2)}`);
  return `${parts.join(" · ")} (${Math.floor(budgetShare(spent, budget) * 100)}%)`;
}

/** The line in the next notice and in background_list once 80% is spent. */
export function budgetLine(spent: Spend, budget: Spend, reached: boolean): string {
  return reached
    ? `budget: this session's background budget is reached: ${spendText(spent, budget)}; new tasks are refused and running ones pause after their step. ${WHO_RAISES}`
    : `budget: ${spendText(spent, budget)} of this session's background budget spent; at 100% new tasks are refused and running ones pause after their step (${Math.round(BUDGET_WARN_SHARE * 100)}% warning)`;
}

/** Why a launch (or a resume, a continue) is refused by the budget: the tool replies it as an error (task-state.ts replyOf). */
export function launchRefused(spent: Spend, budget: Spend, oneShotRun: boolean): string {
  return oneShotRun
    ? `this session's background budget is reached: ${spendText(spent, budget)}. Nothing was started. Under opencode run nobody can raise it here; a person raises it with the plugin options sessionBudgetTokens / sessionBudgetCost in opencode.json. You cannot raise it yourself: finish with what you have.`
    : `this session's background budget is reached: ${spendText(spent, budget)}. Nothing was started. ${WHO_RAISES} Tell the user what is left to do and do not launch more tasks.`;
}

/** Why a running task paused (its `error` while paused). */
export function pausedReason(spent: Spend, budget: Spend): string {
  return `paused after its step: this session's background budget is reached (${spendText(spent, budget)}); once a person raised it, "Continue" in /tasks (or background_task with resume) goes on in place`;
}

/** The reason of a paused task once a person raised the budget above what was spent: it waits for a Continue. */
export function raisedPausedReason(spent: Spend, budget: Spend): string {
  return `paused after its step; the session's background budget was raised (${spendText(spent, budget)}): "Continue" in /tasks (or background_task with resume) goes on in place`;
}

/** Why a task stopped under `opencode run`, where nobody can raise the budget. */
export function stoppedReason(spent: Spend, budget: Spend): string {
  return `stopped: this session's background budget is reached (${spendText(spent, budget)}); under opencode run nobody can raise it (plugin options sessionBudgetTokens / sessionBudgetCost)`;
}

/** Every budget notice starts with this (one per reached budget: a restart never sends it again). */
export const BUDGET_NOTICE_PREFIX = "[background budget reached]";

/** The one notice the parent gets when its budget is reached. */
export function budgetNotice(spent: Spend, budget: Spend, paused: readonly string[]): string {
  return [
    `${BUDGET_NOTICE_PREFIX} ${spendText(spent, budget)}`,
    paused.length ? `Paused after their current step (nothing lost; each goes on in place): ${paused.join(", ")}.` : "No task was running.",
    `New background tasks are refused until the budget is raised. ${WHO_RAISES}`,
    'Once it is raised, "Continue" in /tasks or background_task({ resume: "<task id>", prompt }) goes on with a paused task.',
  ].join("\n");
}

export function warnToast(spent: Spend, budget: Spend) {
  return { title: "Background budget: 80% spent", message: spendText(spent, budget), variant: "warning" as const };
}

export function reachedToast(spent: Spend, budget: Spend) {
  return {
    title: "Background budget reached",
    message: `${spendText(spent, budget)}. Tasks pause after their step; /tasks → "Raise the session's budget", then "Continue".`,
    variant: "warning" as const,
  };
}

export function raisedText(budget: Spend): string {
  const parts = [budget.tokens > 0 ? `${formatTokens(budget.tokens)} tokens charged in full` : "", budget.cost > 0 ? `$${budget.cost.toFixed(2)}` : ""];
  return `the session's background budget is now ${parts.filter(Boolean).join(" · ")}`;
}
