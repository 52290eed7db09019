// What each OpenCode event means for the tasks. The event hook never throws: a failure is logged
// and the event dropped (the reconcile recovers a missed ending).

import type { Event, Part } from "../host/types.js";
import { abortQuietly, getBusySessions, log } from "../host/client.js";
import { activeDirectories, sessionDirectory } from "../worktree/hub.js";
import type { TaskManager } from "./task-manager.js";
import { publishTaskState } from "./publish.js";
import { observeSteer } from "./steer.js";
import { isActive, isRunning } from "./types.js";
import { onQuestion, personWaitChanged } from "./questions.js";
import { onSessionUpdated } from "./requests.js";

/** The plugin's event hook. Resolves when the work the event set off is done (tests wait on it). */
export async function handleEvent(manager: TaskManager, event: Event): Promise<void> {
  if (manager.isDisposed) return;
  try {
    // A parent's busy/idle is recorded the moment it arrives, even while start-up still runs: it is newer
    // than any snapshot asked for before it (parent-busy.ts). (Before the task file is loaded nobody is
    // a parent yet; the start-up snapshot, asked for after that, is newer anyway.)
    const state = sessionState(event);
    if (state && manager.registry.isParent(state.sessionID)) manager.notices.recordParentState(state.sessionID, !state.idle);
    await manager.ready();
    await dispatch(manager, event);
  } catch (error) {
    log(manager.client, "error", `offshoot event ${event?.type} failed: ${(error as Error).message}`);
  }
}

function sessionState(event: Event): { sessionID: string; idle: boolean } | undefined {
  if (event.type === "session.status") return { sessionID: event.properties.sessionID, idle: event.properties.status.type === "idle" };
  if (event.type === "session.idle") return { sessionID: event.properties.sessionID, idle: true };
  return undefined;
}

async function dispatch(manager: TaskManager, event: Event): Promise<void> {
  observeSteer(manager, event); // messages sent into running tasks: confirmed, refused, counted (steer.ts)
  switch (event.type) {
    case "session.status":
      return onSessionState(manager, event.properties.sessionID, event.properties.status.type === "idle");
    case "session.idle":
      return onSessionState(manager, event.properties.sessionID, true);
    case "session.error":
      return onSessionError(manager, event.properties.sessionID, event.properties.error);
    case "message.part.updated":
      return onPart(manager, event.properties.part);
    case "message.updated": {
      const info = event.properties.info;
      if (info.role !== "assistant") return;
      const entry = manager.registry.ofChild(info.sessionID);
      if (entry && isRunning(entry.task.status)) manager.watchdog.assistantMessage(entry, info);
      return;
    }
    case "permission.asked":
    case "permission.replied":
      return onPermission(manager, event);
    case "question.asked":
    case "question.replied":
    case "question.rejected":
      return onQuestion(manager, event);
    case "session.updated":
      return onSessionUpdated(manager, event.properties.sessionID, event.properties.info); // a TUI request (requests.ts)
    case "session.deleted":
      return onSessionDeleted(manager, event.properties.sessionID ?? event.properties.info?.id);
    default:
      return;
  }
}

async function onSessionState(manager: TaskManager, sessionID: string, idle: boolean): Promise<void> {
  const work: Promise<void>[] = [];
  // (its state was recorded in handleEvent) an idle parent gets what waited for it
  if (idle && manager.registry.isParent(sessionID)) work.push(manager.notices.flush(sessionID));
  const entry = manager.registry.ofChild(sessionID);
  if (idle && entry && isRunning(entry.task.status)) work.push(manager.checkCompletion(entry.task));
  await Promise.all(work);
}

type SessionError = Extract<Event, { type: "session.error" }>["properties"]["error"];

async function onSessionError(manager: TaskManager, sessionID: string | undefined, error: SessionError): Promise<void> {
  const entry = sessionID ? manager.registry.ofChild(sessionID) : undefined;
  if (!entry || !error || !isRunning(entry.task.status)) return;
  entry.runtime.lastError = `${error.name}: ${(error.data as { message?: string })?.message ?? ""}`.trim();
  // A rejected prompt sends session.error and no idle; an abort's idle follows and settles it.
  if (error.name === "MessageAbortedError") return;
  const busy = await getBusySessions(manager.client, activeDirectories());
  if (!busy.has(entry.task.sessionID)) await manager.checkCompletion(entry.task, { stalledReason: manager.stalledReason(entry.task) });
}

function onPart(manager: TaskManager, part: Part): void {
  if (part.type !== "tool") return;
  const entry = manager.registry.ofChild(part.sessionID);
  if (!entry) return;
  entry.task.lastTool = part.tool;
  // Counted once per call, when its input is known (pending parts carry none yet).
  if (part.state.status === "pending" || entry.runtime.seenCalls.has(part.callID)) return;
  entry.runtime.seenCalls.add(part.callID);
  entry.task.toolCalls += 1;
  if (isRunning(entry.task.status)) manager.watchdog.toolCall(entry, part);
}

type PermissionEvent = Extract<Event, { type: "permission.asked" | "permission.replied" }>;

/** A child waiting for a permission waits on the user: recorded on the task (list, TUI), the deadline paused. */
function onPermission(manager: TaskManager, event: PermissionEvent): void {
  const entry = manager.registry.ofChild(event.properties.sessionID);
  if (!entry || !isActive(entry.task.status)) return;
  if (event.type === "permission.asked") {
    const { id, permission, patterns } = event.properties;
    entry.runtime.permission = { id, permission, patterns: Array.isArray(patterns) ? patterns.map(String) : [] };
  } else if (!entry.runtime.permission || entry.runtime.permission.id === event.properties.requestID) {
    entry.runtime.permission = undefined;
  }
  const waiting = entry.runtime.permission;
  personWaitChanged(manager, entry, waiting && `permission ${[waiting.permission, ...waiting.patterns].filter(Boolean).join(" ")}`);
}

/**
 * A deleted child: its agent loop keeps streaming after the delete, so it is aborted, and its task
 * ends once. A deleted parent: OpenCode deletes its children too; their loops are aborted, their
 * tasks end, and nothing is delivered to the parent again.
 */
async function onSessionDeleted(manager: TaskManager, sessionID: string | undefined): Promise<void> {
  if (!sessionID) return;
  const work: Promise<void>[] = [];
  if (manager.registry.isParent(sessionID)) {
    manager.notices.parentGone(sessionID);
    for (const { task } of manager.registry.ofParent(sessionID, { withLaunching: true })) {
      if (!isActive(task.status)) continue;
      work.push(abortQuietly(manager.client, task.sessionID, sessionDirectory(task.sessionID)).then(() => manager.finish(task, { status: "error", error: "its parent session was deleted" })));
    }
    work.push(manager.save());
  }
  const entry = manager.registry.ofChild(sessionID);
  if (entry && isActive(entry.task.status)) {
    work.push(abortQuietly(manager.client, sessionID, sessionDirectory(sessionID)).then(() => manager.finish(entry.task, { status: "error", error: "its child session was deleted" })));
  }
  await Promise.all(work);
}
