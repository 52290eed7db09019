// Cancelling tasks of the caller: each child is aborted and its task ends as `cancelled`, with one
// notice and no wake for it (the parent asked for it; nothing new to wake it for).

import { type Client, call } from "../host/client.js";
import { abortSession } from "../host/session.js";
import type { Ending } from "./completion.js";
import { sessionDirectory } from "../worktree/hub.js";
import { type BackgroundTask, hasOpenRun } from "./types.js";
import type { DiscardHost } from "../worktree/discard.js";
import { refreshOverlaps } from "./overlaps.js";
import { publishTaskState } from "./publish.js";

/** What cancelling takes from the manager: the client (the abort) and the end of a task's run. */
export interface CancelHost {
  readonly client: Client;
  finish(task: BackgroundTask, ending: Ending): Promise<void>;
}

export async function cancelTasks(manager: CancelHost, tasks: BackgroundTask[]): Promise<{ cancelled: BackgroundTask[]; failed: string[] }> {
  const cancelled: BackgroundTask[] = [];
  const failed: string[] = [];
  for (const task of tasks) {
    if (!hasOpenRun(task.status)) continue;
    // Set before the abort: its idle event may end the task before the abort call returns.
    task.cancelledByParent = true;
    try {
      // A queued task may have no child yet: then there is nothing to abort, and none is created.
      if (task.sessionID) await call(`aborting task ${task.id}`, abortSession(manager.client, task.sessionID, sessionDirectory(task.sessionID)));
      await manager.finish(task, { status: "cancelled", error: "cancelled by the parent session" });
      cancelled.push(task);
    } catch (error) {
      task.cancelledByParent = undefined;
      failed.push(`${task.id}: ${(error as Error).message}`);
    }
  }
  return { cancelled, failed };
}

/**
 * What a discard (../worktree/discard.ts) takes, from the manager: this cancel, then the save, the
 * overlap flags of the parent's other tasks (a discarded task overlaps nothing any more) and the
 * published state.
 */
export function discardHost(manager: CancelHost & { save(): Promise<void>; tasksOf(parent: string): BackgroundTask[] }): DiscardHost {
  return {
    cancel: async (task) => (await cancelTasks(manager, [task])).failed,
    record: async (task) => {
      await manager.save();
      refreshOverlaps(manager, manager.tasksOf(task.parentSessionID), task);
      publishTaskState(manager.client, task);
    },
  };
}
