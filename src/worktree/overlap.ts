// Which ended worktree tasks of one parent changed the same files: flagged before anyone takes
// them (the list, the notice, background_output, the TUI). Pure. Each task's changed paths were
// cached when its run was committed (worktree.ts commitRun: `changes.files`, and `changes.paths`
// when there were more than the summary names), so this reads no git and no history: its cost is
// the paths of the parent's tasks that still hold a worktree.

import { isOpen } from "../task-state.js";

/** What the overlap check reads of a task (BackgroundTask has it). */
export interface OverlapTask {
  id: string;
  status: string;
  worktree?: {
    removed?: string;
    takenAt?: number;
    changes?: { files: readonly string[]; fileCount: number; paths?: readonly string[] };
  };
}

export interface Overlap {
  /** the other task */
  taskId: string;
  /** the files both changed */
  files: string[];
}

/** How many shared files a line names. */
const FILES_SHOWN = 5;

/** The changed paths of an ended task whose changes are still waiting on its branch (undefined otherwise). */
function pendingPaths(task: OverlapTask): readonly string[] | undefined {
  const info = task.worktree;
  if (!info || info.removed || info.takenAt !== undefined || !info.changes || isOpen(task.status)) return undefined;
  return info.changes.paths ?? info.changes.files;
}

/** The other ended, untaken worktree tasks among `siblings` that changed a file `task` changed. */
export function overlapsOf(task: OverlapTask, siblings: readonly OverlapTask[]): Overlap[] {
  const mine = pendingPaths(task);
  if (!mine?.length) return [];
  const set = new Set(mine);
  const out: Overlap[] = [];
  for (const other of siblings) {
    if (other.id === task.id) continue;
    const theirs = pendingPaths(other);
    if (!theirs) continue;
    const files = theirs.filter((path) => set.has(path));
    if (files.length) out.push({ taskId: other.id, files });
  }
  return out;
}

/** "bg_x on src/a.ts; bg_y on b.ts, c.ts" (empty without overlaps). */
export function overlapText(overlaps: readonly Overlap[]): string {
  return overlaps
    .map(
      ({ taskId, files }) =>
        `${taskId} on ${files.slice(0, FILES_SHOWN).join(", ")}${files.length > FILES_SHOWN ? `, … ${files.length - FILES_SHOWN} more` : ""}`,
    )
    .join("; ");
}
