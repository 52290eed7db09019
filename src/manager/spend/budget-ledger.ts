// The running totals of each parent session's budget (budget.ts), and its state a restart must keep
// (budget-file.ts). A parent's total is summed once from its tasks (their saved usage: open.json and
// the history, read once per parent as for its list), then kept up to date by each change of a
// task's usage: no check reads the history, and no per-task cost grows with it.

import { type BudgetLevel, NO_SPEND, type Spend, addSpend, budgetLevel, budgetOf, spendOfUsage } from "./budget.js";
import type { ParentBudget } from "../../store/budget-file.js";
import type { BackgroundTask } from "../../task-record.js";
import type { SpendHost } from "./host.js";

/** What the ledger uses of the room's host: the budget's options, the clock, a parent's tasks. */
export type LedgerHost = Pick<SpendHost, "options" | "now" | "tasksOf">;

const FRESH: Omit<ParentBudget, "at"> = { raises: 0, warned: -1, told: -1 };

export class BudgetLedger {
  /** parent → what its tasks spent, once summed */
  private readonly totals = new Map<string, Spend>();
  /** task id → what of it is in its parent's total */
  private readonly counted = new Map<string, Spend>();
  private readonly states = new Map<string, ParentBudget>();
  private changed = false;

  constructor(private readonly host: LedgerHost) {}

  /** The saved state, at start-up. */
  load(saved: ReadonlyMap<string, ParentBudget>): void {
    for (const [parent, state] of saved) if (!this.states.has(parent)) this.states.set(parent, state);
  }

  /** What the parent's tasks spent, all of them together. */
  spent(parent: string): Spend {
    let total = this.totals.get(parent);
    if (!total) {
      total = NO_SPEND;
      for (const task of this.host.tasksOf(parent)) {
        const spend = spendOfUsage(task.usage);
        this.counted.set(task.id, spend);
        total = addSpend(total, spend);
      }
      this.totals.set(parent, total);
    }
    return total;
  }

  /** A task's usage changed: its parent's total follows (a parent not summed yet sums it when asked). */
  note(task: BackgroundTask): void {
    const total = this.totals.get(task.parentSessionID);
    if (!total) return;
    const now = spendOfUsage(task.usage);
    const before = this.counted.get(task.id) ?? NO_SPEND;
    this.counted.set(task.id, now);
    this.totals.set(task.parentSessionID, addSpend(addSpend(total, before, -1), now));
  }

  budget(parent: string): Spend {
    return budgetOf(this.host.options, this.state(parent).raises);
  }

  level(parent: string): BudgetLevel {
    return budgetLevel(this.spent(parent), this.budget(parent));
  }

  /** A person raised it: one more budget of the options. The new budget. */
  raise(parent: string): Spend {
    const state = this.state(parent);
    this.update(parent, { raises: state.raises + 1 });
    return this.budget(parent);
  }

  /** True once per budget (per raise): the first time the parent is warned of 80%. */
  takeWarning(parent: string): boolean {
    const state = this.state(parent);
    if (state.warned >= state.raises) return false;
    this.update(parent, { warned: state.raises });
    return true;
  }

  /** True once per budget (per raise): the first time the parent is told it is reached. */
  takeReached(parent: string): boolean {
    const state = this.state(parent);
    if (state.told >= state.raises) return false;
    this.update(parent, { told: state.raises, warned: Math.max(state.warned, state.raises) });
    return true;
  }

  /** Whether anything to save changed since the last `forSave`. */
  get dirty(): boolean {
    return this.changed;
  }

  /** The state to write (budget-file.ts); clears `dirty`. */
  forSave(): ReadonlyMap<string, ParentBudget> {
    this.changed = false;
    return new Map(this.states);
  }

  private state(parent: string): ParentBudget {
    return this.states.get(parent) ?? { ...FRESH, at: 0 };
  }

  private update(parent: string, fields: Partial<ParentBudget>): void {
    this.states.set(parent, { ...this.state(parent), ...fields, at: this.host.now() });
    this.changed = true;
  }
}
