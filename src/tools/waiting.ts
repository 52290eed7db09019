// What a tool says about a task whose child waits for a person (a question, a permission), and the
// parent agent's answer to a question (background_output's `answer`).

import { REPLIES } from "./background-output.txt.js";
import type { TaskService } from "../manager/task-service.js";
import type { BackgroundTask } from "../task-record.js";

/** The lines saying what the task's child waits for, or undefined when it waits for nobody. */
export function personWaitText(service: Pick<TaskService, "questionOf" | "waitingFor">, task: BackgroundTask): string | undefined {
  const question = service.questionOf(task);
  if (question) return REPLIES.waiting(task, question);
  const permission = service.waitingFor(task);
  return permission ? REPLIES.waitingForPermission(permission) : undefined;
}

/** Sends `answer` (one string, or one per question) to the question the task's child waits on. */
export function sendAnswer(service: Pick<TaskService, "answer">, task: BackgroundTask, answer: string | string[]): Promise<{ ok: string } | { error: string }> {
  return service.answer(task, typeof answer === "string" ? [answer] : answer);
}
