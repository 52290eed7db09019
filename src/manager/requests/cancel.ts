// Cancelling tasks of the caller: each child is aborted and its task ends as `cancelled`, with one
// notice and no wake for it (the parent asked for it; nothing new to wake it for).

import { call } from "../../host/client.js";
import { abortSession } from "../../host/session.js";
import { CANCELLED_BY_PARENT } from "../task/completion.js";
import { sessionDirectory } from "../../worktree/hub.js";
import { type BackgroundTask, isOpen } from "../../task-record.js";
import type { DiscardHost } from "../../worktree/discard.js";
import type { RequestsHost } from "./host.js";

/** What a cancel uses of the room's host: the client (the abort), the task's entry and its one way to change, the end of a run. */
type CancelHost = Pick<RequestsHost, "client" | "holdRequests" | "entryOf" | "dispatch" | "finish"> & Partial<Pick<RequestsHost, "remote">>;

export async function cancelTasks(
  manager: CancelHost,
  tasks: BackgroundTask[],
  reason = CANCELLED_BY_PARENT,
): Promise<{ cancelled: BackgroundTask[]; failed: string[]; notes: string[] }> {
  const cancelled: BackgroundTask[] = [];
  const failed: string[] = [];
  const notes: string[] = [];
  for (const task of tasks) {
    const entry = manager.entryOf(task);
    if (!entry || !isOpen(task.status)) continue;
    if (task.remote && manager.remote) {
      // a remote task's run ends here once the remote says so: the cancel is sent there (or kept until it answers)
      await manager.dispatch(entry, { kind: "cancel-asked" });
      try {
        notes.push(`task ${task.id}: ${await manager.remote.requestCancel(entry, reason)}`);
        cancelled.push(task);
      } catch (error) {
        await manager.dispatch(entry, { kind: "cancel-failed" });
        failed.push(`${task.id}: ${(error as Error).message}`);
      }
      continue;
    }
    // Recorded before the abort: its idle event may end the task before the abort call returns (the
    // step writes at once; the abort does not wait for its save, which tells nobody). The child's
    // requests wait from now until the abort and the save are done (step-gate.ts). A queued task may
    // have no child yet: then there is nothing to abort, and none is created.
    const asked = manager.dispatch(entry, { kind: "cancel-asked" });
    const abort = Promise.all([
      asked,
      task.sessionID ? call(`aborting task ${task.id}`, abortSession(manager.client, task.sessionID, sessionDirectory(task.sessionID))) : undefined,
    ]);
    try {
      await manager.holdRequests(task.sessionID, abort);
      await manager.finish(task, { status: "cancelled", error: reason });
      cancelled.push(task);
    } catch (error) {
      await manager.dispatch(entry, { kind: "cancel-failed" });
      failed.push(`${task.id}: ${(error as Error).message}`);
    }
  }
  return { cancelled, failed, notes };
}

/**
 * What a discard (../worktree/discard.ts) takes, from the manager: this cancel, then the record of
 * the removal (task/step.ts `worktree-removed`: saved, the overlap flags of the parent's other tasks
 * refreshed, as a discarded task overlaps nothing any more, and published).
 */
export function discardHost(manager: CancelHost): DiscardHost {
  return {
    cancel: async (task) => (await cancelTasks(manager, [task])).failed,
    record: async (task) => {
      const entry = manager.entryOf(task);
      if (entry) await manager.dispatch(entry, { kind: "worktree-removed", why: "discarded" });
    },
  };
}
