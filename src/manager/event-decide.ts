// What an OpenCode event means for the tasks. Pure: the event and a read-only view of the registry go
// in, a list of actions (data) comes out; no I/O, no change to anything, never a throw (an event that
// cannot be read ends its list with a `drop`). The manager carries the actions out in order (event-apply.ts),
// the same split as completion.ts (decideEnding) and watchdog.ts. What an event changes of a task is
// a `task` action: an input of the task's step (task-step.ts), nothing else writes it. A child's
// question events are read in questions.ts (the whole way of a question is there).
//
// Two moments per event: on arrival (`decideOnArrival`: a parent's busy/idle, recorded at once, even
// while start-up still runs) and once the manager is ready (`decideEvent`: everything else, read from
// the registry as start-up left it).

import type { AssistantMessage, Event, Part, Session } from "../host/types.js";
import type { QuestionPolicy } from "../options.js";
import {
  type PermissionWait,
  parsePermission,
  type QuestionWait,
  REQUEST_KEY,
  REQUEST_KINDS,
  type RequestKind,
  STEER_MARK,
  type TaskRequest,
} from "../task-state.js";
import { type QuestionAction, type QuestionEvent, questionActions } from "./questions.js";
import type { TaskInput } from "./task-step.js";
import { describeError } from "../host/client.js";
import type { Ending } from "./completion.js";
import { type BackgroundTask, isMoving, isOpen, isWorking, meaningOf } from "./types.js";

type ToolPart = Extract<Part, { type: "tool" }>;

/** What the decider reads of a task: its record and the runtime fields an event's meaning depends on. */
export interface TaskView {
  readonly task: Readonly<Pick<BackgroundTask, "id" | "sessionID" | "status"> & Partial<Pick<BackgroundTask, "isForked" | "receipt">>>;
  readonly runtime: {
    /** tool calls of the child already counted */
    readonly seenCalls: ReadonlySet<string>;
    /** the permission the child waits for, while it waits */
    readonly permission?: Readonly<PermissionWait>;
    /** the question the child waits to have answered, while it waits */
    readonly question?: Readonly<Pick<QuestionWait, "id">>;
  };
}

/** The registry, read-only: the lookups an event's meaning needs (TaskRegistry is one). */
export interface RegistryView {
  isParent(sessionID: string): boolean;
  /** the task whose child session this is */
  ofChild(sessionID: string): TaskView | undefined;
  /** the parent's tasks in launch order, those still launching included */
  ofParent(parent: string, options: { withLaunching: true }): readonly TaskView[];
}

export type EventAction =
  /** a parent's busy/idle, newest information first (parent-busy.ts) */
  | { kind: "record-parent-state"; parent: string; busy: boolean }
  /** an idle parent gets the notices that waited for it */
  | { kind: "flush-notices"; parent: string }
  /** a deleted parent: nothing is delivered to it again */
  | { kind: "parent-gone"; parent: string }
  /** an idle child: its messages are read, and the run ends if completion.ts says it is over */
  | { kind: "check-completion"; taskId: string }
  /**
   * what the event changes of the task: an input of its step (task-step.ts), e.g. the child's latest
   * session.error, the tool it used last (counted once per call, when its input is known), the
   * permission or question it waits on, a stored steer
   */
  | { kind: "task"; taskId: string; input: TaskInput }
  /** a rejected prompt (session.error, no idle follows): unless the server reports the child busy, its run is checked with the reason it stalled */
  | { kind: "check-stalled"; taskId: string }
  /** a tool call, for the watchdog's cap and repeat breaker (a running task only) */
  | { kind: "watch-tool-call"; taskId: string; part: ToolPart }
  /** an assistant message of a running child: its usage, spend caps, empty-answer breaker (watchdog.ts) */
  | { kind: "watch-assistant"; taskId: string; info: AssistantMessage }
  /** a finished assistant message of a forked child that has no receipt yet: its first request's cache share (receipt.ts) */
  | { kind: "record-receipt"; taskId: string; info: AssistantMessage }
  /** a question's event: its wait recorded or cleared, or (questions: "deny") answered at once for nobody (questions.ts) */
  | QuestionAction
  /** a steer's part is stored: the steer waiting for it is confirmed (steer.ts; it is counted by a `task` action) */
  | { kind: "steer-confirmed"; taskId: string; mark: string }
  /** the child failed or went away: steers in flight into it are refused with the reason (steer.ts) */
  | { kind: "steers-refused"; taskId: string; reason: string }
  /** a request of the TUI in a child's metadata (requests.ts); `parentSessionID` as the metadata names it */
  | { kind: "tui-request"; sessionID: string; request: TaskRequest; parentSessionID?: string }
  /** the task's run ends (its child aborted first when `abortFirst`) */
  | { kind: "end"; taskId: string; ending: Ending; abortFirst: boolean }
  /** the event could not be read: it is dropped, and the log says why */
  | { kind: "drop"; reason: string };

