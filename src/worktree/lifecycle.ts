// The worktree rules applied to the manager's tasks: a worktree task's child is registered with the
// hub (its events reach the manager, its requests go to its instance), each ended run is committed,
// a task whose branch holds nothing loses its worktree and branch, a discard or a take removes them, and
// at start-up a take cut short is rolled back, the tasks' worktrees are hosted again and orphans are swept.

import { join } from "node:path";
import type { SessionMessage } from "../fork/types.js";
import type { Event } from "../host/types.js";
import { type Client, log } from "../host/client.js";
import { type BackgroundTask, type WorktreeInfo, isMoving, meaningOf } from "../task-record.js";
import { forgetSession, hostWorktree, setSessionDirectory, unhostWorktree } from "./hub.js";
import { checkoutSpellings } from "./paths.js";
import { recoverTakes } from "./take.js";
import { type RunCommit, branchCommit, commitRun, configEntries, freeWorktree, guardConfig, hasDirectory, isSandboxed, removeWorktree } from "./worktree.js";
import { sweepOrphanWorktrees } from "./sweep.js";
import { pushBranch } from "./remote.js";
import { runGit } from "./git.js";
import { sandboxProbe } from "./sandbox/probe.js";
import { privatePaths } from "./sandbox/plan.js";
import { chooseSandbox, layoutOf, sweepTaskCaches, taskCachesHome, writeSandboxFiles } from "./sandbox/prepare.js";
import { closeTaskNetwork, sweepSocketDirs } from "./sandbox/network.js";
import type { PluginOptions } from "../options.js";

/** The options a worktree's sandbox is made with. */
export type SandboxOptions = Pick<PluginOptions, "sandboxWritable" | "sandboxNetwork" | "sandboxPassEnv">;

/** What hosting a worktree task takes from the manager: its event hook and which sessions are its children. */
export interface WorktreeHost {
  handleEvent(event: Event): Promise<void>;
  beforeModelRequest(messages: readonly SessionMessage[]): Promise<void>;
  isChildSession(sessionID: string): boolean;
  /** the project's directory as OpenCode names it (the parent's conversation spells the checkout so) */
  readonly project?: { directory: string } | undefined;
  /** the options its sandboxes are made with (the hosts the child is told of) */
  readonly options: SandboxOptions;
}

/** The hosts a task's commands may reach: the option's and the task's own. */
export function taskHosts(options: Pick<PluginOptions, "sandboxNetwork">, info: Pick<WorktreeInfo, "network">): string[] {
  return [...new Set([...options.sandboxNetwork, ...(info.network ?? [])])];
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
  // (a freed directory stays hosted: OpenCode publishes its child session's events, the TUI's take and
  // discard requests among them, on that directory's instance, which outlives the directory; a remote
  // task's worktree is on the remote: nothing here to host)
  if (!info || info.removed || task.remote) return;
  hostWorktree(info.directory, {
    forward: (event) => manager.handleEvent(event),
    beforeModelRequest: (messages) => manager.beforeModelRequest(messages),
    isChild: (id) => manager.isChildSession(id),
    active: () => isMoving(task.status),
    checkouts: checkoutSpellings(info, manager.project?.directory),
    worktree: info.path,
    branch: info.branch,
    sandbox: isSandboxed(info)
      ? {
          enter: privatePaths(info.sandboxDir).enter,
          tmp: privatePaths(info.sandboxDir).tmp,
          privateDir: info.sandboxDir,
          caches: taskCachesHome(),
          hosts: taskHosts(manager.options, info),
          passEnv: manager.options.sandboxPassEnv,
        }
      : undefined,
    config: configEntries(info),
  });
  if (task.sessionID) setSessionDirectory(task.sessionID, info.directory);
}

export function unhostTask(task: BackgroundTask): void {
  if (!task.worktree) return;
  unhostWorktree(task.worktree.directory);
  if (task.sessionID) forgetSession(task.sessionID);
}

/**
 * What committing a run found, for the caller to record on the task (the manager: task/step.ts
 * `settled`): the branch's head and summary, and whether the worktree and branch went (no change) or
 * only the directory (`freedAt`: the branch holds the run).
 */
export type WrapUpOutcome =
  | {
      committed: RunCommit;
      removed?: "no changes";
      freedAt?: number;
      /** a task a remote parent launched: its branch pushed to the shared git remote (the head), or why not */
      pushed?: { head: string } | { error: string };
    }
  | { failed: string }
  | { skipped: true };

