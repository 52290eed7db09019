// What a tool says about a task: the status line, and for an ended run its error and answer.
// Shared by background_output and by background_task under `opencode run` (where it waits).

import { taskDuration, taskModel } from "../prompts.js";
import { formatReceipt, formatUsage } from "../format.js";
import type { TaskService } from "../manager/task-service.js";
import { type BackgroundTask, isMoving } from "../task-record.js";
import { worktreeLines } from "../worktree/describe.js";

/** The status line; for a forked task, its fork receipt on the next line. */
export function taskHeader(task: BackgroundTask, now: number): string {
  const progress = `tool calls: ${task.toolCalls}${task.lastTool ? ` (last: ${task.lastTool})` : ""}`;
  const usage = formatUsage(task.usage);
  const head = `Task ${task.id} "${task.description}": ${task.status} · agent ${task.agent}${task.model ? ` · model ${taskModel(task)}` : ""} · ${taskDuration(task, now)} · ${progress}${usage ? ` · ${usage}` : ""}`;
  const receipt = receiptLine(task);
  return receipt ? `${head}\n${receipt}` : head;
}

/** A forked task's receipt (what its first request read from the cache), or undefined for a task that is not a fork. */
export function receiptLine(task: BackgroundTask): string | undefined {
  return formatReceipt(task.isForked, task.receipt, !isMoving(task.status));
}

/** The ended run's result; reading it counts as the parent having read it (no wake-up for it). */
export async function endedTaskResult(
  service: Pick<TaskService, "now" | "answerOf" | "resultRead" | "tasksOf">,
  task: BackgroundTask,
  options: { asNotice?: boolean } = {},
): Promise<string> {
  const lines = [taskHeader(task, service.now())];
  if (task.error) lines.push(`Error: ${task.error}`);
  lines.push(...worktreeLines(task.id, task.worktree, isMoving(task.status) ? "active" : "ended", service.tasksOf(task.parentSessionID), task.remote));
  if (!task.sessionID) {
    lines.push("It never had a child session, so there is no answer.");
    await service.resultRead(task, options);
    return lines.join("\n");
  }
  try {
    const answer = await service.answerOf(task);
    lines.push(answer ? `Answer:\n${answer}` : "The child gave no text answer.");
    await service.resultRead(task, options);
  } catch (error) {
    lines.push(`Could not read the answer: ${(error as Error).message}. Child session: ${task.sessionID}.`);
  }
  return lines.join("\n");
}
