// background_take's texts: its description and its arguments' descriptions (the replies are the
// take room's: src/manager/take.ts).

export const DESCRIPTION =
  "Take an ENDED worktree task's changes (isolation: \"worktree\") into your working tree in one step: everything on its branch since it started is applied with a 3-way merge as uncommitted changes (not staged, not committed; your own uncommitted changes stay). On a conflict nothing in your checkout changes and the reply lists the conflicting files and what to do. Afterwards the task's worktree and branch are removed, unless keep: true.";

/** The arguments' descriptions (args.ts). */
export const ARGS = {
  task_id: "The worktree task whose changes to take (its id from background_task; a unique prefix is enough).",
  keep: "Keep the task's worktree and branch after taking its changes (default: they are removed).",
} as const;
