// Keeping the TUI's overlap flags true: after a run of a worktree task settles, and after a take or
// a discard, the overlap line of each of the parent's tasks is recomputed (worktree/overlap.ts:
// cached paths, no git); a task whose line changed records it (task/step.ts `overlap`) and is
// published again, but for `changed` itself, whose own step publishes it next.

import { overlapText, overlapsOf } from "../../worktree/overlap.js";
import type { TaskEntry } from "../task/registry.js";
import type { Dispatch } from "../task/runner.js";
import type { BackgroundTask } from "../../task-record.js";

export function refreshOverlaps(host: Dispatch, entries: readonly TaskEntry[], changed?: BackgroundTask): void {
  const tasks = entries.map((e) => e.task);
  for (const entry of entries) {
    if (!entry.task.worktree) continue;
    void host.dispatch(entry, { kind: "overlap", text: overlapText(overlapsOf(entry.task, tasks)), quiet: entry.task === changed });
  }
}
