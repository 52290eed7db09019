// What the notice, background_output, background_list and the launch say about a worktree task:
// where it works, what it changed, and the exact calls to inspect, take or discard it, and
// which other tasks changed the same files. Pure.

import type { RemoteInfo, WorktreeInfo } from "../task-record.js";
import type { PublishedWorktree } from "../task-state.js";
import { type OverlapTask, overlapsOf, overlapText } from "./overlap.js";
import { readyLines } from "./ready.txt.js";

function short(commit: string): string {
  return commit.slice(0, 12);
}

/** How a worktree child was contained, in a few words (the list, the notice, background_output; the TUI's short form: `containmentShort`). */
export function containmentText(containment: WorktreeInfo["containment"]): string {
  const inside =
    "its commands could write only its worktree (not OpenCode's config there), its own git state, its temp directory and the tasks' caches; they reached no network but the hosts a person allowed, and no unix socket of yours";
  if (containment === "bwrap") return `bubblewrap sandbox (${inside})`;
  if (containment === "sandbox-exec") return `sandbox-exec sandbox (${inside.replace("no network but the hosts a person allowed", "no network")})`;
  return "text-level checks only, no OS sandbox (a script it ran could reach your checkout)";
}

/** The TUI's word for it. */
export function containmentShort(containment: WorktreeInfo["containment"]): string {
  return containment === "bwrap" || containment === "sandbox-exec" ? "sandboxed" : "not sandboxed";
}

/** One line: "3 files changed, +10 -2 (a.ts, b.ts, …)". */
export function changesLine(changes: NonNullable<WorktreeInfo["changes"]>): string {
  const more = changes.fileCount - changes.files.length;
  return `${changes.fileCount} file${changes.fileCount === 1 ? "" : "s"} changed, +${changes.insertions} -${changes.deletions} (${changes.files.join(", ")}${more > 0 ? `, … ${more} more` : ""})`;
}

/**
 * The lines about a task's worktree (none for a task in the shared checkout); `siblings`: the parent's
 * tasks, for the overlap line; `remote`: a task that runs on a remote (its worktree is there, its
 * branch comes back here).
 */
export function worktreeLines(
  taskId: string,
  info: WorktreeInfo | undefined,
  state: "active" | "ended",
  siblings: readonly OverlapTask[] = [],
  remote?: Pick<RemoteInfo, "name" | "directory" | "refused">,
): string[] {
  if (!info) return [];
  if (remote) return remoteWorktreeLines(taskId, info, state, siblings, remote);
  if (info.removed === "no changes") return [`worktree: the task changed nothing; its worktree and branch ${info.branch} were removed`];
  if (info.removed === "discarded") return [`worktree: discarded; its worktree and branch ${info.branch} were removed`];
  if (info.removed === "taken") return [`worktree: its changes were taken into your working tree; its worktree and branch ${info.branch} were removed`];
  const from = `from ${short(info.base)}${info.base === info.parentHead ? ", your HEAD then" : ", your HEAD then plus your uncommitted changes"}`;
  const freed = info.freedAt !== undefined && state === "ended";
  const lines = [
    freed
      ? `worktree: its directory was freed once its run was committed; the branch ${info.branch} (${from}) holds its work: git log ${short(info.base)}..${info.branch}`
      : `worktree: ${info.directory} (branch ${info.branch}, ${from})`,
    `containment: ${containmentText(info.containment)}`,
    ...readyLines(info.ready),
  ];
  if (state === "active") return lines;
  if (!info.changes) return [...lines, "changes: none yet"];
  lines.push(`changes: ${changesLine(info.changes)}`);
  if (info.changes.runs?.length)
    lines.push(
      `runs on its own: ${info.changes.runs.join("; ")} (files that run in your checkout without being asked: only a person takes this branch, in /tasks)`,
    );
  if (info.takenAt !== undefined)
    lines.push(`taken: its changes are in your working tree already (the ${freed ? "branch was" : "worktree and branch were"} kept)`);
  const overlaps = overlapText(overlapsOf({ id: taskId, status: "completed", worktree: info }, siblings));
  if (overlaps) lines.push(`overlaps ${overlaps}: take one, then the other (a conflict there is likely)`);
  lines.push(`inspect: git diff ${short(info.base)} ${info.branch}`);
  const what = freed ? "the branch" : "the worktree and branch";
  lines.push(`take: background_take({ task_id: "${taskId}" }) applies them to your working tree as uncommitted changes (3-way) and removes ${what}`);
  lines.push(`discard: background_cancel({ task_id: "${taskId}", discard: true }) removes ${what}`);
  if (freed) lines.push(`resume: background_task with its task_id makes its worktree again from the branch at ${info.directory}`);
  return lines;
}

/** What the TUI shows of a worktree (the child session's metadata). */
export function publishedWorktree(info: WorktreeInfo, overlaps = ""): PublishedWorktree {
  const c = info.changes;
  return {
    ...(overlaps ? { overlaps } : {}),
    branch: info.branch,
    directory: info.directory,
    containment: containmentShort(info.containment),
    ...(c ? { changes: `${c.fileCount} file${c.fileCount === 1 ? "" : "s"} +${c.insertions} -${c.deletions}` } : {}),
    ...(c?.runs?.length ? { runs: [...c.runs] } : {}),
    ...(info.removed ? { removed: info.removed } : {}),
    ...(info.freedAt !== undefined && !info.removed ? { freed: true } : {}),
    ...(info.head ? { head: info.head } : {}),
    ...(info.pushed ? { pushed: info.pushed } : {}),
    ...(info.pushError ? { pushError: info.pushError } : {}),
    ...(info.wrapped !== undefined ? { wrapped: info.wrapped } : {}),
  };
}

/** The same for a task that runs on a remote: where there, then (ended) its branch here, as a freed task's. */
function remoteWorktreeLines(
  taskId: string,
  info: WorktreeInfo,
  state: "active" | "ended",
  siblings: readonly OverlapTask[],
  remote: Pick<RemoteInfo, "name" | "directory" | "refused">,
): string[] {
  const on = `remote: it runs on "${remote.name}" (its worktree there: ${remote.directory})`;
  const from = `from ${short(info.base)}${info.base === info.parentHead ? ", your HEAD then" : ", your HEAD then plus your uncommitted changes"}`;
  if (state === "active")
    return [
      on,
      `worktree: branch ${info.branch} (${from}), brought back here through the shared git remote when each run is committed`,
      `containment: ${containmentText(info.containment)}`,
    ];
  if (remote.refused) return [on, `worktree: its branch was refused here (${remote.refused}); nothing of it was brought in`];
  const local = worktreeLines(taskId, { ...info, freedAt: info.freedAt ?? 0 }, "ended", siblings);
  return [
    on,
    ...local
      .map((line) =>
        line.startsWith("worktree: its directory was freed")
          ? `worktree: its run was committed there and its branch ${info.branch} (${from}) brought back here: git log ${short(info.base)}..${info.branch}`
          : line,
      )
      .map((line) => (line.startsWith("resume: ") ? `resume: background_task with its task_id runs it again on "${remote.name}", in its worktree there` : line))
      .map((line) => (line.startsWith("discard: ") ? `${line}, and everything it left on "${remote.name}" and the shared git remote` : line))
      .map((line) => (line.startsWith("take: ") ? `${line}, and everything it left on "${remote.name}" and the shared git remote` : line)),
  ];
}
