// Taking an ended worktree task's changes (background_take, the TUI's /tasks action): its branch's
// changes since `base` are applied to the parent's working tree as uncommitted changes, with a
// 3-way merge (worktree/take.ts does the git); on a conflict nothing in the parent changes and the
// reply names the files and what to do; a branch carrying what a take never writes (a .git path, a
// path through a symlinked directory of the checkout) is refused the same way, naming why; every
// symlink a take writes is named with its target. Then its worktree and branch are removed (unless `keep`),
// the task records it, and the overlap flags of the parent's other tasks are updated.

import { log } from "../../host/client.js";
import { applyTake, planTake } from "../../worktree/take.js";
import { removeWorktree } from "../../worktree/worktree.js";
import { KeyedSerialQueue } from "../../serial-queue.js";
import type { TaskInput } from "../task/step.js";
import { type BackgroundTask, isOpen, meaningOf } from "../../task-record.js";
import type { Outcome } from "../../task-state.js";
import type { RequestsHost } from "./host.js";

/** What a take uses of the room's host: the logger, the task's entry and its one way to change (which saves, refreshes the overlaps, publishes). */
type TakeHost = Pick<RequestsHost, "client" | "entryOf" | "dispatch">;

/** How many paths a reply names. */
const REPLY_FILES = 20;

/**
 * Takes run one at a time per repository (two takes in one turn would each snapshot the same tree).
 * Module state, not a manager's: the parent's working tree is one per repository in this process,
 * whichever manager asks for a take in it.
 */
const takes = new KeyedSerialQueue();

function listed(paths: readonly string[]): string {
  const shown = paths.slice(0, REPLY_FILES).map((p) => `- ${p}`);
  if (paths.length > REPLY_FILES) shown.push(`- … ${paths.length - REPLY_FILES} more`);
  return shown.join("\n");
}

/** The reply for a task whose changes cannot be taken, or undefined when it can. */
function refusal(task: BackgroundTask): Outcome | undefined {
  const info = task.worktree;
  if (!info) return { error: `task ${task.id} has no worktree (it ran in your checkout): its changes are in your working tree already.` };
  if (info.removed === "taken") return { ok: `Task ${task.id}'s changes were taken already; its worktree and branch ${info.branch} were removed.` };
  if (info.removed) return { error: `task ${task.id}'s worktree and branch ${info.branch} were removed (${info.removed}); there is nothing to take.` };
  if (meaningOf(task.status).waitsForPerson)
    return {
      error: `task ${task.id} is ${task.status}: its run has not ended, it waits for a person (in the TUI, /tasks: raise the budget and Continue it), or cancel it (background_cancel), then take it. Nothing in your checkout changed.`,
    };
  if (isOpen(task.status))
    return {
      error: `task ${task.id} is still ${task.status}. Wait for it (background_output({ task_id: "${task.id}", block: true })) or cancel it (background_cancel), then take it.`,
    };
  if (!info.changes) return { ok: `Task ${task.id} changed nothing on its branch ${info.branch}; there is nothing to take.` };
  return undefined;
}

/** Takes the task's changes: what it did, or why not (task-state.ts Outcome). Never throws. */
export function takeTask(host: TakeHost, task: BackgroundTask, options: { keep?: boolean } = {}): Promise<Outcome> {
  const refused = refusal(task);
  if (refused) return Promise.resolve(refused);
  return takes.post(task.worktree!.repo, () => take(host, task, options));
}

