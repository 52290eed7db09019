// The task's state in its child session's metadata, so a TUI (ours, or anyone's) recognises
// background children and shows their state without parsing titles. Best effort: the task file and
// the tools never depend on it.

import { type Client, call, log } from "../host/client.js";
import { updateSession } from "../host/session.js";
import type { PermissionWait, PublishedTaskState, QuestionWait } from "../task-state.js";
import type { BackgroundTask } from "./types.js";
import { taskModel } from "../prompts.js";
import { publishedWorktree } from "../worktree/describe.js";
import { answerOf } from "./request-answers.js";
import { overlapNoteOf } from "./overlap-notes.js";

export function publishedState(task: BackgroundTask, permission?: PermissionWait, question?: QuestionWait): PublishedTaskState {
  return {
    v: 1,
    taskId: task.id,
    parentSessionID: task.parentSessionID,
    description: task.description,
    forked: task.isForked,
    agent: task.agent,
    model: taskModel(task),
    status: task.status,
    ownerPid: task.ownerPid,
    startedAt: task.startedAt,
    completedAt: task.completedAt,
    error: task.error,
    permission,
    question,
    ...(task.worktree ? { worktree: publishedWorktree(task.worktree, overlapNoteOf(task)) } : {}),
    ...(task.receipt ? { receipt: task.receipt } : {}),
    ...(answerOf(task) ? { answered: answerOf(task) } : {}),
  };
}

/** Writes the state into the child session's metadata (PATCH /session/:id); never throws. */
export function publishTaskState(client: Client, task: BackgroundTask, permission?: PermissionWait, question?: QuestionWait): void {
  if (!task.sessionID) return; // its child is not created yet: it is created with the state of that moment
  const body = { metadata: { offshoot: publishedState(task, permission, question) } } as unknown as { title?: string };
  Promise.resolve()
    .then(() => call(`publishing task ${task.id}`, updateSession(client, task.sessionID, body)))
    .catch((error) => log(client, "debug", (error as Error).message));
}
