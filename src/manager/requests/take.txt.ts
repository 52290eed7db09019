// What a take answers (take.ts), to the agent's background_take and to the TUI's /tasks (its toast):
// applied, nothing to write, a conflict, a branch it refuses, and why it cannot start. Pure texts;
// docs/tools.md and docs/tui.md quote them (test/unit/docs.test.ts).

/** How many paths a reply names. */
export const REPLY_FILES = 20;

/** The task's branch as a reply names it: where it started, whether its worktree directory was freed, and where the directory was. */
export interface TakeBranch {
  branch: string;
  base: string;
  /** its worktree directory was freed when its run was committed: only the branch is left */
  freed: boolean;
  /** the worktree directory (while it is there) */
  path: string;
}

/** A list of paths, one a line, at most REPLY_FILES of them. */
export function listed(paths: readonly string[]): string {
  const shown = paths.slice(0, REPLY_FILES).map((p) => `- ${p}`);
  if (paths.length > REPLY_FILES) shown.push(`- … ${paths.length - REPLY_FILES} more`);
  return shown.join("\n");
}

/** What is kept when a take refuses: the branch (its directory freed), or the worktree and the branch. */
const kept = (b: TakeBranch) => `the task's ${b.freed ? "branch is" : "worktree and branch are"} kept`;

export const TAKE = {
  noWorktree: (id: string) => `task ${id} has no worktree (it ran in your checkout): its changes are in your working tree already.`,
  remoteRefused: (id: string, remote: string, why: string) =>
    `task ${id}'s branch came back from remote "${remote}" and was refused (${why}): nothing of it was brought into this repository, so there is nothing to take. Nothing in your checkout changed.`,
  takenAlready: (id: string, branch: string) => `Task ${id}'s changes were taken already; its worktree and branch ${branch} were removed.`,
  removed: (id: string, branch: string, why: string) => `task ${id}'s worktree and branch ${branch} were removed (${why}); there is nothing to take.`,
  waitsForPerson: (id: string, status: string) =>
    `task ${id} is ${status}: its run has not ended, it waits for a person (in the TUI, /tasks: raise the budget and Continue it), or cancel it (background_cancel), then take it. Nothing in your checkout changed.`,
  stillOpen: (id: string, status: string) =>
    `task ${id} is still ${status}. Wait for it (background_output({ task_id: "${id}", block: true })) or cancel it (background_cancel), then take it.`,
  /** (an answer, not a refusal: there is nothing to do) */
  noChanges: (id: string, branch: string) => `Task ${id} changed nothing on its branch ${branch}; there is nothing to take.`,
  couldNotStart: (id: string, why: string) => `could not take task ${id}: ${why}. Nothing in your checkout changed.`,
  gitTooOld: (id: string, why: string) => `could not take task ${id}: ${why}. Nothing in your checkout changed; the task's branch is kept.`,
  applyFailed: (id: string, why: string) => `could not take task ${id}: ${why}. Its worktree and branch are kept.`,
  /** A branch carrying paths a take never writes: nothing written. */
  refusedBranch: (id: string, b: TakeBranch, files: readonly string[], reasons: readonly string[]) =>
    [
      `task ${id}'s branch ${b.branch} carries ${files.length === 1 ? "a path" : `${files.length} paths`} a take never writes. Nothing in your checkout changed.`,
      listed(reasons),
      `What to do (${kept(b)}):`,
      `- see what it holds: git diff --stat ${b.base.slice(0, 12)} ${b.branch} (a branch made by the task is not to be trusted: do not merge it),`,
      `- resume the task (background_task({ resume: "${id}", … })) to redo its change without those paths, then take it,`,
      `- or discard it: background_cancel({ task_id: "${id}", discard: true }).`,
    ].join("\n"),
  /** Conflicts with the parent's working tree: nothing written. */
  conflict: (id: string, b: TakeBranch, files: readonly string[], reasons: readonly string[]) =>
    [
      `task ${id}'s changes conflict with your working tree in ${files.length} file${files.length === 1 ? "" : "s"}. Nothing in your checkout changed.`,
      listed(reasons.length ? reasons : files),
      `What to do (${kept(b)}):`,
      `- see its side: git diff ${b.base.slice(0, 12)} ${b.branch} -- <file>`,
      `- then either commit or stash your own changes to those files and call background_take({ task_id: "${id}" }) again (merge them yourself afterwards),`,
      `- or resume the task (background_task({ resume: "${id}", … })) to redo its change on top of yours, then take it,`,
      `- or merge it by hand: git merge ${b.branch} (commits onto your branch), or discard it: background_cancel({ task_id: "${id}", discard: true }).`,
    ].join("\n"),
  /** What became of the worktree and branch after a take. */
  afterKept: (b: TakeBranch) =>
    b.freed
      ? `its branch ${b.branch} was kept (keep: true; its worktree directory was freed when its run was committed: git log ${b.base.slice(0, 12)}..${b.branch})`
      : `its worktree ${b.path} and branch ${b.branch} were kept (keep: true)`,
  afterRemoved: (b: TakeBranch) =>
    b.freed ? `its branch ${b.branch} was removed (its worktree directory had been freed)` : `its worktree and branch ${b.branch} were removed`,
  afterRemoveFailed: (b: TakeBranch, why: string) =>
    `removing its ${b.freed ? "branch" : "worktree"} failed (${why}); remove it with: ${b.freed ? "" : `git worktree remove --force ${b.path} && `}git branch -D ${b.branch}`,
  /** Applied: the paths written (each marked new or deleted), and `after` (afterKept, afterRemoved…). */
  took: (id: string, paths: readonly string[], after: string) =>
    `Took task ${id}: ${paths.length} file${paths.length === 1 ? "" : "s"} changed in your working tree, not staged or committed; ${after}.\n${listed(paths)}\nReview with git status and git diff.`,
  tookNothingToWrite: (id: string, after: string) => `Took task ${id}: your working tree has its changes already, nothing was written; ${after}.`,
  /** A branch that changes files which run on their own in the checkout (worktree/runs-alone.ts), asked by an agent: nothing written. */
  runsAlone: (id: string, b: TakeBranch, runs: readonly string[]) =>
    [
      `task ${id}'s branch ${b.branch} changes ${runs.length === 1 ? "a file" : `${runs.length} files`} that run on their own in your checkout (OpenCode, git, your shell, editor or package manager runs ${runs.length === 1 ? "it" : "them"} without being asked), and a task is untrusted code: an agent cannot take it. Nothing in your checkout changed.`,
      listed(runs),
      "What to do:",
      `- tell the user: only a person takes it, in the TUI (/tasks → this task → "Take changes"), after reading this list there,`,
      `- or resume the task (background_task({ resume: "${id}", … })) to redo its change without those files, then take it,`,
      `- or see what they hold: git diff ${b.base.slice(0, 12)} ${b.branch} -- <file>, or discard it: background_cancel({ task_id: "${id}", discard: true }).`,
    ].join("\n"),
  /** The files that run on their own a person's take wrote, after the reply. */
  tookRunsAlone: (head: string, runs: readonly string[]) =>
    `${head}\nFiles it changed that run on their own (taken by a person in /tasks; check each before they run):\n${listed(runs)}`,
  /** The symlinks a take wrote, each with its target, after the reply. */
  links: (head: string, links: readonly string[]) => `${head}\nSymlinks it wrote (a link points where the task chose; check each):\n${listed(links)}`,
} as const;
