// The budget of a parent session's background work, applied (the rule: budget.ts; the totals and
// what a restart keeps: budget-ledger.ts; the words: budget.txt.ts). Checked before each launch,
// resume, continue and queued start, and after each step of each child (the watchdog reports each
// step's usage). At 80%: a toast, and a line in the next notice and in background_list. At 100%: no
// new start, running children pause after their step (under `opencode run`: they stop, as nobody
// can raise it there), and the parent is told once. Pause, raise and continue are inputs of the
// task's edges (transitions.ts `pause`, `continue`), run by task/runner.ts like every other.

import { abortQuietly } from "../../host/client.js";
import { sessionDirectory } from "../../worktree/hub.js";
import { edge } from "../task/step.js";
import { afterStep } from "./budget.js";
import type { BudgetLedger } from "./budget-ledger.js";
import { budgetLine, budgetNotice, launchRefused, pausedReason, raisedPausedReason, raisedText, reachedToast, stoppedReason, warnToast } from "./budget.txt.js";
import type { TaskEntry } from "../task/registry.js";
import { isOpen, isWorking, meaningOf } from "../../task-record.js";
import type { SpendHost } from "./host.js";

/** The prompt a paused or interrupted task goes on with when a person continues it from /tasks. */
export const CONTINUE_PROMPT = "Continue the task where you stopped: your work so far is above, nothing was lost.";

/** What the session budget uses of the room's host. */
export type BudgetHost = Pick<SpendHost, "client" | "oneShotRun" | "dispatch" | "holdRequests" | "stopChild" | "toast" | "tellParent" | "entriesOf" | "save">;

export class SessionBudget {
  constructor(
    private readonly host: BudgetHost,
    /** the running totals, and what a restart keeps */
    private readonly ledger: BudgetLedger,
  ) {}

  /** Undefined while the parent may start more work; else why it may not (budget, spent, who raises it). */
  refusal(parent: string): string | undefined {
    const { ledger } = this;
    if (ledger.level(parent) !== "reached") return undefined;
    this.reached(parent);
    return launchRefused(ledger.spent(parent), ledger.budget(parent), this.host.oneShotRun);
  }

  /** The line for the next notice and background_list from 80% on; undefined below it (or without a budget). */
  line(parent: string): string | undefined {
    const { ledger } = this;
    const level = ledger.level(parent);
    if (level !== "warn" && level !== "reached") return undefined;
    return budgetLine(ledger.spent(parent), ledger.budget(parent), level === "reached");
  }

  /**
   * A child's usage changed (the watchdog saw an assistant message): its parent's total follows.
   * `stepEnded`: that message is finished; `lastStep`: it ended the run (no tool call follows).
   */
  async usageChanged(entry: TaskEntry, step: { stepEnded: boolean; lastStep: boolean }): Promise<void> {
    const { ledger } = this;
    const parent = entry.task.parentSessionID;
    ledger.note(entry.task);
    const level = ledger.level(parent);
    if (level === "warn" && ledger.takeWarning(parent)) {
      this.host.toast(warnToast(ledger.spent(parent), ledger.budget(parent)));
      void this.host.save(); // (the warning taken, in budgets.json: not a task's record)
    }
    if (level !== "reached") return;
    this.reached(parent);
    if (!step.stepEnded) return;
    const what = afterStep(level, step, this.host.oneShotRun);
    if (what === "pause") await this.pause(entry, pausedReason(ledger.spent(parent), ledger.budget(parent)));
    else if (what === "stop") await this.host.stopChild(entry, stoppedReason(ledger.spent(parent), ledger.budget(parent)));
  }

  /** A queued task's turn came: false (and it is paused, or stopped under `opencode run`) when the budget is reached. */
  async mayStart(entry: TaskEntry): Promise<boolean> {
    const { ledger } = this;
    const parent = entry.task.parentSessionID;
    if (ledger.level(parent) !== "reached") return true;
    this.reached(parent);
    const spent = ledger.spent(parent);
    const budget = ledger.budget(parent);
    if (this.host.oneShotRun) await this.host.dispatch(entry, edge("finish", { ending: { status: "error", error: stoppedReason(spent, budget) } }));
    else await this.host.dispatch(entry, edge("pause", { reason: pausedReason(spent, budget) }));
    return false;
  }