/** On arrival: a parent's busy/idle is recorded at once (it is newer than any snapshot asked for before it). */
export function decideOnArrival(event: Event, tasks: RegistryView): EventAction[] {
  return collect((out) => {
    const state = sessionState(event);
    if (state && tasks.isParent(state.sessionID)) out.push({ kind: "record-parent-state", parent: state.sessionID, busy: !state.idle });
  });
}

/** Once the manager is ready: everything the event means, in the order it is done. */
export function decideEvent(event: Event, tasks: RegistryView, questions: QuestionPolicy): EventAction[] {
  return collect((out) => {
    steerActions(out, event, tasks);
    taskActions(out, event, tasks, questions);
  });
}

/** The actions decided, in order; reading a malformed event stops there with a `drop` (what came before it still happens). */
function collect(decide: (out: EventAction[]) => void): EventAction[] {
  const out: EventAction[] = [];
  try {
    decide(out);
  } catch (error) {
    out.push({ kind: "drop", reason: (error as Error)?.message ?? String(error) });
  }
  return out;
}

function sessionState(event: Event): { sessionID: string; idle: boolean } | undefined {
  if (event.type === "session.status") return { sessionID: event.properties.sessionID, idle: event.properties.status.type === "idle" };
  if (event.type === "session.idle") return { sessionID: event.properties.sessionID, idle: true };
  return undefined;
}

/** The mark of a stored text part, if it is a steer (steer.ts). */
function markOf(part: Part): string | undefined {
  if (part.type !== "text") return undefined;
  const mark = (part.metadata as Record<string, unknown> | undefined)?.[STEER_MARK];
  return typeof mark === "string" && mark ? mark : undefined;
}

/** Messages sent into running tasks: confirmed, refused, counted (steer.ts). Read for every event. */
function steerActions(out: EventAction[], event: Event, tasks: RegistryView): void {
  if (event.type === "message.part.updated") {
    const part = event.properties.part;
    const mark = markOf(part);
    const entry = mark ? tasks.ofChild(part.sessionID) : undefined;
    if (!mark || !entry) return;
    out.push({ kind: "steer-confirmed", taskId: entry.task.id, mark });
    out.push({ kind: "task", taskId: entry.task.id, input: { kind: "steer-stored", mark } });
  } else if (event.type === "session.error" || event.type === "session.deleted") {
    const sessionID = event.type === "session.error" ? event.properties.sessionID : (event.properties.sessionID ?? event.properties.info?.id);
    const entry = sessionID ? tasks.ofChild(sessionID) : undefined;
    if (!entry) return;
    const reason =
      event.type === "session.deleted"
        ? "its child session was deleted"
        : `the child session reported an error: ${describeError(event.properties.error ?? "unknown error")}`;
    out.push({ kind: "steers-refused", taskId: entry.task.id, reason });
  }
}

