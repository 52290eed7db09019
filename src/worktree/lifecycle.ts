// The worktree rules applied to the manager's tasks: a worktree task's child is registered with the
// hub (its events reach the manager, its requests go to its instance), each ended run is committed,
// a task whose branch holds nothing loses its worktree and branch, a discard removes them, and at
// start-up the tasks' worktrees are hosted again and orphans are swept.

import type { Event } from "../host/types.js";
import { type Client, log } from "../host/client.js";
import { type BackgroundTask, isActive } from "../task-record.js";
import { forgetSession, hostWorktree, setSessionDirectory, unhostWorktree } from "./hub.js";
import { commitRun, removeWorktree, sweepOrphanWorktrees } from "./worktree.js";

/** What hosting a worktree task takes from the manager: its event hook and which sessions are its children. */
export interface WorktreeHost {
  handleEvent(event: Event): Promise<void>;
  isChildSession(sessionID: string): boolean;
}

/** What start-up takes besides: the logger, which tasks this process runs, the project, which tasks the store knows. */
export interface WorktreeStartUpHost extends WorktreeHost {
  readonly client: Client;
  get(id: string): BackgroundTask | undefined;
  readonly project: { directory: string; id: string } | undefined;
  readonly store: { parentOf(id: string): string | undefined };
}

/** The manager hears the worktree instance's events for this task, and its requests name its directory. */
export function hostTask(manager: WorktreeHost, task: BackgroundTask): void {
  const info = task.worktree;
  if (!info || info.removed) return;
  hostWorktree(info.directory, {
    forward: (event) => manager.handleEvent(event),
    isChild: (id) => manager.isChildSession(id),
    active: () => isActive(task.status),
  });
  if (task.sessionID) setSessionDirectory(task.sessionID, info.directory);
}

export function unhostTask(task: BackgroundTask): void {
  if (!task.worktree) return;
  unhostWorktree(task.worktree.directory);
  if (task.sessionID) forgetSession(task.sessionID);
}

/**
 * A run ended: its changes are committed on the task's branch. A branch with no change at all loses
 * its worktree and branch, unless the run was interrupted (a resume continues there). Never throws:
 * a failure is recorded in the task's error (the worktree is kept, nothing is lost).
 */
export async function settleRun(manager: { readonly client: Client }, task: BackgroundTask): Promise<void> {
  const info = task.worktree;
  if (!info || info.removed) return;
  try {
    const changed = await commitRun(info, task.description);
    if (!changed && task.status !== "interrupted") {
      await removeWorktree(info);
      info.removed = "no changes";
      unhostTask(task);
    }
  } catch (error) {
    const message = `committing its worktree ${info.path} failed: ${(error as Error).message}`;
    log(manager.client, "error", message);
    task.error = task.error ? `${task.error}; ${message}` : message;
  }
}

/** Removes an ended task's worktree and branch (background_cancel discard, the /tasks action). */
export async function discardWorktree(task: BackgroundTask): Promise<void> {
  const info = task.worktree;
  if (!info || info.removed) return;
  await removeWorktree(info);
  info.removed = "discarded";
  unhostTask(task);
}

/** Start-up: the tasks' worktrees are hosted again; worktrees no task names are removed when clean. */
export async function worktreesAtStartUp(manager: WorktreeStartUpHost, tasks: readonly BackgroundTask[]): Promise<void> {
  for (const task of tasks) if (manager.get(task.id) === task) hostTask(manager, task); // this process's tasks only
  const project = manager.project;
  if (!project) return;
  // a worktree is named after its task: every task the store knows (open, another live process's, or
  // settled in the history) keeps its worktree
  const open = new Set(tasks.map((t) => t.id));
  const isKnown = (id: string) => open.has(id) || manager.store.parentOf(id) !== undefined;
  try {
    const { removed, kept } = await sweepOrphanWorktrees({ projectDir: project.directory, projectID: project.id, isKnown });
    for (const { path, branchKept } of removed)
      log(
        manager.client,
        "info",
        `removed worktree ${path}: no task names it and it held no uncommitted change${branchKept ? `; its branch ${branchKept} holds commits and was kept` : ""}`,
      );
    for (const path of kept) log(manager.client, "warn", `kept worktree ${path}: no task names it, but it holds uncommitted changes`);
  } catch (error) {
    log(manager.client, "warn", `sweeping orphan worktrees failed: ${(error as Error).message}`);
  }
}
