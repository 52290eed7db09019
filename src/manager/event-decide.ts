// What an OpenCode event means for the tasks. Pure: the event and a read-only view of the registry go
// in, a list of meanings (data) comes out; no I/O, no change to anything, never a throw (an event that
// cannot be read ends its list with a `drop`). The manager's event hook (task-manager.ts handleEvent)
// does them in order. What an event means for a task is an input of the task's step (task-step.ts):
// what it writes and everything that follows (a completion check, the watchdog, a steer's sender
// told, an abort) is that input's row of the step's table. Besides those, only the calls about a
// parent itself and the TUI's requests. A child's question events are read in questions.ts (the
// whole way of a question is there).
//
// Two moments per event: on arrival (`decideOnArrival`: a parent's busy/idle, recorded at once, even
// while start-up still runs) and once the manager is ready (`decideEvent`: everything else, read from
// the registry as start-up left it).

import type { Event, Part, Session } from "../host/types.js";
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
import { type QuestionEvent, questionInputs } from "./questions.js";
import type { TaskInput } from "./task-step.js";
import { describeError } from "../host/client.js";
import { type BackgroundTask, isMoving, isOpen, isWorking } from "./types.js";

/** What the decider reads of a task: its record and the runtime fields an event's meaning depends on. */
export interface TaskView {
  readonly task: Readonly<Pick<BackgroundTask, "id" | "sessionID" | "status">>;
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

/**
 * What an event means, in the order it is done: an input of one task's step (task-step.ts: what the
 * event changes of the task, and what follows, are that input's row), a call about a parent itself
 * (notices.ts: `busy`/`idle` recorded, `flush` what waited for it, `gone` for good), a TUI request
 * in a child's metadata (requests.ts; `parentSessionID` as the metadata names it), or a `drop`: the
 * event could not be read, and the log says why.
 */
export type Meaning =
  | { taskId: string; input: TaskInput }
  | { parent: string; call: ParentCall }
  | { tuiRequest: TaskRequest; sessionID: string; parentSessionID?: string }
  | { drop: string };

export type ParentCall = "busy" | "idle" | "flush" | "gone";

/** On arrival: a parent's busy/idle is recorded at once (it is newer than any snapshot asked for before it). */
export function decideOnArrival(event: Event, tasks: RegistryView): Meaning[] {
  return collect((out) => {
    const state = sessionState(event);
    if (state && tasks.isParent(state.sessionID)) out.push({ parent: state.sessionID, call: state.idle ? "idle" : "busy" });
  });
}

/** Once the manager is ready: everything the event means, in the order it is done. */
export function decideEvent(event: Event, tasks: RegistryView, questions: QuestionPolicy): Meaning[] {
  return collect((out) => {
    steerMeanings(out, event, tasks);
    taskMeanings(out, event, tasks, questions);
  });
}

/** What was decided, in order; reading a malformed event stops there with a `drop` (what came before it still happens). */
function collect(decide: (out: Meaning[]) => void): Meaning[] {
  const out: Meaning[] = [];
  try {
    decide(out);
  } catch (error) {
    out.push({ drop: (error as Error)?.message ?? String(error) });
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

/** Messages sent into running tasks: stored (counted, and its sender told), refused (steer.ts). Read for every event. */
function steerMeanings(out: Meaning[], event: Event, tasks: RegistryView): void {
  if (event.type === "message.part.updated") {
    const part = event.properties.part;
    const mark = markOf(part);
    const entry = mark ? tasks.ofChild(part.sessionID) : undefined;
    if (!mark || !entry) return;
    out.push({ taskId: entry.task.id, input: { kind: "steer-stored", mark } });
  } else if (event.type === "session.error" || event.type === "session.deleted") {
    const sessionID = event.type === "session.error" ? event.properties.sessionID : (event.properties.sessionID ?? event.properties.info?.id);
    const entry = sessionID ? tasks.ofChild(sessionID) : undefined;
    if (!entry) return;
    const reason =
      event.type === "session.deleted"
        ? "its child session was deleted"
        : `the child session reported an error: ${describeError(event.properties.error ?? "unknown error")}`;
    out.push({ taskId: entry.task.id, input: { kind: "steers-refused", reason } });
  }
}

function taskMeanings(out: Meaning[], event: Event, tasks: RegistryView, questions: QuestionPolicy): void {
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
      // (its usage, while it counts, and a fork's receipt: the step decides both)
      out.push({ taskId: entry.task.id, input: { kind: "assistant-message", info } });
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
function onSessionState(out: Meaning[], tasks: RegistryView, sessionID: string, idle: boolean): void {
  if (idle && tasks.isParent(sessionID)) out.push({ parent: sessionID, call: "flush" });
  const entry = tasks.ofChild(sessionID);
  if (idle && entry && isWorking(entry.task.status)) out.push({ taskId: entry.task.id, input: { kind: "child-idle" } });
}

type SessionError = Extract<Event, { type: "session.error" }>["properties"]["error"];

function onSessionError(out: Meaning[], tasks: RegistryView, sessionID: string | undefined, error: SessionError): void {
  const entry = sessionID ? tasks.ofChild(sessionID) : undefined;
  if (!entry || !error || !isWorking(entry.task.status)) return;
  // A rejected prompt sends session.error and no idle: it stalled. An abort's idle follows and settles it.
  const text = `${error.name}: ${(error.data as { message?: string })?.message ?? ""}`.trim();
  out.push({ taskId: entry.task.id, input: { kind: "child-error", error: text, stalled: error.name !== "MessageAbortedError" } });
}

function onPart(out: Meaning[], tasks: RegistryView, part: Part): void {
  if (part.type !== "tool") return;
  const entry = tasks.ofChild(part.sessionID);
  if (!entry) return;
  // Counted once per call, when its input is known (pending parts carry none yet); a running task's is watched (the step).
  const counts = part.state.status !== "pending" && !entry.runtime.seenCalls.has(part.callID);
  out.push({ taskId: entry.task.id, input: { kind: "tool-seen", tool: part.tool, ...(counts ? { callID: part.callID, args: part.state.input } : {}) } });
}

type PermissionEvent = Extract<Event, { type: "permission.asked" | "permission.replied" }>;

/** A child waiting for a permission waits on the user: recorded on the task (list, TUI), the deadline paused. */
function onPermission(out: Meaning[], tasks: RegistryView, event: PermissionEvent): void {
  const entry = tasks.ofChild(event.properties.sessionID);
  if (!entry || !isMoving(entry.task.status)) return;
  const taskId = entry.task.id;
  if (event.type === "permission.asked") {
    const waiting = parsePermission(event.properties);
    if (waiting) out.push({ taskId, input: { kind: "permission", permission: waiting } });
  } else {
    // another request's reply leaves the recorded one waiting, and says so again (published)
    const current = entry.runtime.permission;
    const cleared = !current || current.id === event.properties.requestID;
    out.push({ taskId, input: { kind: "permission", permission: cleared ? undefined : current } });
  }
}

/** A question's event for a task's child: what questions.ts says it means (recorded, cleared, or answered for nobody). */
function onQuestion(out: Meaning[], tasks: RegistryView, event: QuestionEvent, policy: QuestionPolicy): void {
  const entry = tasks.ofChild(event.properties.sessionID);
  if (!entry || !isMoving(entry.task.status)) return;
  for (const input of questionInputs(event, entry, policy)) out.push({ taskId: entry.task.id, input });
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
function onSessionUpdated(out: Meaning[], sessionID: string, info: Session | undefined): void {
  const request = parseRequest(info?.metadata);
  if (!request) return;
  // a request written into the parent session about one of its children (a task whose worktree directory was freed)
  if (request.child !== undefined) return void out.push({ tuiRequest: request, sessionID: request.child, parentSessionID: sessionID });
  const parent = (info?.metadata?.offshoot as { parentSessionID?: unknown } | undefined)?.parentSessionID;
  out.push({ tuiRequest: request, sessionID, ...(typeof parent === "string" ? { parentSessionID: parent } : {}) });
}

/**
 * A deleted child: its agent loop keeps streaming after the delete, so it is aborted, and its task
 * ends once. A deleted parent: OpenCode deletes its children too; their loops are aborted, their
 * tasks end, and nothing is delivered to the parent again.
 */
function onSessionDeleted(out: Meaning[], tasks: RegistryView, sessionID: string | undefined): void {
  if (!sessionID) return;
  if (tasks.isParent(sessionID)) {
    out.push({ parent: sessionID, call: "gone" });
    for (const { task } of tasks.ofParent(sessionID, { withLaunching: true })) {
      if (!isOpen(task.status)) continue;
      out.push({ taskId: task.id, input: { kind: "abort", ending: { status: "error", error: "its parent session was deleted" } } });
    }
    // (what was owed to it is saved by its tasks' `parent-gone` steps; each end saves itself)
  }
  const entry = tasks.ofChild(sessionID);
  if (entry && isOpen(entry.task.status)) {
    out.push({ taskId: entry.task.id, input: { kind: "abort", ending: { status: "error", error: "its child session was deleted" } } });
  }
}
