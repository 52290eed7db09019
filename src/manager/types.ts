import type { ProcessingStats } from "../fork/types.js";

/** `resumed` is a running state: it counts as running in lists, toasts and waits. */
export type TaskStatus = "running" | "completed" | "error" | "cancelled" | "resumed";

export type ModelRef = { providerID: string; modelID: string };

export interface BackgroundTask {
  id: string;
  /** the child session doing the work */
  sessionID: string;
  parentSessionID: string;
  /** tool call that launched (or last resumed) the task: a repeated call returns the same task */
  callID: string;
  description: string;
  prompt: string;
  agent: string;
  model?: ModelRef;
  /** the parent's agent and model, used to wake the parent without changing them */
  parentAgent?: string;
  parentModel?: ModelRef;
  isForked: boolean;
  /** the OpenCode process that runs this task; another live process's tasks are left to it */
  ownerPid: number;
  status: TaskStatus;
  /** 1 for the first run, +1 per resume; notifications are keyed by run so none is sent twice */
  run: number;
  notifiedRun: number;
  /** set when a cancel came from the parent itself: nothing new to wake it for */
  cancelledByParent?: boolean;
  createdAt: number;
  startedAt: number;
  completedAt?: number;
  error?: string;
  toolCalls: number;
  lastTool?: string;
  /** what the fork pipeline did to the parent's history for this child */
  forkStats?: ProcessingStats;
}

export interface StoreFile {
  version: 1;
  tasks: BackgroundTask[];
  /** parents that are owed a wake-up prompt once they are idle */
  pendingWakes: string[];
}

export function isActive(status: TaskStatus): boolean {
  return status === "running" || status === "resumed";
}
