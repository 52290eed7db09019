// The task's state in its child session's metadata, so a TUI (ours, or anyone's) recognises
// background children and shows their state without parsing titles. Best effort: the task file and
// the tools never depend on it. Everything published is read from the task's entry: its record and
// its runtime (the permission or question it waits on, the answer to the TUI's last request, its
// overlap line), so every publish carries all of it.

import { type Client, call, log } from "../../host/client.js";
import { updateSession } from "../../host/session.js";
import type { PublishedTaskState, RequestAnswer } from "../../task-state.js";
import type { BackgroundTask } from "../../task-record.js";
import type { TaskRuntime } from "./registry.js";
import { taskModel } from "../../prompts.js";
import { publishedWorktree } from "../../worktree/describe.js";
import { withToolNames } from "../../tool-names.js";

/** The runtime fields a publish carries (none for a child being created: it has none yet). */
type Published = Partial<Pick<TaskRuntime, "permission" | "question" | "requestAnswer" | "overlapNote">>;

export function publishedState(task: BackgroundTask, runtime: Published = {}): PublishedTaskState {
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
    error: task.error === undefined ? undefined : withToolNames(task.error),
    permission: runtime.permission,
    question: runtime.question,
    ...(task.worktree ? { worktree: publishedWorktree(task.worktree, runtime.overlapNote ?? "") } : {}),
    ...(task.receipt ? { receipt: task.receipt } : {}),
    ...(runtime.requestAnswer ? { answered: namedAnswer(runtime.requestAnswer) } : {}),
    // (what a remote parent follows: the run, and what its child used)
    run: task.run,
    toolCalls: task.toolCalls,
    ...(task.lastTool ? { lastTool: task.lastTool } : {}),
    ...(task.usage ? { usage: { ...task.usage } } : {}),
    // (where it runs, or waits to run)
    ...(task.remote || task.remoteWait ? { remote: task.remote?.name ?? task.remoteWait?.name } : {}),
  };
}

/** A request's answer with the tools named as they are offered (the TUI shows it as it is). */
function namedAnswer(answer: RequestAnswer): RequestAnswer {
  return {
    ...answer,
    ...(answer.error === undefined ? {} : { error: withToolNames(answer.error) }),
    ...(answer.message === undefined ? {} : { message: withToolNames(answer.message) }),
  };
}

/** Writes the entry's state into its child session's metadata (PATCH /session/:id); never throws. */
export function publishTaskState(client: Client, entry: { readonly task: BackgroundTask; readonly runtime: Published }): void {
  const { task } = entry;
  if (!task.sessionID) return; // its child is not created yet: it is created with the state of that moment
  const body = { metadata: { offshoot: publishedState(task, entry.runtime) } } as unknown as { title?: string };
  Promise.resolve()
    .then(() => call(`publishing task ${task.id}`, updateSession(client, task.sessionID, body)))
    .catch((error) => log(client, "debug", (error as Error).message));
}
