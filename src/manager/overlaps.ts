// Keeping the TUI's overlap flags true: after a run of a worktree task settles, and after a take or
// a discard, the overlap line of each of the parent's tasks is recomputed (worktree/overlap.ts:
// cached paths, no git) and the tasks whose line changed are published again.

import type { Client } from "../host/client.js";
import { overlapText, overlapsOf } from "../worktree/overlap.js";
import { setOverlapNote } from "./overlap-notes.js";
import { publishTaskState } from "./publish.js";
import type { BackgroundTask } from "./types.js";

export function refreshOverlaps(host: { readonly client: Client }, tasks: readonly BackgroundTask[], publishing?: BackgroundTask): void {
  for (const task of tasks) {
    if (!task.worktree) continue;
    const changed = setOverlapNote(task, overlapText(overlapsOf(task, tasks)));
    if (changed && task !== publishing) publishTaskState(host.client, task);
  }
}
