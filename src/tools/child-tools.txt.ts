// What the background tools answer in the OpenCode instance of a task worktree (child-tools.ts): every
// session served there is a background task's child, which starts and manages no tasks of its own.

export const CHILD_TOOL_REPLIES = {
  launch:
    "Error: this session is itself a background task (working in its own git worktree); it cannot start background tasks of its own. Do the work directly in this session.",
  manage: (tool: string) =>
    `Error: this session is itself a background task (working in its own git worktree); it has no background tasks of its own, so ${tool} has nothing to show or stop here. Do the work directly in this session.`,
} as const;