  /** A person raised the parent's budget (/tasks, never the agent): one more budget. The answer, or the error. */
  async raise(parent: string): Promise<{ ok: string } | { error: string }> {
    const { ledger } = this;
    if (ledger.level(parent) === "none") return { error: "this session has no background budget to raise (sessionBudgetTokens and sessionBudgetCost are 0)" };
    const budget = ledger.raise(parent);
    await this.host.save(); // (the raise, in budgets.json: not a task's record; held-reason below saves the tasks)
    // its paused tasks say so: their reason no longer says the budget is reached (unless it still is)
    const spent = ledger.spent(parent);
    const reason = ledger.level(parent) === "reached" ? pausedReason(spent, budget) : raisedPausedReason(spent, budget);
    for (const entry of this.host.entriesOf(parent))
      if (meaningOf(entry.task.status).waitsForPerson) await this.host.dispatch(entry, { kind: "held-reason", reason });
    // No toast of the server's own: the raise is a person's /tasks action, and the TUI toasts its
    // answer. A second, throttled toast from here could come after that one and replace it.
    return { ok: raisedText(budget) };
  }

  /**
   * A paused or interrupted task goes on in place (same child, its history, model and worktree):
   * through the queue, with `prompt`. Refused while the budget is reached, or when its worktree is gone.
   */
  async continueTask(entry: TaskEntry, prompt: string, from?: { callID: string; agent: string }): Promise<{ ok: true } | { error: string }> {
    const { task } = entry;
    if (!meaningOf(task.status).continuable) return { error: `task ${task.id} is ${task.status}: only a paused or interrupted task is continued` };
    if (!task.sessionID) return { error: `task ${task.id} never had a child session: start it anew with background_task` };
    if (task.worktree?.removed) return { error: `the worktree of task ${task.id} was removed (${task.worktree.removed}): it has nowhere to continue` };
    // (a continue goes on in place; only a resume makes a freed directory again from the branch)
    if (task.worktree?.freedAt !== undefined)
      return {
        error: `the worktree directory of task ${task.id} was freed once its run was committed: resume it with background_task, which makes it again from its branch`,
      };
    const refused = this.refusal(task.parentSessionID);
    if (refused) return { error: refused };
    const applied = await this.host.dispatch(entry, edge("continue", { prompt, ...(from ?? {}) }));
    return applied ? { ok: true } : { error: `task ${task.id} could not be continued from ${task.status}` };
  }

  /**
   * A remote parent's budget is reached (requests/relay.ts `pause`): its task here pauses as one of
   * this process's own would, with the parent's words. What it did, or why not.
   */
  async pauseAsked(entry: TaskEntry, reason: string): Promise<{ ok: string } | { error: string }> {
    const { task } = entry;
    if (meaningOf(task.status).followUp === "continue") return { ok: `task ${task.id} is paused already` };
    if (!meaningOf(task.status).moving || entry.runtime.stopReason)
      return { error: `task ${task.id} is ${task.status}: only a running or queued task is paused` };
    await this.pause(entry, reason);
    // (the pause wrote the task's status: read anew)
    const now = entry.task.status;
    return meaningOf(now).followUp === "continue" ? { ok: `task ${task.id} paused` } : { error: `task ${task.id} could not be paused from ${now}` };
  }

  /**
   * A running child stopped after its step: paused first (its idle and abort are then no end), then
   * aborted at once, while the pause is saved and published. Its next model request waits at the gate
   * until the abort is done (step-gate.ts), so no step goes out after the pause and is charged
   * uncounted. The abort tells nobody anything: saved before told still holds. A queued task (a
   * remote parent's pause) has no step under way: it is paused and nothing is aborted. A task that
   * runs on a remote is paused here, and there by its next check (../remote/follow.ts).
   */
  private async pause(entry: TaskEntry, reason: string): Promise<void> {
    const { task } = entry;
    if (!meaningOf(task.status).moving || entry.runtime.stopReason) return;
    const working = isWorking(task.status);
    const pausing = this.host.dispatch(entry, edge("pause", { reason }));
    if (!working || task.remote || !meaningOf(task.status).waitsForPerson) return void (await pausing); // (refused: written nothing; a step writes at once)
    // (its next request waits at the gate until the abort is done: it is never sent, nothing uncounted is charged)
    await this.host.holdRequests(task.sessionID, Promise.all([abortQuietly(this.host.client, task.sessionID, sessionDirectory(task.sessionID)), pausing]));
  }

  /** The budget is reached: the toast and the parent's one notice, once per budget (a restart keeps that it was told). */
  private reached(parent: string): void {
    const { ledger } = this;
    if (!ledger.takeReached(parent)) return;
    const spent = ledger.spent(parent);
    const budget = ledger.budget(parent);
    const pausing = this.host
      .entriesOf(parent)
      .filter((e) => isOpen(e.task.status))
      .map((e) => e.task.id);
    this.host.toast(reachedToast(spent, budget));
    // Recorded as told (budgets.json) before the notice goes out: a crash in between loses the
    // notice rather than telling the parent twice.
    const notice = budgetNotice(spent, budget, pausing);
    void this.host.save().then(() => this.host.tellParent(parent, notice));
  }
}
