// The contract between the two halves: what the server half publishes in each background child
// session's `metadata.offshoot`, and what the TUI half reads back. Pure and import-free, so both
// bundles can use it without the other half's runtime.

/** `queued`: waiting for a free slot of its provider/model; `resumed` counts as running. */
export const TASK_STATUSES = ["queued", "running", "resumed", "completed", "error", "cancelled", "interrupted"] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];

/** Not ended yet: queued or running. (A string: the TUI half may meet a status of a newer server half, which has ended.) */
export function isActive(status: string): boolean {
  return status === "running" || status === "resumed" || status === "queued";
}

/** Its child is working on a prompt. */
export function isRunning(status: string): boolean {
  return status === "running" || status === "resumed";
}

/** A permission the child waits for, while it waits. */
export interface PermissionWait {
  /** the permission request's id (answer it with `permission.reply({ requestID })`) */
  id: string;
  permission: string;
  patterns: string[];
}

/** One question of the child's `question` tool (cleaned and bounded by the server half). */
export interface AskedQuestion {
  question: string;
  header?: string;
  options: { label: string; description?: string }[];
  /** several options may be picked */
  multiple?: boolean;
  /** a typed answer is allowed (OpenCode's default: true) */
  custom?: boolean;
}

/** A question the child asked, while it waits for the answer. */
export interface QuestionWait {
  /** the question request's id (answer it with `question.reply({ requestID, answers })`) */
  id: string;
  questions: AskedQuestion[];
}

/** `metadata.offshoot` of a background child session. */
export interface PublishedTaskState {
  v: 1;
  taskId: string;
  parentSessionID: string;
  description: string;
  forked: boolean;
  agent: string;
  /** "provider/model" (or "provider/model#variant") the child runs on, when known */
  model?: string;
  status: TaskStatus;
  /** the OpenCode process running it (a child of a dead process that no task file knows is adopted) */
  ownerPid: number;
  startedAt: number;
  completedAt?: number;
  error?: string;
  permission?: PermissionWait;
  question?: QuestionWait;
  worktree?: PublishedWorktree;
  /** the answer to the last TUI request (`metadata.offshootRequest`) the server half acted on */
  answered?: RequestAnswer;
}

/** The outcome of a TUI request: its id, and the error when it was refused or failed. */
export interface RequestAnswer {
  id: string;
  error?: string;
}

/** A worktree task's branch and worktree; `changes` once a run ended ("2 files +10 -3"); `removed` when gone. */
export interface PublishedWorktree {
  branch: string;
  directory: string;
  changes?: string;
  removed?: string;
}

/**
 * The metadata key of a text part that is a message sent into a running task (a steer), by the
 * `background_task` tool or the TUI's "Send a message": its value is a mark unique to that message.
 * The server half counts each one as a steer of the task, and a sender knows its message was stored
 * when the part with its mark is.
 */
export const STEER_MARK = "offshootSteer";

/**
 * The metadata key of a one-shot request from the TUI half to the server half, written into a
 * task's child session metadata (`session.update`, beside the published `offshoot`, which it keeps).
 * The server half sees the `session.updated` event, acts once per request id, and publishes the
 * task's state again (which drops the request). The TUI half learns the outcome from that state.
 */
export const REQUEST_KEY = "offshootRequest";

/** `metadata.offshootRequest`: `discard` removes an ended worktree task's worktree and branch. */
export interface TaskRequest {
  kind: "discard";
  /** unique per request: a repeated event with the same id does nothing */
  id: string;
}