function taskActions(out: EventAction[], event: Event, tasks: RegistryView, questions: QuestionPolicy): void {
  switch (event.type) {
    case "session.status":
      return onSessionState(out, tasks, event.properties.sessionID, event.properties.status.type === "idle");
    case "session.idle":
      return onSessionState(out, tasks, event.properties.sessionID, true);
    case "session.error":
      return onSessionError(out, tasks, event.properties.sessionID, event.properties.error);
    case "message.part.updated":
      return onPart(out, tasks, event.properties.part);
    case "message.updated": {
      const info = event.properties.info;
      if (info.role !== "assistant") return;
      const entry = tasks.ofChild(info.sessionID);
      if (!entry) return;
      if (entry.task.isForked && !entry.task.receipt && (info.time?.completed || info.finish))
        out.push({ kind: "record-receipt", taskId: entry.task.id, info });
      // (a paused task's too: the step its pause cut short may still be answered, and is charged)
      if (meaningOf(entry.task.status).countsUsage) out.push({ kind: "watch-assistant", taskId: entry.task.id, info });
      return;
    }
    case "permission.asked":
    case "permission.replied":
      return onPermission(out, tasks, event);
    case "question.asked":
    case "question.replied":
    case "question.rejected":
      return onQuestion(out, tasks, event as QuestionEvent, questions);
    case "session.updated":
      return onSessionUpdated(out, event.properties.sessionID, event.properties.info);
    case "session.deleted":
      return onSessionDeleted(out, tasks, event.properties.sessionID ?? event.properties.info?.id);
    default:
      return;
  }
}

/** (a parent's state was recorded on arrival) An idle parent gets what waited for it; an idle running child is checked. */
function onSessionState(out: EventAction[], tasks: RegistryView, sessionID: string, idle: boolean): void {
  if (idle && tasks.isParent(sessionID)) out.push({ kind: "flush-notices", parent: sessionID });
  const entry = tasks.ofChild(sessionID);
  if (idle && entry && isWorking(entry.task.status)) out.push({ kind: "check-completion", taskId: entry.task.id });
}

type SessionError = Extract<Event, { type: "session.error" }>["properties"]["error"];

function onSessionError(out: EventAction[], tasks: RegistryView, sessionID: string | undefined, error: SessionError): void {
  const entry = sessionID ? tasks.ofChild(sessionID) : undefined;
  if (!entry || !error || !isWorking(entry.task.status)) return;
  out.push({
    kind: "task",
    taskId: entry.task.id,
    input: { kind: "child-error", error: `${error.name}: ${(error.data as { message?: string })?.message ?? ""}`.trim() },
  });
  // A rejected prompt sends session.error and no idle; an abort's idle follows and settles it.
  if (error.name === "MessageAbortedError") return;
  out.push({ kind: "check-stalled", taskId: entry.task.id });
}

function onPart(out: EventAction[], tasks: RegistryView, part: Part): void {
  if (part.type !== "tool") return;
  const entry = tasks.ofChild(part.sessionID);
  if (!entry) return;
  const taskId = entry.task.id;
  // Counted once per call, when its input is known (pending parts carry none yet).
  const counts = part.state.status !== "pending" && !entry.runtime.seenCalls.has(part.callID);
  out.push({ kind: "task", taskId, input: { kind: "tool-seen", tool: part.tool, ...(counts ? { callID: part.callID } : {}) } });
  if (counts && isWorking(entry.task.status)) out.push({ kind: "watch-tool-call", taskId, part });
}

type PermissionEvent = Extract<Event, { type: "permission.asked" | "permission.replied" }>;

