// What the notice, background_output, background_list and the launch say about a worktree task:
// where it works, what it changed, and the exact commands to inspect, take or discard it. Pure.

import type { WorktreeInfo } from "../task-record.js";
import type { PublishedWorktree } from "../task-state.js";

function short(commit: string): string {
  return commit.slice(0, 12);
}

/** One line: "3 files changed, +10 -2 (a.ts, b.ts, …)". */
export function changesLine(changes: NonNullable<WorktreeInfo["changes"]>): string {
  const more = changes.fileCount - changes.files.length;
  return `${changes.fileCount} file${changes.fileCount === 1 ? "" : "s"} changed, +${changes.insertions} -${changes.deletions} (${changes.files.join(", ")}${more > 0 ? `, … ${more} more` : ""})`;
}

/** The lines about a task's worktree (none for a task in the shared checkout). */
export function worktreeLines(taskId: string, info: WorktreeInfo | undefined, state: "active" | "ended"): string[] {
  if (!info) return [];
  if (info.removed === "no changes") return [`worktree: the task changed nothing; its worktree and branch ${info.branch} were removed`];
  if (info.removed === "discarded") return [`worktree: discarded; its worktree and branch ${info.branch} were removed`];
  const lines = [
    `worktree: ${info.directory} (branch ${info.branch}, from ${short(info.base)}${info.base === info.parentHead ? ", your HEAD then" : ", your HEAD then plus your uncommitted changes"})`,
  ];
  if (state === "active") return lines;
  if (!info.changes) return [...lines, "changes: none yet"];
  const range = `${short(info.base)}..${info.branch}`;
  lines.push(`changes: ${changesLine(info.changes)}`);
  lines.push(`inspect: git diff ${short(info.base)} ${info.branch}`);
  lines.push(`take: git cherry-pick ${range}${info.base === info.parentHead ? ` (or git merge ${info.branch})` : ""}`);
  lines.push(`discard: background_cancel({ task_id: "${taskId}", discard: true }) removes the worktree and the branch`);
  return lines;
}

/** What the TUI shows of a worktree (the child session's metadata). */
export function publishedWorktree(info: WorktreeInfo): PublishedWorktree {
  const c = info.changes;
  return {
    branch: info.branch,
    directory: info.directory,
    ...(c ? { changes: `${c.fileCount} file${c.fileCount === 1 ? "" : "s"} +${c.insertions} -${c.deletions}` } : {}),
    ...(info.removed ? { removed: info.removed } : {}),
  };
}
