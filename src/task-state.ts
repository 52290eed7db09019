// The contract between the two halves: what the server half publishes in each background child
// session's `metadata.offshoot`, and what the TUI half reads back. Pure and import-free, so both
// bundles can use it without the other half's runtime.

/** `queued`: waiting for a free slot of its provider/model; `resumed` counts as running. */
export const TASK_STATUSES = ["queued", "running", "resumed", "completed", "error", "cancelled", "interrupted"] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];

/** A permission the child waits for, while it waits. */
export interface PermissionWait {
  /** the permission request's id (answer it with `permission.reply({ requestID })`) */
  id: string;
  permission: string;
  patterns: string[];
}

/** `metadata.offshoot` of a background child session. */
export interface PublishedTaskState {
  v: 1;
  taskId: string;
  parentSessionID: string;
  description: string;
  forked: boolean;
  agent: string;
  status: TaskStatus;
  /** the OpenCode process running it (a child of a dead process that no task file knows is adopted) */
  ownerPid: number;
  startedAt: number;
  completedAt?: number;
  error?: string;
  permission?: PermissionWait;
}

/**
 * The metadata key of a text part that is a message sent into a running task (a steer), by the
 * `background_task` tool or the TUI's "Send a message": its value is a mark unique to that message.
 * The server half counts each one as a steer of the task, and a sender knows its message was stored
 * when the part with its mark is.
 */
export const STEER_MARK = "offshootSteer";
