// background_list's texts: its description, its argument's description, the line under a task
// whose child waits for an answer.

import type { BackgroundTask } from "../task-record.js";
import { answerCall, questionLine } from "../prompts.js";
import type { QuestionWait } from "../task-state.js";

export const DESCRIPTION =
  "List this session's background tasks: id, status (and what a task waits for), running time, tool calls, tokens charged in full and tokens read from the cache (apart), cost, description; for a forked task, what its first request read from your prompt cache (flagged with the likely reason when a native fork missed it); then totals.";

/** The argument's description (args.ts). */
export const ARGS = {
  status: "Only list tasks with this status (running includes resumed tasks; queued ones are listed with queued).",
} as const;

/** What background_list says under a task. */
export const REPLIES = {
  /** The line under the task in background_list. */
  listDetail: (task: BackgroundTask, wait: QuestionWait) =>
    `⚠ waiting for the user's answer: ${questionLine(wait)} (the user answers in OpenCode; if they tell you the answer: ${answerCall(task, wait)})`,
} as const;
