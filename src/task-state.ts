// The contract between the two halves: what the server half publishes in each background child
// session's `metadata.offshoot`, and what the TUI half reads back. Pure and import-free, so both
// bundles can use it without the other half's runtime.

/**
 * `queued`: waiting for a free slot of its provider/model; `resumed` counts as running. `paused`:
 * stopped after a step because its parent session's budget was reached (manager/budget.ts); its run
 * has not ended, and "Continue" (or the agent's resume, once the budget allows) goes on in place.
 */
export const TASK_STATUSES = ["queued", "running", "resumed", "paused", "completed", "error", "cancelled", "interrupted"] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];

/** Not ended yet: queued or running. (A string: the TUI half may meet a status of a newer server half, which has ended.) */
export function isActive(status: string): boolean {
  return status === "running" || status === "resumed" || status === "queued";
}

/** Its child is working on a prompt. */
export function isRunning(status: string): boolean {
  return status === "running" || status === "resumed";
}

/** Its run has not ended: queued, running, or paused (stopped by its parent's budget, to be continued in place). */
export function hasOpenRun(status: string): boolean {
  return isActive(status) || status === "paused";
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
  /** a forked task: what its child's first request read from the cache (once that request finished) */
  receipt?: PublishedReceipt;
  /** the answer to the last TUI request (`metadata.offshootRequest`) the server half acted on */
  answered?: RequestAnswer;
}

/**
 * The fork receipt (the server half's manager/receipt.ts; read as text by ../format.ts formatReceipt):
 * input tokens of the child's first request, those read from the cache, for a text fork its context
 * copy's estimated tokens, for a flagged native fork the likely reason (for a text fork on another
 * model than its parent's: which).
 */
export interface PublishedReceipt {
  kind: "native" | "text";
  read: number;
  input: number;
  copy?: number;
  miss?: string;
}

/** The outcome of a TUI request: its id, and the error when it was refused or failed. */
export interface RequestAnswer {
  id: string;
  error?: string;
  /** what it did, when it worked (the TUI's toast) */
  message?: string;
}

/** A worktree task's branch and worktree; `changes` once a run ended ("2 files +10 -3"); `removed` when gone. */
export interface PublishedWorktree {
  branch: string;
  directory: string;
  changes?: string;
  removed?: string;
  /** other ended tasks of the parent that changed the same files: "bg_x on src/a.ts" */
  overlaps?: string;
  /** how its child is contained: "sandboxed" (an OS sandbox) or "not sandboxed" (text-level checks only); absent from older servers */
  containment?: string;
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

/**
 * The kinds of `metadata.offshootRequest`: `discard` removes an ended worktree task's worktree and
 * branch; `take` applies an ended worktree task's changes to the parent's working tree (then removes
 * them); `continue` goes on with a paused or interrupted task in place (same child session, its
 * history kept); `raise-budget` raises the budget of the task's parent session by one more budget
 * (a person's decision: only the TUI sends it).
 */
export const REQUEST_KINDS = ["discard", "take", "continue", "raise-budget", "cancel"] as const;
export type RequestKind = (typeof REQUEST_KINDS)[number];

/** `metadata.offshootRequest`: one request of the TUI half (REQUEST_KINDS). */
export interface TaskRequest {
  kind: RequestKind;
  /** unique per request: a repeated event with the same id does nothing */
  id: string;
}
