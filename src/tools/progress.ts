// What background_output says about a task that has not ended: its status line, then (running)
// its progress read from the child's messages, then the caller's "still running" sentence.

import { runningProgress } from "../prompts.js";
import { getMessages } from "../host/client.js";
import { readProgress } from "../manager/progress.js";
import type { TaskManager } from "../manager/task-manager.js";
import { type BackgroundTask, isRunning } from "../manager/types.js";
import { taskHeader } from "./result.js";

export async function activeTaskReport(manager: TaskManager, task: BackgroundTask, stillRunning: string): Promise<string> {
  const lines = [taskHeader(task, manager.now())];
  if (isRunning(task.status) && task.sessionID) {
    try {
      const progress = readProgress(await getMessages(manager.client, task.sessionID), task.startedAt);
      lines.push(runningProgress(task, progress, manager.now()));
    } catch (error) {
      lines.push(`Its progress could not be read: ${(error as Error).message}.`);
    }
  } else if (task.status === "queued") {
    lines.push(`Queued: ${task.queuedBecause ?? "waiting for a free slot"}.`);
  }
  lines.push(stillRunning);
  return lines.join("\n");
}
