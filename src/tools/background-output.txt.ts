// background_output's texts: its description, its arguments' descriptions, and what it says about a
// task that has not ended: its progress (progress.ts) and what it waits for (waiting.ts).

import { OUTPUT_BLOCK_DEFAULT_S, OUTPUT_BLOCK_MAX_S, PROGRESS_TEXT_LINES } from "../constants.js";
import { formatDuration, formatUsage } from "../format.js";
import type { RunProgress } from "../manager/task-service.js";
import type { BackgroundTask } from "../task-record.js";
import { answerCall, questionLine } from "../prompts.js";
import type { QuestionWait } from "../task-state.js";
import { cleanLines, oneLine, quoteLines } from "../text.js";

export const DESCRIPTION =
  "Get a background task's status (tokens charged in full and read from the cache, apart; for a fork, what its first request read from your prompt cache) and, when it has finished, its final answer. With block: true, wait for the task to finish (up to timeout seconds) instead of returning at once; it returns at once when the task waits for the user. With answer, send the user's answer to the question the task's child asked.";

/** The arguments' descriptions (args.ts). */
export const ARGS = {
  task_id: "The task id from background_task (a unique prefix is enough).",
  block: "Wait until the task finishes (or timeout passes) before answering.",
  timeout: `Seconds to wait with block (default ${OUTPUT_BLOCK_DEFAULT_S}, at most ${OUTPUT_BLOCK_MAX_S}).`,
  answer:
    "Only when the task waits for the user's answer to its question (background_list and background_output say so) and the user gave you the answer or told you to answer: the answer to send (a list of strings, one per question, when it asked several).",
} as const;

/** What background_output says about a task whose child waits for a person. */
export const REPLIES = {
  /** background_output of a task paused by the session's budget (its run has not ended). */
  paused: (task: BackgroundTask) =>
    `${task.error ?? "paused: this session's background budget is reached"}\nIts child session ${task.sessionID} keeps what it did. Only a person can raise the budget (/tasks, or the plugin options); once they did, background_task({ resume: "${task.id}", prompt }) goes on with it in place.`,
  /** background_output of a task whose child waits for an answer (block: true returns at once with it). */
  waiting: (task: BackgroundTask, wait: QuestionWait) =>
    [
      `Waiting for the user's answer to its question: ${questionLine(wait)}`,
      "It does nothing until someone answers; waiting for it here would not help. The user can answer it in OpenCode (it shows in this session's view).",
      `If the user gives you the answer, or tells you to answer for them, pass it on: ${answerCall(task, wait)}. You will be notified when the task ends.`,
    ].join("\n"),
  /** The end of background_output on a task still running. */
  stillRunning: "Still running. You will be notified when it ends, or call background_output with block: true to wait.",
  /** The same after `block` waited and the task did not end. */
  stillRunningAfterWait: (why: string) => `Still running: ${why}. Call background_output again later.`,
  /** background_output of a task whose child waits for a permission. */
  waitingForPermission: (what: string) =>
    `Waiting for the user to answer its permission request: ${what}. It does nothing until the user answers it in OpenCode (you cannot answer it). You will be notified when the task ends.`,
} as const;

/**
 * What background_output says about a running task before "Still running": how long it has run,
 * its last activity and how long ago, tool calls and tokens so far, the first lines of its latest text.
 */
export function runningProgress(task: BackgroundTask, progress: RunProgress, now: number): string {
  const ago = (at: number) => `${formatDuration(now - at)} ago`;
  const tool = progress.lastTool;
  const toolText = tool ? `tool ${oneLine(tool.tool, 60).text}${tool.title ? ` "${oneLine(tool.title, 120).text}"` : ""} (${tool.status})` : "";
  const activity = progress.lastActivityAt
    ? `Last activity: ${ago(progress.lastActivityAt)}${toolText ? `; latest tool call: ${toolText}` : ""}.`
    : "Last activity: none yet (its model has not answered so far).";
  const lines = progress.latestText ? cleanLines(progress.latestText) : [];
  const shown = quoteLines(lines.slice(0, PROGRESS_TEXT_LINES));
  const more = lines.length - shown.length;
  const usage = formatUsage(task.usage);
  return [
    `Running for ${formatDuration(now - task.startedAt)}${task.run > 1 ? ` (run ${task.run})` : ""}.`,
    activity,
    `Tool calls so far: ${progress.toolCalls} in this run${task.toolCalls !== progress.toolCalls ? `, ${task.toolCalls} in all` : ""}.`,
    `Tokens so far: ${usage || "none reported yet"}.`,
    shown.length ? `Latest text (first lines):\n${shown.join("\n")}${more > 0 ? `\n… (${more} more lines)` : ""}` : "Latest text: none yet.",
  ].join("\n");
}