/**
 * A run ended: its changes are committed on the task's branch, then its worktree directory (and
 * sandbox directory) goes and the branch stays: a take, a diff, the overlaps and a discard read the
 * branch, and a resume makes the directory again from it. A branch with no change at all loses its
 * worktree and branch. A run cut short (interrupted: OpenCode stopped) keeps its directory: it is
 * continued in place. Never throws: a failure is returned for the task's error (the worktree is kept,
 * nothing is lost). Changes nothing of the task: the caller records the outcome.
 */
export async function wrapUpRun(manager: { readonly client: Client }, task: BackgroundTask, now: () => number = Date.now): Promise<WrapUpOutcome> {
  const info = task.worktree;
  if (!info || info.removed) return { skipped: true };
  if (task.remote) return wrapUpRemoteRun(manager, task, info, now);
  const outcome = await commitAndFree(manager, task, info, now);
  return task.relay ? pushRun(manager, task, info, outcome) : outcome;
}

async function commitAndFree(manager: { readonly client: Client }, task: BackgroundTask, info: WorktreeInfo, now: () => number): Promise<WrapUpOutcome> {
  try {
    // a directory already gone (freed, and a kill came before the record said so): the branch holds the run
    if (!(await hasDirectory(info))) return { committed: await branchCommit(info), freedAt: info.freedAt ?? now() };
    const probe = isSandboxed(info) ? await sandboxProbe() : undefined;
    const committed = await commitRun(info, task.description, probe?.kind === "ready" && probe.tool === info.containment ? probe.path : undefined);
    if (meaningOf(task.status).cutShort) return { committed };
    if (!committed.changes) {
      await removeWorktree(info);
      return { committed, removed: "no changes" };
    }
    try {
      await freeWorktree(info);
    } catch (error) {
      // (committed: nothing is lost; the directory stays, as before this rule)
      log(manager.client, "warn", `freeing the worktree ${info.path} of task ${task.id} failed: ${(error as Error).message}; it is kept`);
      return { committed };
    }
    return { committed, freedAt: now() };
  } catch (error) {
    const message = `committing its worktree ${info.path} failed: ${(error as Error).message}`;
    log(manager.client, "error", message);
    return { failed: message };
  }
}

/** A task a remote parent launched: the run's branch goes back through the shared git remote (a branch with no change has none to push). */
async function pushRun(manager: { readonly client: Client }, task: BackgroundTask, info: WorktreeInfo, outcome: WrapUpOutcome): Promise<WrapUpOutcome> {
  if (!("committed" in outcome) || outcome.removed || !task.relay) return outcome;
  try {
    return { ...outcome, pushed: { head: await pushBranch(info.repo, task.relay.gitRemote, info.branch) } };
  } catch (error) {
    log(manager.client, "warn", `offshoot: task ${task.id}: ${(error as Error).message}`);
    return { ...outcome, pushed: { error: (error as Error).message } };
  }
}

/**
 * A task that ran on a remote: its run was committed there, and its branch was fetched here and
 * checked before the run ended (../manager/remote/follow.ts). The branch is read as a freed task's:
 * a branch with changes is kept (a take, a diff, a discard read it); one without any, or none at all
 * (the remote's run changed nothing, or its branch was refused), is the same as no change here.
 */
async function wrapUpRemoteRun(manager: { readonly client: Client }, task: BackgroundTask, info: WorktreeInfo, now: () => number): Promise<WrapUpOutcome> {
  try {
    const tip = await runGit(["rev-parse", "--verify", "-q", `refs/heads/${info.branch}^{commit}`], { cwd: info.repo });
    if (tip.code !== 0) {
      if (task.remote?.refused) return { failed: `its branch was refused here: ${task.remote.refused}` };
      return { committed: { head: info.base, changes: undefined }, removed: "no changes" };
    }
    const committed = await branchCommit(info);
    if (committed.changes) return { committed, freedAt: info.freedAt ?? now() };
    await removeWorktree({ ...info, sandboxDir: undefined });
    return { committed, removed: "no changes" };
  } catch (error) {
    const message = `reading its branch ${info.branch} failed: ${(error as Error).message}`;
    log(manager.client, "error", message);
    return { failed: message };
  }
}

