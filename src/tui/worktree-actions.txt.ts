// The toasts of /tasks's "Take changes" and "Discard worktree and branch" (dialog.ts). A take's
// toast is the server's own reply when there is one (manager/take.txt.ts). Pure texts; docs/tui.md
// quotes them (test/unit/docs.test.ts).

export const WORKTREE_TOASTS = {
  took: (branch: string | undefined) => `Took ${branch}: its changes are in your working tree, uncommitted.`,
  notTaken: (branch: string | undefined, reason: string) => `${branch} NOT taken: ${reason}`,
  discarded: (branch: string | undefined, freed: boolean) =>
    `Discarded ${branch}: ${freed ? "the branch was removed (its directory had been freed)" : "its worktree and branch were removed"}.`,
  notDiscarded: (branch: string | undefined, reason: string) => `${branch} NOT discarded: ${reason}.`,
} as const;
