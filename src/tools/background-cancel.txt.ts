// background_cancel's texts: its description, its arguments' descriptions, its replies.

export const DESCRIPTION =
  "Cancel background tasks of this session: one by task_id, or with all: true every one that has not ended (running, queued, or paused by the session's budget). The child sessions are aborted; each ends as cancelled. With task_id and discard: true, a worktree task's worktree and branch are removed (a running or queued task is cancelled first; a paused one is refused: it waits for a person, cancel it first).";

/** The arguments' descriptions (args.ts). */
export const ARGS = {
  task_id: "The task id from background_task (a unique prefix is enough).",
  all: "Cancel every task of this session that has not ended: running, queued and paused ones.",
  discard:
    "With task_id of a worktree task: remove its worktree and branch (after you took or rejected its changes). A running or queued task is cancelled first; a paused one is refused (cancel it first).",
} as const;

/** background_cancel's replies. */
export const REPLIES = {
  cancelNeedsTarget:
    "Error: give task_id to cancel one task, or all: true to cancel every task of this session that has not ended (running, queued or paused).",
  nothingOpen: "No background task of this session is running, queued or paused; nothing to cancel.",
  /** One line per task cancelled, with the status it had (`all: true` cancels running, queued and paused ones). */
  cancelled: (task: { id: string; description: string }, was: string) => `Cancelled ${task.id} "${task.description}" (was ${was}).`,
  /** A task that runs on a remote: its run ends once the remote says so; `note` says whether the cancel went there or is kept. */
  cancelAsked: (task: { id: string; description: string }, was: string, note: string) =>
    `Asked ${task.id} "${task.description}" (was ${was}) to cancel: ${note}.`,
} as const;
