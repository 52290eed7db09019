// The one writer of a task's status: an edge (transitions.ts decides what it writes) is recorded on
// the task, then its follow-ups run once, here, in the order the edge lists them. A refused edge is
// logged and changes nothing. The manager (task-manager.ts) is the host; nothing else calls this.
//
// The record is written at once, before anything is awaited, and the follow-ups that are not I/O run
// at once too: a caller that does not await sees the new state and its effects immediately.

import { taskEndedToast, taskStartedToast } from "../prompts.js";
import type { TaskEntry } from "./registry.js";
import { type Edge, type EdgeInput, type Effect, transition } from "./transitions.js";
import type { BackgroundTask } from "./types.js";

/** The wake/deliver of the notice a `finish` sends (task-manager.ts finish). */
export type ApplyOptions = { wake?: boolean; deliver?: boolean };

/** What the follow-ups call: the manager's parts, nothing more. */
export interface ApplyHost {
  now(): number;
  warn(message: string): void;
  parentBusy(parentSessionID: string): void;
  watchdog: { runStarted(entry: TaskEntry): void; runEnded(entry: TaskEntry): void };
  /** a worktree task's run committed (src/worktree); never throws */
  settleRun(task: BackgroundTask): Promise<void>;
  toast(toast: { title: string; message: string; variant: "info" | "success" | "warning" | "error" }): void;
  publish(task: BackgroundTask): void;
  updateReconcileTimer(): void;
  fillQueue(): void;
  save(): Promise<void>;
  noticeEnded(entry: TaskEntry, options: { wake: boolean; deliver: boolean }): Promise<void>;
}

export type Apply = <E extends Edge>(entry: TaskEntry, edge: E, input: EdgeInput[E], options?: ApplyOptions) => Promise<boolean>;

/** Records `edge` on the entry's task and runs its follow-ups; false (logged, nothing changed) when it is refused. */
export function applyEdge<E extends Edge>(host: ApplyHost, entry: TaskEntry, edge: E, input: EdgeInput[E], options: ApplyOptions = {}): Promise<boolean> {
  const { task } = entry;
  const result = transition(task, edge, input, host.now());
  if ("refused" in result) {
    host.warn(`task ${task.id}: ${result.refused}; nothing changed`);
    return Promise.resolve(false);
  }
  const { status, ...fields } = result.next;
  Object.assign(task, fields);
  task.status = status; // the only place a task's status changes
  return runEffects(host, entry, result.effects, input, options);
}

/** Runs the follow-ups in order; one that is I/O is awaited before the next, the others run at once. */
async function runEffects(host: ApplyHost, entry: TaskEntry, effects: readonly Effect[], input: unknown, options: ApplyOptions): Promise<boolean> {
  for (const effect of effects) {
    if (effect === "stopIfLaunching") {
      if (entry.runtime.launching) break; // commitLaunch takes it from here
      continue;
    }
    const pending = runEffect(host, entry, effect, input, options);
    if (pending) await pending;
  }
  return true;
}

function runEffect(host: ApplyHost, entry: TaskEntry, effect: Exclude<Effect, "stopIfLaunching">, input: unknown, options: ApplyOptions): Promise<void> | void {
  const { task, runtime } = entry;
  switch (effect) {
    case "endRunState": {
      const answer = (input as Partial<EdgeInput["finish"]>).ending?.answer;
      if (answer !== undefined) runtime.answer = answer;
      runtime.lastError = undefined;
      runtime.permission = undefined;
      runtime.question = undefined;
      releaseRunBookkeeping(runtime);
      return;
    }
    case "freshRunState":
      runtime.lastError = undefined;
      runtime.answer = undefined;
      runtime.noticeFailures = 0;
      runtime.stopReason = undefined;
      return;
    case "parentBusy":
      return host.parentBusy(task.parentSessionID);
    case "watchdogStart":
      return host.watchdog.runStarted(entry);
    case "watchdogEnd":
      return host.watchdog.runEnded(entry);
    case "settleRun":
      if (!task.worktree) return;
      runtime.settling = true; // a sibling's delivery leaves its notice to this end (notices.ts)
      return host.settleRun(task).finally(() => {
        runtime.settling = false;
      });
    case "releaseWaiters":
      return releaseWaiters(entry);
    case "toastStarted":
      return host.toast(taskStartedToast(task));
    case "toastEnded":
      return host.toast(taskEndedToast(task));
    case "publish":
      return host.publish(task);
    case "timer":
      return host.updateReconcileTimer();
    case "queueFill":
      return host.fillQueue();
    case "save":
      return host.save();
    case "noticeEnded":
      return host.noticeEnded(entry, { wake: options.wake ?? true, deliver: options.deliver ?? true });
  }
}

/**
 * What only a running run needs goes once it ended (a server that runs for weeks keeps every ended
 * task's record, nothing more): the usage seen per child message (the usage is read whole from the
 * child when the run ends) and the messages the empty-answer breaker judged. The watchdog reads
 * them only while the task runs; a new run starts with fresh ones.
 */
export function releaseRunBookkeeping(runtime: TaskEntry["runtime"]): void {
  runtime.usageByMessage.clear();
  runtime.guard.judged.clear();
}

/** background_output({ block }) callers waiting for the task to end are released. */
export function releaseWaiters(entry: TaskEntry): void {
  for (const done of [...entry.runtime.endWaiters]) done();
}
