// Requests from the TUI half (it cannot call this half, and the plugin opens no listener): the TUI
// writes `metadata.offshootRequest` into a task's child session (task-state.ts), and the
// `session.updated` event brings it here, from the project's instance or, for a worktree child,
// through the worktree hub. Each request id is acted on once; the answer is published with the
// task's state, which also drops the request from the metadata.

import type { Session } from "../host/types.js";
import { REQUEST_KEY, type TaskRequest } from "../task-state.js";
import { discardTask } from "../worktree/discard.js";
import { log } from "../host/client.js";
import { publishTaskState } from "./publish.js";
import { setAnswer } from "./request-answers.js";
import type { TaskManager } from "./task-manager.js";
import { isActive } from "./types.js";

const MAX_ID_CHARS = 200;

/** Request ids already acted on, per manager (a few per user action; never a per-event cost). */
const handled = new WeakMap<TaskManager, Set<string>>();

export function parseRequest(metadata: unknown): TaskRequest | undefined {
  const raw = metadata && typeof metadata === "object" ? (metadata as Record<string, unknown>)[REQUEST_KEY] : undefined;
  if (!raw || typeof raw !== "object") return undefined;
  const { kind, id } = raw as Record<string, unknown>;
  if (kind !== "discard" || typeof id !== "string" || id.length === 0 || id.length > MAX_ID_CHARS) return undefined;
  return { kind, id };
}

/** A `session.updated` event: a request in a task child's metadata is acted on once. */
export async function onSessionUpdated(manager: TaskManager, sessionID: string, info: Session | undefined): Promise<void> {
  const request = parseRequest(info?.metadata);
  if (!request) return;
  let seen = handled.get(manager);
  if (!seen) handled.set(manager, (seen = new Set()));
  if (seen.has(request.id)) return;
  seen.add(request.id);

  let entry = manager.registry.ofChild(sessionID);
  const parent = (info?.metadata?.offshoot as { parentSessionID?: unknown } | undefined)?.parentSessionID;
  if (!entry && typeof parent === "string") {
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
  const outcome = await discardTask(manager, task);
  const failed = outcome.startsWith("Error: ");
  log(manager.client, failed ? "error" : "info", `offshoot: discard request ${request.id}: ${outcome}`);
  setAnswer(task, failed ? { id: request.id, error: outcome.slice("Error: ".length) } : { id: request.id });
  publishTaskState(manager.client, task);
}
