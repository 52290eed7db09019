// Discarding a worktree task's worktree and branch (background_cancel discard, the TUI's /tasks
// action): a queued or running task is cancelled first (a paused one waits for a person: refused), then both are removed and the task records it. The
// cancel and the record are the caller's (the manager builds the host: manager/cancel.ts
// discardHost); nothing here imports the manager.

import { type BackgroundTask, isOpen, meaningOf } from "../task-record.js";
import { discardWorktree } from "./lifecycle.js";
import type { Outcome } from "../task-state.js";

/** What a discard takes from its caller. */
export interface DiscardHost {
  /** Cancels a task that has not ended; the reasons it could not (none when it was cancelled). */
  cancel(task: BackgroundTask): Promise<string[]>;
  /** Records that its worktree and branch are gone: saved, and published (the TUI stops showing the branch). */
  record(task: BackgroundTask): Promise<void>;
}

/** Discards the task's worktree and branch: what it did, or why not (task-state.ts Outcome). */
export async function discardTask(manager: DiscardHost, task: BackgroundTask): Promise<Outcome> {
  const info = task.worktree;
  if (!info) return { error: `task ${task.id} has no worktree (it ran in the shared checkout); nothing to discard.` };
  if (info.removed) return { ok: `Task ${task.id}'s worktree and branch ${info.branch} were already removed (${info.removed}).` };
  if (meaningOf(task.status).waitsForPerson)
    return {
      error: `task ${task.id} is ${task.status}: its run has not ended, it waits for a person. Cancel it first (background_cancel({ task_id: "${task.id}" })), then discard it. Nothing was removed.`,
    };
  if (isOpen(task.status)) {
    const failed = await manager.cancel(task);
    if (failed.length) return { error: `could not cancel task ${task.id} before discarding it: ${failed.join("; ")}. Nothing was removed.` };
  }
  if (task.worktree?.removed) return { ok: `Task ${task.id} ended with no changes; its worktree and branch ${info.branch} were removed.` };
  // (a directory freed once its run was committed is gone already: only the branch is left to delete)
  const freed = task.worktree?.freedAt !== undefined;
  try {
    await discardWorktree(task);
  } catch (error) {
    return {
      error: `removing the ${freed ? "branch" : "worktree"} of task ${task.id} failed: ${(error as Error).message}. Remove it with: ${freed ? "" : `git worktree remove --force ${info.path} && `}git branch -D ${info.branch}`,
    };
  }
  await manager.record(task);
  return {
    ok: freed
      ? `Discarded task ${task.id}: its branch ${info.branch} was removed (its worktree directory had been freed when its run was committed).`
      : `Discarded task ${task.id}: its worktree ${info.path} and branch ${info.branch} were removed.`,
  };
}
