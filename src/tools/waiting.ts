// What a tool says about a task whose child waits for a person (a question, a permission), and the
// parent agent's answer to a question (background_output's `answer`).

import { QUESTION_MESSAGES } from "../prompts.js";
import { answerQuestion } from "../manager/questions.js";
import type { TaskManager } from "../manager/task-manager.js";
import type { BackgroundTask } from "../manager/types.js";

/** The lines saying what the task's child waits for, or undefined when it waits for nobody. */
export function personWaitText(manager: TaskManager, task: BackgroundTask): string | undefined {
  const question = manager.questionOf(task);
  if (question) return QUESTION_MESSAGES.waiting(task, question);
  const permission = manager.waitingFor(task);
  return permission ? QUESTION_MESSAGES.waitingForPermission(permission) : undefined;
}

/** Sends `answer` (one string, or one per question) to the question the task's child waits on. */
export function sendAnswer(manager: TaskManager, task: BackgroundTask, answer: string | string[]): Promise<{ ok: string } | { error: string }> {
  const entry = manager.registry.get(task.id);
  if (!entry || entry.task !== task) return Promise.resolve({ error: QUESTION_MESSAGES.notWaiting(task, undefined) });
  return answerQuestion(manager, entry, typeof answer === "string" ? [answer] : answer);
}
