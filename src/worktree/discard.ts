// Discarding a worktree task's worktree and branch (background_cancel discard, the TUI's /tasks
// action): a queued or running task is cancelled first (a paused one waits for a person: refused), then both are removed and the task records it. The
// cancel and the record are the caller's (the manager builds the host: manager/cancel.ts
// discardHost); nothing here imports the manager.

import { type BackgroundTask, isOpen, meaningOf } from "../task-record.js";
import { discardWorktree } from "./lifecycle.js";
import type { Outcome } from "../task-state.js";
import { DISCARD } from "./discard.txt.js";

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
  if (!info) return { error: DISCARD.noWorktree(task.id) };
  if (info.removed) return { ok: DISCARD.removedAlready(task.id, info.branch, info.removed) };
  if (meaningOf(task.status).waitsForPerson) return { error: DISCARD.waitsForPerson(task.id, task.status) };
  if (isOpen(task.status)) {
    const failed = await manager.cancel(task);
    if (failed.length) return { error: DISCARD.cancelFailed(task.id, failed) };
  }
  if (task.worktree?.removed) return { ok: DISCARD.endedWithoutChanges(task.id, info.branch) };
  // (a directory freed once its run was committed is gone already: only the branch is left to delete)
  const where = { branch: info.branch, path: info.path, freed: task.worktree?.freedAt !== undefined };
  try {
    await discardWorktree(task);
  } catch (error) {
    return { error: DISCARD.removeFailed(task.id, where, (error as Error).message) };
  }
  await manager.record(task);
  return { ok: DISCARD.discarded(task.id, where) };
}