/** A child waiting for a permission waits on the user: recorded on the task (list, TUI), the deadline paused. */
function onPermission(out: EventAction[], tasks: RegistryView, event: PermissionEvent): void {
  const entry = tasks.ofChild(event.properties.sessionID);
  if (!entry || !isMoving(entry.task.status)) return;
  const taskId = entry.task.id;
  if (event.type === "permission.asked") {
    const waiting = parsePermission(event.properties);
    if (waiting) out.push({ kind: "task", taskId, input: { kind: "permission", permission: waiting } });
  } else {
    // another request's reply leaves the recorded one waiting, and says so again (published)
    const current = entry.runtime.permission;
    const cleared = !current || current.id === event.properties.requestID;
    out.push({ kind: "task", taskId, input: { kind: "permission", permission: cleared ? undefined : current } });
  }
}

/** A question's event for a task's child: what questions.ts says it means (recorded, cleared, or answered for nobody). */
function onQuestion(out: EventAction[], tasks: RegistryView, event: QuestionEvent, policy: QuestionPolicy): void {
  const entry = tasks.ofChild(event.properties.sessionID);
  if (!entry || !isMoving(entry.task.status)) return;
  out.push(...questionActions(event, entry, policy));
}

const MAX_REQUEST_ID_CHARS = 200;

/** The TUI's request in a session's metadata (task-state.ts `offshootRequest`), if it is one this half acts on. */
export function parseRequest(metadata: unknown): TaskRequest | undefined {
  const raw = metadata && typeof metadata === "object" ? (metadata as Record<string, unknown>)[REQUEST_KEY] : undefined;
  if (!raw || typeof raw !== "object") return undefined;
  const { kind, id, child, at } = raw as Record<string, unknown>;
  if (!REQUEST_KINDS.includes(kind as RequestKind) || typeof id !== "string" || id.length === 0 || id.length > MAX_REQUEST_ID_CHARS) return undefined;
  if (child === undefined) return { kind: kind as RequestKind, id };
  // (written into the parent session, about one of its children: both fields, or it is no request)
  if (typeof child !== "string" || child.length === 0 || child.length > MAX_REQUEST_ID_CHARS || typeof at !== "number" || !Number.isFinite(at))
    return undefined;
  return { kind: kind as RequestKind, id, child, at };
}

/** A `session.updated` event: a request in a child's metadata goes to requests.ts (acted on once there). */
function onSessionUpdated(out: EventAction[], sessionID: string, info: Session | undefined): void {
  const request = parseRequest(info?.metadata);
  if (!request) return;
  // a request written into the parent session about one of its children (a task whose worktree directory was freed)
  if (request.child !== undefined) return void out.push({ kind: "tui-request", sessionID: request.child, request, parentSessionID: sessionID });
  const parent = (info?.metadata?.offshoot as { parentSessionID?: unknown } | undefined)?.parentSessionID;
  out.push({ kind: "tui-request", sessionID, request, ...(typeof parent === "string" ? { parentSessionID: parent } : {}) });
}

/**
 * A deleted child: its agent loop keeps streaming after the delete, so it is aborted, and its task
 * ends once. A deleted parent: OpenCode deletes its children too; their loops are aborted, their
 * tasks end, and nothing is delivered to the parent again.
 */
function onSessionDeleted(out: EventAction[], tasks: RegistryView, sessionID: string | undefined): void {
  if (!sessionID) return;
  if (tasks.isParent(sessionID)) {
    out.push({ kind: "parent-gone", parent: sessionID });
    for (const { task } of tasks.ofParent(sessionID, { withLaunching: true })) {
      if (!isOpen(task.status)) continue;
      out.push({ kind: "end", taskId: task.id, ending: { status: "error", error: "its parent session was deleted" }, abortFirst: true });
    }
    // (what was owed to it is saved by its tasks' `parent-gone` steps; each end saves itself)
  }
  const entry = tasks.ofChild(sessionID);
  if (entry && isOpen(entry.task.status)) {
    out.push({ kind: "end", taskId: entry.task.id, ending: { status: "error", error: "its child session was deleted" }, abortFirst: true });
  }
}