async function take(host: TakeHost, task: BackgroundTask, options: { keep?: boolean }): Promise<Outcome> {
  const refused = refusal(task); // (checked again: it may have changed while it waited its turn)
  if (refused) return refused;
  const info = task.worktree!;
  let plan;
  try {
    plan = await planTake(info, task.id);
  } catch (error) {
    return { error: `could not take task ${task.id}: ${(error as Error).message}. Nothing in your checkout changed.` };
  }
  if (plan.kind === "refused") {
    log(host.client, "warn", `offshoot: take of task ${task.id} refused: its branch carries ${plan.files.join(", ")}`);
    const error = [
      `task ${task.id}'s branch ${info.branch} carries ${plan.files.length === 1 ? "a path" : `${plan.files.length} paths`} a take never writes. Nothing in your checkout changed.`,
      listed(plan.reasons),
      `What to do (the task's ${info.freedAt !== undefined ? "branch is" : "worktree and branch are"} kept):`,
      `- see what it holds: git diff --stat ${info.base.slice(0, 12)} ${info.branch} (a branch made by the task is not to be trusted: do not merge it),`,
      `- resume the task (background_task({ resume: "${task.id}", … })) to redo its change without those paths, then take it,`,
      `- or discard it: background_cancel({ task_id: "${task.id}", discard: true }).`,
    ].join("\n");
    return { error };
  }
  if (plan.kind === "conflict") {
    log(host.client, "info", `offshoot: take of task ${task.id} refused: conflicts in ${plan.files.join(", ")}`);
    const error = [
      `task ${task.id}'s changes conflict with your working tree in ${plan.files.length} file${plan.files.length === 1 ? "" : "s"}. Nothing in your checkout changed.`,
      listed(plan.reasons.length ? plan.reasons : plan.files),
      `What to do (the task's ${info.freedAt !== undefined ? "branch is" : "worktree and branch are"} kept):`,
      `- see its side: git diff ${info.base.slice(0, 12)} ${info.branch} -- <file>`,
      `- then either commit or stash your own changes to those files and call background_take({ task_id: "${task.id}" }) again (merge them yourself afterwards),`,
      `- or resume the task (background_task({ resume: "${task.id}", … })) to redo its change on top of yours, then take it,`,
      `- or merge it by hand: git merge ${info.branch} (commits onto your branch), or discard it: background_cancel({ task_id: "${task.id}", discard: true }).`,
    ].join("\n");
    return { error };
  }
  const applied = plan.kind === "applied" ? plan.changes : [];
  const links = plan.kind === "applied" ? plan.links : [];
  if (applied.length) {
    try {
      await applyTake(info.repo, task.id, applied);
    } catch (error) {
      return { error: `could not take task ${task.id}: ${(error as Error).message}. Its worktree and branch are kept.` };
    }
  }
  let after: string;
  let record: TaskInput = { kind: "worktree-taken", at: Date.now() };
  const freed = info.freedAt !== undefined;
  if (options.keep) {
    after = freed
      ? `its branch ${info.branch} was kept (keep: true; its worktree directory was freed when its run was committed: git log ${info.base.slice(0, 12)}..${info.branch})`
      : `its worktree ${info.path} and branch ${info.branch} were kept (keep: true)`;
  } else {
    try {
      await removeWorktree(info);
      record = { kind: "worktree-removed", why: "taken" };
      after = freed ? `its branch ${info.branch} was removed (its worktree directory had been freed)` : `its worktree and branch ${info.branch} were removed`;
    } catch (error) {
      after = `removing its ${freed ? "branch" : "worktree"} failed (${(error as Error).message}); remove it with: ${freed ? "" : `git worktree remove --force ${info.path} && `}git branch -D ${info.branch}`;
    }
  }
  const entry = host.entryOf(task);
  if (entry) await host.dispatch(entry, record);
  log(host.client, "info", `offshoot: took task ${task.id} (${applied.length} paths)`);
  const head = applied.length
    ? `Took task ${task.id}: ${applied.length} file${applied.length === 1 ? "" : "s"} changed in your working tree, not staged or committed; ${after}.\n${listed(applied.map((c) => `${c.path}${!c.before ? " (new, untracked)" : !c.after ? " (deleted)" : ""}`))}\nReview with git status and git diff.`
    : `Took task ${task.id}: your working tree has its changes already, nothing was written; ${after}.`;
  // a link points wherever the task chose: each is named with its target, whatever the list above left out
  const linkLines = links.map((l) => `${l.path} -> ${l.target}${l.outside ? " (outside your checkout)" : ""}`);
  return { ok: linkLines.length ? `${head}\nSymlinks it wrote (a link points where the task chose; check each):\n${listed(linkLines)}` : head };
}
