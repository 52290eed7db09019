// Taking an ended worktree task's changes (background_take, the TUI's /tasks action): its branch's
// changes since `base` are applied to the parent's working tree as uncommitted changes, with a
// 3-way merge (worktree/take.ts does the git); on a conflict nothing in the parent changes and the
// reply names the files and what to do; a branch carrying what a take never writes (a .git path, a
// path through a symlinked directory of the checkout) is refused the same way, naming why; every
// symlink a take writes is named with its target. A branch that adds or changes files which run on
// their own in the checkout (OpenCode's config, git hooks, .envrc, an editor's tasks, install
// scripts: worktree/runs-alone.ts) is refused to an agent with the list; only a person takes it, in
// /tasks (`person`: the TUI's request), where the list was shown before the confirmation. Then its worktree and branch are removed (unless `keep`),
// the task records it, and the overlap flags of the parent's other tasks are updated.

import { log } from "../../host/client.js";
import { applyTake, planTake } from "../../worktree/take.js";
import { checkGitForTake } from "../../worktree/git-version.js";
import { removeWorktree } from "../../worktree/worktree.js";
import { KeyedSerialQueue } from "../../serial-queue.js";
import type { TaskInput } from "../task/step.js";
import { type BackgroundTask, isOpen, meaningOf } from "../../task-record.js";
import type { Outcome } from "../../task-state.js";
import type { RequestsHost } from "./host.js";
import { TAKE, type TakeBranch } from "./take.txt.js";

/** What a take uses of the room's host: the logger, the task's entry and its one way to change (which saves, refreshes the overlaps, publishes). */
type TakeHost = Pick<RequestsHost, "client" | "entryOf" | "dispatch"> & Partial<Pick<RequestsHost, "remote">>;

/**
 * Takes run one at a time per repository (two takes in one turn would each snapshot the same tree).
 * Module state, not a manager's: the parent's working tree is one per repository in this process,
 * whichever manager asks for a take in it.
 */
const takes = new KeyedSerialQueue();

/** The reply for a task whose changes cannot be taken, or undefined when it can. */
function refusal(task: BackgroundTask): Outcome | undefined {
  const info = task.worktree;
  if (!info) return { error: TAKE.noWorktree(task.id) };
  if (task.remote?.refused) return { error: TAKE.remoteRefused(task.id, task.remote.name, task.remote.refused) };
  if (info.removed === "taken") return { ok: TAKE.takenAlready(task.id, info.branch) };
  if (info.removed) return { error: TAKE.removed(task.id, info.branch, info.removed) };
  if (meaningOf(task.status).waitsForPerson) return { error: TAKE.waitsForPerson(task.id, task.status) };
  if (isOpen(task.status)) return { error: TAKE.stillOpen(task.id, task.status) };
  if (!info.changes) return { ok: TAKE.noChanges(task.id, info.branch) };
  return undefined;
}

/** How a take was asked for: `keep` the worktree and branch; `person`: by a person in /tasks (who may take files that run on their own). */
export interface TakeOptions {
  keep?: boolean;
  person?: boolean;
}

/** The task's branch as the replies name it. */
function branchOf(info: NonNullable<BackgroundTask["worktree"]>): TakeBranch {
  return { branch: info.branch, base: info.base, freed: info.freedAt !== undefined, path: info.path };
}

/** Takes the task's changes: what it did, or why not (task-state.ts Outcome). Never throws. */
export function takeTask(host: TakeHost, task: BackgroundTask, options: TakeOptions = {}): Promise<Outcome> {
  const refused = refusal(task);
  if (refused) return Promise.resolve(refused);
  return takes.post(task.worktree!.repo, () => take(host, task, options));
}

async function take(host: TakeHost, task: BackgroundTask, options: TakeOptions): Promise<Outcome> {
  const refused = refusal(task); // (checked again: it may have changed while it waited its turn)
  if (refused) return refused;
  const info = task.worktree!;
  const branch = branchOf(info);
  let plan;
  try {
    // the git on PATH must be one a take works with (git-version.ts): refused before anything is read or written
    const tooOld = await checkGitForTake(info.repo);
    if (tooOld) return { error: TAKE.gitTooOld(task.id, tooOld) };
    plan = await planTake(info, task.id);
  } catch (error) {
    return { error: TAKE.couldNotStart(task.id, (error as Error).message) };
  }
  if (plan.kind === "refused") {
    log(host.client, "warn", `offshoot: take of task ${task.id} refused: its branch carries ${plan.files.join(", ")}`);
    return { error: TAKE.refusedBranch(task.id, branch, plan.files, plan.reasons) };
  }
  if (plan.kind === "conflict") {
    log(host.client, "info", `offshoot: take of task ${task.id} refused: conflicts in ${plan.files.join(", ")}`);
    return { error: TAKE.conflict(task.id, branch, plan.files, plan.reasons) };
  }
  const runs = plan.kind === "applied" ? plan.runs.map((r) => `${r.path}: ${r.why}`) : [];
  if (runs.length && !options.person) {
    log(host.client, "warn", `offshoot: take of task ${task.id} refused to the agent: its branch changes files that run on their own (${runs.join("; ")})`);
    return { error: TAKE.runsAlone(task.id, branch, runs) };
  }
  const applied = plan.kind === "applied" ? plan.changes : [];
  const links = plan.kind === "applied" ? plan.links : [];
  if (applied.length) {
    try {
      await applyTake(info.repo, task.id, applied);
    } catch (error) {
      return { error: TAKE.applyFailed(task.id, (error as Error).message) };
    }
  }
  let after: string;
  let record: TaskInput = { kind: "worktree-taken", at: Date.now() };
  if (options.keep) after = TAKE.afterKept(branch);
  else {
    try {
      await removeWorktree(info);
      record = { kind: "worktree-removed", why: "taken" };
      after = TAKE.afterRemoved(branch);
    } catch (error) {
      after = TAKE.afterRemoveFailed(branch, (error as Error).message);
    }
  }
  const entry = host.entryOf(task);
  if (entry) await host.dispatch(entry, record);
  // a remote task's leftovers there and on the shared git remote go with its branch (tried again later when they cannot now)
  if (entry && task.remote && host.remote && record.kind === "worktree-removed") {
    const left = await host.remote.cleanUp(entry);
    if (left) after = `${after}\n${left}`;
  }
  log(host.client, "info", `offshoot: took task ${task.id} (${applied.length} paths)`);
  const head = applied.length
    ? TAKE.took(
        task.id,
        applied.map((c) => `${c.path}${!c.before ? " (new, untracked)" : !c.after ? " (deleted)" : ""}`),
        after,
      )
    : TAKE.tookNothingToWrite(task.id, after);
  // a link points wherever the task chose: each is named with its target, whatever the list above left out
  const linkLines = links.map((l) => `${l.path} -> ${l.target}${l.outside ? " (outside your checkout)" : ""}`);
  const withLinks = linkLines.length ? TAKE.links(head, linkLines) : head;
  return { ok: runs.length ? TAKE.tookRunsAlone(withLinks, runs) : withLinks };
}
