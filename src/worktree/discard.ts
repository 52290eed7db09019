// Discarding a worktree task's worktree and branch (background_cancel discard, the TUI's /tasks
// action): a running task is cancelled first, then both are removed and the task records it.

import { type CancelHost, cancelTasks } from "../manager/cancel.js";
import { publishTaskState } from "../manager/publish.js";
import { type BackgroundTask, hasOpenRun } from "../manager/types.js";
import { discardWorktree } from "./lifecycle.js";

/** What a discard takes from the manager: a cancel, and the save of the task file. */
export interface DiscardHost extends CancelHost {
  save(): Promise<void>;
}

export async function discardTask(manager: DiscardHost, task: BackgroundTask): Promise<string> {
  const info = task.worktree;
  if (!info) return `Error: task ${task.id} has no worktree (it ran in the shared checkout); nothing to discard.`;
  if (info.removed) return `Task ${task.id}'s worktree and branch ${info.branch} were already removed (${info.removed}).`;
  if (hasOpenRun(task.status)) {
    const { failed } = await cancelTasks(manager, [task]);
    if (failed.length) return `Error: could not cancel task ${task.id} before discarding it: ${failed.join("; ")}. Nothing was removed.`;
  }
  if (info.removed) return `Task ${task.id} ended with no changes; its worktree and branch ${info.branch} were removed.`;
  try {
    await discardWorktree(task);
  } catch (error) {
    return `Error: removing the worktree ${info.path} of task ${task.id} failed: ${(error as Error).message}. Remove it with: git worktree remove --force ${info.path} && git branch -D ${info.branch}`;
  }
  await manager.save();
  publishTaskState(manager.client, task); // the TUI stops showing the branch
  return `Discarded task ${task.id}: its worktree ${info.path} and branch ${info.branch} were removed.`;
}
