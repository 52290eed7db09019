// Requests from the TUI half (it cannot call this half, and the plugin opens no listener): the TUI
// writes `metadata.offshootRequest` into a task's child session (task-state.ts), and the
// `session.updated` event brings it here (event-decide.ts reads it), from the project's instance or,
// for a worktree child, through the worktree hub. Each request id is acted on once; the answer is
// published with the task's state, which also drops the request from the metadata.

import type { TaskRequest } from "../task-state.js";
import { discardTask } from "../worktree/discard.js";
import { log } from "../host/client.js";
import { publishTaskState } from "./publish.js";
import { type CancelHost, discardHost } from "./cancel.js";
import type { TaskEntry } from "./registry.js";
import { setAnswer } from "./request-answers.js";
import { isActive } from "./types.js";

/** What acting on a request needs of the manager (and what a discard needs: cancel.ts discardHost). */
export type RequestHost = CancelHost & {
  save(): Promise<void>;
  readonly registry: { ofChild(sessionID: string): TaskEntry | undefined };
  /** the parent's tasks (its settled ones read from the history on demand) */
  tasksOf(parent: string): unknown;
};

/** Request ids already acted on, per manager (a few per user action; never a per-event cost). */
const handled = new WeakMap<object, Set<string>>();

/** A request in a child's metadata (`parent`: the parent its metadata names), acted on once. */
export async function onRequest(manager: RequestHost, sessionID: string, request: TaskRequest, parent: string | undefined): Promise<void> {
  let seen = handled.get(manager);
  if (!seen) handled.set(manager, (seen = new Set()));
  if (seen.has(request.id)) return;
  seen.add(request.id);

  let entry = manager.registry.ofChild(sessionID);
  if (!entry && parent !== undefined) {
    manager.tasksOf(parent); // a settled task is read from the history on demand
    entry = manager.registry.ofChild(sessionID);
  }
  if (!entry) {
    log(manager.client, "warn", `offshoot: ${request.kind} request ${request.id} for session ${sessionID} ignored: no task of this process runs in it`);
    return;
  }
  const task = entry.task;
  if (isActive(task.status)) {
    const error = `task ${task.id} is still ${task.status}: cancel it first, then discard it`;
    log(manager.client, "warn", `offshoot: discard request ${request.id} refused: ${error}`);
    setAnswer(task, { id: request.id, error });
    publishTaskState(manager.client, task);
    return;
  }
  const outcome = await discardTask(discardHost(manager), task);
  const failed = outcome.startsWith("Error: ");
  log(manager.client, failed ? "error" : "info", `offshoot: discard request ${request.id}: ${outcome}`);
  setAnswer(task, failed ? { id: request.id, error: outcome.slice("Error: ".length) } : { id: request.id });
  publishTaskState(manager.client, task);
}
