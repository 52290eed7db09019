// This process starting (TaskManager.ready, once, on first use): the task store opened and the
// budgets read, this process's worktree directories given the user's config and a current sandbox
// (before anything of them is published), this process's tasks claimed (another live OpenCode process on the project keeps its
// own), their worktrees hosted, the children of launches a stopped process cut off adopted
// (recovery.ts), the runs it left running ended and their notices queued (recovery.ts), the queued
// tasks' missing children created, the queue filled, the store's first upkeep queued.

import { log } from "../host/client.js";
import { isProcessAlive } from "../process-state.js";
import { readBudgets } from "../store/budget-file.js";
import { forgetProcesses, recordStartUp } from "../store/processes.js";
import type { TaskFiles } from "../store/task-files.js";
import { meaningOf } from "../task-record.js";
import { type WorktreeStartUpHost, guardWorktreesAtStartUp, worktreesAtStartUp } from "../worktree/lifecycle.js";
import { type RecoveryHost, adoptOrphans, recoverAfterRestart } from "./recovery.js";
import type { BudgetLedger } from "./spend/budget-ledger.js";
import type { TaskEntry } from "./task/registry.js";

/** What start-up takes from the manager (task-manager.ts). */
export interface StartUpHost extends RecoveryHost, WorktreeStartUpHost {
  readonly store: TaskFiles;
  readonly ledger: Pick<BudgetLedger, "load">;
  readonly queue: { fill(): Promise<void> };
  now(): number;
  updateReconcileTimer(): void;
  createChildLater(entry: TaskEntry): void;
  /** the store's rewrite, queued after the saves */
  storeUpkeep(): void;
  /** the child sessions of the tasks retention dropped at this start (their fork files can go) */
  droppedSessions: string[];
}

/** Starts this process's part of the project's tasks. */
export async function startUp(manager: StartUpHost): Promise<void> {
  const { store, client } = manager;
  const { tasks, warnings, droppedSessions } = await store.open();
  for (const warning of warnings) log(client, "warn", warning);
  const budgets = await readBudgets(store.dir);
  for (const warning of budgets.warnings) log(client, "warn", warning);
  manager.ledger.load(budgets.parents);
  manager.droppedSessions = droppedSessions;
  // its worktrees hold the user's config and a current sandbox before anything of them is published
  await guardWorktreesAtStartUp(manager, tasks, (task) => task.ownerPid === process.pid || !isProcessAlive(task.ownerPid), manager.now());
  // Another live OpenCode process on this project runs its own tasks; the file keeps them for it.
  for (const task of tasks) {
    if (task.ownerPid !== process.pid && isProcessAlive(task.ownerPid)) continue;
    void manager.dispatch(manager.registry.add(task, { fromFile: true }), { kind: "claimed", pid: process.pid });
  }
  await worktreesAtStartUp(manager, tasks);
  const openChildren = new Set(tasks.map((t) => t.sessionID));
  const known = { has: (id: string) => openChildren.has(id) || store.isKnownSession(id) };
  const search = await recordStartUp(store.dir, process.pid, manager.now(), isProcessAlive);
  await adoptOrphans(manager, known, (pid) => pid === process.pid || isProcessAlive(pid), search).then(
    () => forgetProcesses(store.dir, search.kind === "since" ? search.pids : []),
    (error) => log(client, "warn", `looking for children of stopped launches failed: ${(error as Error).message}`),
  );
  await recoverAfterRestart(manager);
  manager.updateReconcileTimer();
  // Queued tasks whose child was not created before the stop get it now (or end, for a fork).
  for (const entry of manager.registry.entries()) if (meaningOf(entry.task.status).queued && !entry.task.sessionID) manager.createChildLater(entry);
  await manager.queue.fill();
  manager.storeUpkeep();
}
