// What a discard answers (discard.ts), to background_cancel({ discard: true }) and to the TUI's
// /tasks. Pure texts; docs/tools.md quotes them (test/unit/docs.test.ts).

export const DISCARD = {
  noWorktree: (id: string) => `task ${id} has no worktree (it ran in the shared checkout); nothing to discard.`,
  removedAlready: (id: string, branch: string, why: string) => `Task ${id}'s worktree and branch ${branch} were already removed (${why}).`,
  waitsForPerson: (id: string, status: string) =>
    `task ${id} is ${status}: its run has not ended, it waits for a person. Cancel it first (background_cancel({ task_id: "${id}" })), then discard it. Nothing was removed.`,
  cancelFailed: (id: string, reasons: readonly string[]) => `could not cancel task ${id} before discarding it: ${reasons.join("; ")}. Nothing was removed.`,
  endedWithoutChanges: (id: string, branch: string) => `Task ${id} ended with no changes; its worktree and branch ${branch} were removed.`,
  removeFailed: (id: string, where: { branch: string; path: string; freed: boolean }, why: string) =>
    `removing the ${where.freed ? "branch" : "worktree"} of task ${id} failed: ${why}. Remove it with: ${where.freed ? "" : `git worktree remove --force ${where.path} && `}git branch -D ${where.branch}`,
  /** Done: the branch (its directory freed when its run was committed), or the worktree and the branch. */
  discarded: (id: string, where: { branch: string; path: string; freed: boolean }) =>
    where.freed
      ? `Discarded task ${id}: its branch ${where.branch} was removed (its worktree directory had been freed when its run was committed).`
      : `Discarded task ${id}: its worktree ${where.path} and branch ${where.branch} were removed.`,
} as const;
