// Requests from the TUI half (it cannot call this half, and the plugin opens no listener): the TUI
// writes `metadata.offshootRequest` into a task's child session (task-state.ts), and the
// `session.updated` event brings it here (event-decide.ts reads it), from the project's instance or,
// for a worktree child, through the worktree hub. A request is a discard or a take of an ended
// worktree task (ACTIONS). Each request id is acted on once; the answer is
// published with the task's state, which also drops the request from the metadata.

import type { RequestKind, TaskRequest } from "../task-state.js";
import { discardTask } from "../worktree/discard.js";
import { log } from "../host/client.js";
import { publishTaskState } from "./publish.js";
import { refreshOverlaps } from "./overlaps.js";
import type { TaskEntry } from "./registry.js";
import { setAnswer } from "./request-answers.js";
import { type TakeHost, takeTask } from "./take.js";
import { type BackgroundTask, isActive } from "./types.js";

/** What acting on a request needs of the manager (what a discard needs, worktree/discard.ts, and a take, take.ts). */
export type RequestHost = Parameters<typeof discardTask>[0] &
  TakeHost & {
    readonly registry: { ofChild(sessionID: string): TaskEntry | undefined };
    /** the parent's tasks (its settled ones read from the history on demand) */
    tasksOf(parent: string): BackgroundTask[];
  };

/** Each kind of request: what it does to an ended task (the reply; "Error: …" when it failed), and the refusal while it runs. */
const ACTIONS: Record<RequestKind, { run(manager: RequestHost, task: BackgroundTask): Promise<string>; whenActive: string }> = {
  discard: {
    run: async (manager, task) => {
      const reply = await discardTask(manager, task);
      refreshOverlaps(manager, manager.tasksOf(task.parentSessionID)); // a discarded task overlaps nothing any more
      return reply;
    },
    whenActive: "cancel it first, then discard it",
  },
  take: { run: (manager, task) => takeTask(manager, task), whenActive: "wait for it to end (or cancel it), then take its changes" },
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
  const act = ACTIONS[request.kind];
  if (isActive(task.status)) {
    const error = `task ${task.id} is still ${task.status}: ${act.whenActive}`;
    log(manager.client, "warn", `offshoot: ${request.kind} request ${request.id} refused: ${error}`);
    setAnswer(task, { id: request.id, error });
    publishTaskState(manager.client, task);
    return;
  }
  const outcome = await act.run(manager, task);
  const failed = outcome.startsWith("Error: ");
  log(manager.client, failed ? "error" : "info", `offshoot: ${request.kind} request ${request.id}: ${outcome}`);
  setAnswer(task, failed ? { id: request.id, error: outcome.slice("Error: ".length) } : { id: request.id, message: outcome.split("\n")[0]! });
  publishTaskState(manager.client, task);
}
