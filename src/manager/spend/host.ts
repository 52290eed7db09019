// What the spend room takes from the manager (task-manager.ts): one host for the watchdog, the
// session budget, its ledger and the step gate. Each part names the members it uses (a Pick of this
// one); the manager builds one object of it. A task changes only through `dispatch`.

import type { AssistantMessage } from "../../host/types.js";
import type { Client } from "../../host/client.js";
import type { BackgroundTask } from "../../task-record.js";
import type { TaskEntry } from "../task/registry.js";
import type { Dispatch } from "../task/runner.js";
import type { BudgetOptions } from "./budget.js";

export interface SpendHost extends Dispatch {
  readonly client: Client;
  readonly options: BudgetOptions;
  /** this process is a one-shot `opencode run`: a reached budget stops its tasks rather than pausing them */
  readonly oneShotRun: boolean;
  now(): number;
  /** every task of the parent (its settled ones read from the history once) */
  tasksOf(parent: string): readonly BackgroundTask[];
  /** the parent's tasks (registry entries) */
  entriesOf(parent: string): TaskEntry[];
  /** the task whose child session this is */
  ofChild(sessionID: string): TaskEntry | undefined;
  /** the watchdog's stop: abort the child and end the task as `error` with `reason` (not awaited) */
  stop(entry: TaskEntry, reason: string): void;
  /** the plugin stops the child: abort, then the task ends as `error` with the reason */
  stopChild(entry: TaskEntry, reason: string): Promise<void>;
  /**
   * The child's usage changed (the parent session's budget follows it: session-budget.ts).
   * `stepEnded`: the message is finished; `lastStep`: it ended the run (no tool call follows).
   */
  usageChanged?(entry: TaskEntry, step: { stepEnded: boolean; lastStep: boolean }): void;
  /** a finished step of the child, counted as its message event counts it; a stop or pause it decides is held at once (step-gate.ts) */
  stepFinished(entry: TaskEntry, info: AssistantMessage): void;
  /** whether that step is counted already, with the usage it has now (its event came first) */
  counted(entry: TaskEntry, info: AssistantMessage): boolean;
  /** the child's model requests wait at the gate (step-gate.ts) until `work`, an abort of it, is done */
  holdRequests<T>(sessionID: string, work: Promise<T>): Promise<T>;
  toast(toast: { title: string; message: string; variant: "info" | "success" | "warning" | "error" }): void;
  /** the one notice of a reached budget, delivered when the parent is idle (parent/notices.ts) */
  tellParent(parent: string, text: string): void;
  /**
   * The manager's save: here for the budgets' own file (budgets.json: a warning or a reached budget
   * taken, a raise), which the same write holds. No task's record changes here: a task changes through
   * `dispatch`, whose steps save themselves (task/step.ts).
   */
  save(): Promise<void>;
}
