// The notice format (notices.ts): the message a parent gets once per ended run of a task, and the
// prompt that wakes an idle parent. Pure strings and string builders only.

import { DESCRIPTION_MAX_CHARS, NOTIFICATION_ANSWER_LINES } from "../../constants.js";
import { formatReceipt, formatUsage } from "../../format.js";
import { forkLine } from "../../native/describe.js";
import { taskDuration, taskLine, taskModel } from "../../prompts.js";
import { afterLabel, cleanLines, oneLine, quoteLines } from "../../text.js";
import { worktreeLines } from "../../worktree/describe.js";
import type { BackgroundTask } from "../../task-record.js";

const STATUS_WORD: Record<BackgroundTask["status"], string> = {
  queued: "is queued",
  running: "is running",
  resumed: "is running (resumed)",
  paused: "is paused",
  completed: "completed",
  error: "failed",
  cancelled: "was cancelled",
  interrupted: "was interrupted",
};

/** Every notice of a task starts with this; one found in the parent's messages was already delivered. */
export function noticePrefix(task: Pick<BackgroundTask, "id">): string {
  return `[background task ${task.id} `;
}

export function isNoticeOf(text: string, task: Pick<BackgroundTask, "id">): boolean {
  return text.startsWith(noticePrefix(task));
}

/** The noReply message a parent receives once per ended run of a task. */
export function buildTaskNotification(
  task: BackgroundTask,
  answer: string,
  now: number,
  siblings: readonly BackgroundTask[] = [],
  budgetLine?: string,
): string {
  // Model-written text is neutralised (src/text.ts): the description is one line, the answer's lines
  // are indented and the error's lines after its first too, so none of them can start a line of ours.
  const lines = cleanLines(answer);
  const shown = quoteLines(lines.slice(0, NOTIFICATION_ANSWER_LINES));
  const more = lines.length - shown.length;
  return [
    `${noticePrefix(task)}${STATUS_WORD[task.status]}] "${oneLine(task.description, DESCRIPTION_MAX_CHARS).text}"`,
    `status: ${task.status} · agent: ${oneLine(task.agent, DESCRIPTION_MAX_CHARS).text}${task.model ? ` · model: ${taskModel(task)}` : ""} · duration: ${taskDuration(task, now)} · tool calls: ${task.toolCalls}${task.isForked ? ` · forked (${forkLine(task.fork) ?? "context copy"})` : ""}`,
    task.usage && formatUsage(task.usage) ? `usage: ${formatUsage(task.usage)}` : "",
    receiptNoticeLine(task),
    task.error ? afterLabel("error:", task.error) : "",
    ...worktreeLines(task.id, task.worktree, "ended", siblings, task.remote),
    shown.length ? `answer (first lines):\n${shown.join("\n")}${more > 0 ? `\n… (${more} more lines)` : ""}` : "",
    `Full result: background_output({ task_id: "${task.id}" })`,
    budgetLine ?? "",
  ]
    .filter(Boolean)
    .join("\n");
}

/** A forked task's receipt: what its child's first request read from the cache ("" for a task that is not a fork). */
export function receiptNoticeLine(task: BackgroundTask): string {
  return formatReceipt(task.isForked, task.receipt, true) ?? "";
}

/** What the prompt that wakes a parent starts with (turn-order.ts knows it by this). */
export const WAKE_START = "Background tasks you started have ended:";

/** The prompt that wakes an idle parent when its last task ended or one failed. */
export function buildWakePrompt(ended: BackgroundTask[], running: BackgroundTask[], paused: BackgroundTask[] = []): string {
  return [
    WAKE_START,
    ...ended.map(
      (t) => `- ${taskLine({ ...t, description: oneLine(t.description, DESCRIPTION_MAX_CHARS).text, agent: oneLine(t.agent, DESCRIPTION_MAX_CHARS).text })}`,
    ),
    running.length ? `Still running: ${running.map((t) => t.id).join(", ")}.` : "No background tasks are running now.",
    // (a paused task has not ended: it waits for a person, and goes on in place once they continue it)
    ...(paused.length
      ? [`Paused, waiting for a person to raise this session's background budget and continue them: ${paused.map((t) => t.id).join(", ")}.`]
      : []),
    "Read each result with background_output and continue your work.",
  ].join("\n");
}
