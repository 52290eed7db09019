// budgets.json, beside open.json in the task store's directory: what a restart must keep of each
// parent session's budget (budget-ledger.ts owns it): how many times a person raised it, and which
// budget the parent was already warned of (80%) and told was reached (so a restart never tells it
// twice). What was spent is not kept here: it is the tasks' own usage (open.json and the history).
// Retention: the BUDGET_PARENTS_KEPT most recently changed parents. Written whole and atomically,
// from the manager's save chain (after open.json); a file that cannot be read is set aside with a
// warning, never fatal (the budget then starts from the options).

import { promises as fs } from "node:fs";
import { join } from "node:path";
import { BUDGET_PARENTS_KEPT } from "../constants.js";
import { tool } from "../host/tool.js";
import { writeFileAtomically } from "../atomic-file.js";
import { errorCode, readRegularFile } from "./fs-read.js";
import { freeAsideName } from "./task-list-file.js";

const z = tool.schema;
const MAX_BUDGET_FILE_BYTES = 1024 * 1024;

const ParentBudgetSchema = z.object({
  /** times a person raised it (each adds one budget of the options) */
  raises: z.number().int().min(0).max(1_000_000),
  /** the raise count whose budget the parent was warned of at 80% (-1: none) */
  warned: z.number().int().min(-1).max(1_000_000),
  /** the raise count whose budget the parent was told is reached (-1: none) */
  told: z.number().int().min(-1).max(1_000_000),
  /** when it last changed (retention keeps the newest) */
  at: z.number().nonnegative(),
});
export type ParentBudget = ReturnType<typeof ParentBudgetSchema.parse>;

const BudgetFileSchema = z.object({ v: z.literal(1), parents: z.record(z.string().min(1).max(200), ParentBudgetSchema) });

export function budgetPath(storeDir: string): string {
  return join(storeDir, "budgets.json");
}

/** The saved state of each parent; a missing file is none, a bad one is set aside with a warning. */
export async function readBudgets(storeDir: string): Promise<{ parents: Map<string, ParentBudget>; warnings: string[] }> {
  const path = budgetPath(storeDir);
  try {
    const parsed = BudgetFileSchema.safeParse(JSON.parse(await readRegularFile(path, MAX_BUDGET_FILE_BYTES)));
    if (parsed.success) return { parents: new Map(Object.entries(parsed.data.parents)), warnings: [] };
    throw new Error("it is not a budget file this version understands");
  } catch (error) {
    if (errorCode(error) === "ENOENT") return { parents: new Map(), warnings: [] };
    const aside = await freeAsideName(path).catch(() => undefined);
    if (aside) await fs.rename(path, aside).catch(() => {});
    return {
      parents: new Map(),
      warnings: [
        `offshoot: ${path} could not be used (${(error as Error).message})${aside ? `; set aside as ${aside}` : ""}; session budgets start from the options`,
      ],
    };
  }
}

/** Writes every parent's state (the newest BUDGET_PARENTS_KEPT), merged with what another process wrote meanwhile (newest wins). */
export async function writeBudgets(storeDir: string, ours: ReadonlyMap<string, ParentBudget>): Promise<void> {
  const onDisk = await readBudgets(storeDir).catch(() => ({ parents: new Map<string, ParentBudget>() }));
  const merged = new Map(onDisk.parents);
  for (const [parent, state] of ours) if ((merged.get(parent)?.at ?? -1) <= state.at) merged.set(parent, state);
  const kept = [...merged].sort((a, b) => b[1].at - a[1].at).slice(0, BUDGET_PARENTS_KEPT);
  await writeFileAtomically(budgetPath(storeDir), JSON.stringify({ v: 1, parents: Object.fromEntries(kept) }));
}