/** A manager's stop: its tasks' proxies close (their sockets go; the next process opens them again). */
export async function releaseWorktrees(tasks: readonly BackgroundTask[]): Promise<void> {
  for (const task of tasks) if (task.worktree?.sandboxDir) await closeTaskNetwork(task.worktree.sandboxDir).catch(() => {});
}

/** Removes an ended task's worktree and branch (background_cancel discard, the /tasks action); the caller records it. */
export async function discardWorktree(task: BackgroundTask): Promise<void> {
  const info = task.worktree;
  if (!info || info.removed) return;
  await removeWorktree(info);
}

/**
 * Start-up, before anything of a task is published (a child's metadata update boots OpenCode's
 * instance of its directory): each of this process's worktree directories that is still there gets
 * the user's config again (guardConfig: whatever a child or its branch left there goes), and a
 * sandboxed one its sandbox's files as this version and these options make them (writeSandboxFiles:
 * the network, the filter, the variables), with its proxy open. The proxies' sockets of dead
 * processes and the tasks' caches unused for a fortnight go. Never throws: a failure is logged, and
 * a sandbox that cannot be renewed refuses its commands (instance.ts).
 */
export async function guardWorktreesAtStartUp(
  manager: { readonly client: Client; readonly options: SandboxOptions },
  tasks: readonly BackgroundTask[],
  isOwn: (task: BackgroundTask) => boolean,
  now: number,
): Promise<void> {
  sweepSocketDirs();
  if (!tasks.some((t) => t.worktree && !t.worktree.removed && isMoving(t.status)) && (await sweepTaskCaches(now).catch(() => false)))
    log(manager.client, "info", "removed the tasks' caches: no launch used them for a fortnight");
  for (const task of tasks) {
    const info = task.worktree;
    if (!info || info.removed || !isOwn(task) || !(await hasDirectory(info))) continue;
    try {
      const config = await guardConfig(info, info.containment === "bwrap");
      // (probed only when a sandboxed directory is there: once per process, cached)
      const probe = isSandboxed(info) ? await sandboxProbe() : undefined;
      if (!isSandboxed(info) || probe?.kind !== "ready" || probe.tool !== info.containment) continue;
      const choice = await chooseSandbox(probe, manager.options, info.network);
      const layout = layoutOf(
        info,
        info.path,
        task.id,
        choice,
        config.map((rel) => join(info.path, rel)),
      );
      await writeSandboxFiles(choice, layout, info.branch);
    } catch (error) {
      log(manager.client, "warn", `renewing the worktree ${info.path} of task ${task.id} failed: ${(error as Error).message}`);
    }
  }
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
    // a take a kill cut short is rolled back first (take.ts): the parent's tree is as before it
    for (const line of await recoverTakes(project.directory)) log(manager.client, "warn", line);
    const { removed, kept, branchesRemoved, branchesKept, tempIndexes, sandboxes } = await sweepOrphanWorktrees({
      projectDir: project.directory,
      projectID: project.id,
      isKnown,
    });
    for (const { path, branchKept } of removed)
      log(
        manager.client,
        "info",
        `removed worktree ${path}: no task names it and it held no uncommitted change${branchKept ? `; its branch ${branchKept} holds commits and was kept` : ""}`,
      );
    for (const path of kept) log(manager.client, "warn", `kept worktree ${path}: no task names it, but it holds uncommitted changes`);
    for (const branch of branchesRemoved)
      log(manager.client, "info", `deleted branch ${branch}: no task names it, no worktree holds it, and it held no commit of its own`);
    for (const branch of branchesKept)
      log(
        manager.client,
        "warn",
        `kept branch ${branch}: no task names it, but it holds commits nothing else reaches (git log ${branch}; git branch -D ${branch} deletes it)`,
      );
    for (const path of sandboxes) log(manager.client, "info", `removed ${path}: the sandbox directory of a task no longer known`);
    for (const path of tempIndexes) log(manager.client, "info", `removed ${path}: a temporary index a stopped launch or take left behind`);
    // (the line that says the sweep is over, whatever it found: what a reader of the log waits for)
    log(
      manager.client,
      "info",
      `${SWEEP_DONE}: ${removed.length} worktree(s) and ${branchesRemoved.length} branch(es) removed, ${kept.length + branchesKept.length} kept`,
    );
  } catch (error) {
    log(manager.client, "warn", `${SWEEP_DONE}, and failed: ${(error as Error).message}`);
  }
}

/** How the log line that ends the start-up sweep begins. */
export const SWEEP_DONE = "offshoot: start-up sweep of task worktrees done";
