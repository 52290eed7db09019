// What background_output says about a task that has not ended: its status line, then (running)
// its progress read from the child's messages, then the caller's "still running" sentence.

import { runningProgress } from "./background-output.txt.js";
import type { TaskService } from "../manager/task-service.js";
import { type BackgroundTask, isWorking, meaningOf } from "../task-record.js";
import { taskHeader } from "./result.js";

export async function activeTaskReport(service: Pick<TaskService, "now" | "progressOf">, task: BackgroundTask, stillRunning: string): Promise<string> {
  const lines = [taskHeader(task, service.now())];
  if (isWorking(task.status) && task.sessionID) {
    try {
      const progress = await service.progressOf(task);
      lines.push(runningProgress(task, progress, service.now()));
    } catch (error) {
      lines.push(`Its progress could not be read: ${(error as Error).message}.`);
    }
  } else if (meaningOf(task.status).queued) {
    lines.push(`Queued: ${task.queuedBecause ?? "waiting for a free slot"}.`);
  }
  lines.push(stillRunning);
  return lines.join("\n");
}
