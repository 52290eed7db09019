// background_cancel's texts: its description, its arguments' descriptions, its replies.

export const DESCRIPTION =
  "Cancel background tasks of this session: one by task_id, or every running one with all: true. The child sessions are aborted. With task_id and discard: true, a worktree task's worktree and branch are removed (cancelled first if it still runs).";

/** The arguments' descriptions (args.ts). */
export const ARGS = {
  task_id: "The task id from background_task (a unique prefix is enough).",
  all: "Cancel every running task of this session.",
  discard: "With task_id of an ENDED worktree task: remove its worktree and branch (after you took or rejected its changes).",
} as const;

/** background_cancel's replies. */
export const REPLIES = {
  cancelNeedsTarget: "Error: give task_id to cancel one task, or all: true to cancel every running task of this session.",
} as const;
