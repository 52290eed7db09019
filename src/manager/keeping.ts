// Where the manager's tasks are kept, as the manager uses the store (../store/, its README): the task
// file's writes (`save`: serialised, every step run in one turn one write), the store's upkeep queued
// after them (retention, compaction: never on a save's path), and a parent's settled tasks read from
// the history into the registry, once per parent (`hydrate`).

import { type Client, log } from "../host/client.js";
import { writeBudgets } from "../store/budget-file.js";
import { fingerprint } from "../store/history.js";
import { isSettled } from "../store/retention.js";
import type { TaskFiles } from "../store/task-files.js";
import { type WorktreeHost, hostTask } from "../worktree/lifecycle.js";
import type { BudgetLedger } from "./spend/budget-ledger.js";
import type { TaskRegistry } from "./task/registry.js";
import type { Dispatch } from "./task/runner.js";

/** What keeping the tasks takes from the manager (task-manager.ts). */
export interface KeepingHost extends Dispatch, WorktreeHost {
  readonly client: Client;
  readonly store: TaskFiles;
  readonly registry: TaskRegistry;
  readonly ledger: Pick<BudgetLedger, "dirty" | "forSave">;
  readonly isDisposed: boolean;
  /** told the child sessions of tasks retention dropped while OpenCode runs (their fork files can go) */
  readonly onHistoryDropped: ((sessions: string[]) => void) | undefined;
}

export class TaskKeeping {
  private chain: Promise<void> = Promise.resolve();
  private queuedSave: Promise<void> | undefined;
  private upkeepQueued = false;
  /** parents whose settled tasks were read from the history into the registry */
  private readonly hydrated = new Set<string>();

  constructor(private readonly host: KeepingHost) {}

  /** The writes and the upkeep in flight (the manager's whenIdle waits for them). */
  get idle(): Promise<void> {
    return this.chain;
  }

  /**
   * Writes the file. Writes are serialised, and every save asked for before the waiting one takes
   * its snapshot (in the store, holding the lock) shares that one: it holds all their changes (so the
   * steps run in one turn, each with its `save`, are one write). Called for a task's record only by
   * the runner (task/runner.ts, a step's `save`); besides it, the budgets' own changes
   * (session-budget.ts) and the last write at dispose.
   */
  save(): Promise<void> {
    if (this.queuedSave) return this.queuedSave;
    const { store, registry, ledger, client } = this.host;
    const queued: Promise<void> = this.chain.then(() =>
      store
        .save(() => {
          if (this.queuedSave === queued) this.queuedSave = undefined; // a change from now on needs the next save
          return registry.committed();
        })
        .then(
          // the budgets' state a restart must keep (budget-file.ts), written only when it changed
          () => (ledger.dirty && store.isOpen ? writeBudgets(store.dir, ledger.forSave()) : undefined),
        )
        .then(
          () => this.upkeep(),
          (error) => log(client, "error", `saving tasks failed: ${(error as Error).message}`),
        )
        .finally(() => {
          if (this.queuedSave === queued) this.queuedSave = undefined; // failed before its snapshot
        }),
    );
    this.queuedSave = this.chain = queued;
    return queued;
  }

  /** The store's rewrite (retention, compaction: ../store/task-files.ts maintain), queued after the saves, never on a save's path. */
  upkeep(): void {
    const { store, registry, client } = this.host;
    if (this.upkeepQueued || this.host.isDisposed || !store.needsUpkeep()) return;
    this.upkeepQueued = true;
    this.chain = this.chain.then(async () => {
      this.upkeepQueued = false;
      const { warnings, dropped, droppedSessions } = await store
        .maintain()
        .catch((error: Error) => ({ warnings: [`tidying the task store failed: ${error.message}`], dropped: [], droppedSessions: [] }));
      for (const warning of warnings) log(client, "warn", warning);
      if (droppedSessions.length > 0) this.host.onHistoryDropped?.(droppedSessions);
      // What retention dropped leaves memory too (unless it changed meanwhile: then the next save keeps it).
      for (const line of dropped) {
        const entry = registry.get(line.id);
        if (entry && isSettled(entry.task) && fingerprint(entry.task) === fingerprint(line)) registry.remove(entry);
      }
    });
  }

  /** Reads the parent's settled tasks from the history into the registry, once per parent. */
  hydrate(parent: string): void {
    const { store, registry } = this.host;
    if (!store.isOpen || this.hydrated.has(parent)) return;
    this.hydrated.add(parent);
    const { tasks, warnings } = store.historyOf(parent);
    for (const warning of warnings) log(this.host.client, "warn", warning);
    let added = false;
    for (const task of tasks) {
      if (registry.get(task.id)) continue;
      void this.host.dispatch(registry.add(task, { fromFile: true }), { kind: "claimed", pid: process.pid });
      hostTask(this.host, task); // a worktree task read from the history still works (and resumes) in its worktree
      added = true;
    }
    if (added) registry.sortParent(parent);
  }
}
