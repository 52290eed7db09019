// The answer to each task's last TUI request (requests.ts), kept so every later publish of the
// task's state (publish.ts) still carries it. In memory only: a request is answered by the process
// that saw it.

import type { RequestAnswer } from "../task-state.js";
import type { BackgroundTask } from "./types.js";

const answers = new WeakMap<BackgroundTask, RequestAnswer>();

export function setAnswer(task: BackgroundTask, answer: RequestAnswer): void {
  answers.set(task, answer);
}

export function answerOf(task: BackgroundTask): RequestAnswer | undefined {
  return answers.get(task);
}
