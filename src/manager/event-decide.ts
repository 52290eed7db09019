// What an OpenCode event means for the tasks. Pure: the event and a read-only view of the registry go
// in, a list of meanings (data) comes out; no I/O, no change to anything, never a throw (an event that
// cannot be read ends its list with a `drop`). The manager's event hook (event-hook.ts)
// does them in order.
//
// An event speaks to three audiences, each with its own decider here and its own way in the hook:
// - a task's child (`decideForChild`): what the event means for the task is an input of its step
//   (task/step.ts); what it writes and everything that follows (a completion check, the watchdog, a
//   steer's sender told, an abort, a question answered for nobody) is that input's row of the step's table;
// - a parent (`decideOnArrival`: its busy/idle, recorded at once, even while start-up still runs;
//   `decideForParent`: its idle, when what waited for it may go, and its deletion): inputs of the
//   parent's step (parent/step.ts), and the aborts of a deleted parent's tasks (their steps' inputs);
// - a person (`decideRequest`): the TUI's request in a session's metadata (requests/tui.ts).
// Everything but the arrival is decided once the manager is ready, from the registry as start-up left it.

import type { Event, Part, Session } from "../host/types.js";
import type { QuestionPolicy } from "../options.js";
import { NO_ONE_CAN_ANSWER } from "../prompts.js";
import { parsePermission, parseQuestionAsked } from "../child-waits.js";
import { type PermissionWait, type QuestionWait, REQUEST_KEY, REQUEST_KINDS, type RequestKind, STEER_MARK, type TaskRequest } from "../task-state.js";
import type { TaskInput } from "./task/step.js";
import type { ParentInput } from "./parent/step.js";
import { describeError } from "../host/client.js";
import { type RelayRequest, parseRelayRequest } from "../remote-protocol.js";
import { type BackgroundTask, isMoving, isOpen, isWorking } from "../task-record.js";

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

/** An input of one task's step (task/step.ts). */
export type TaskMeaning = { taskId: string; input: TaskInput };
/** The event could not be read; the log says why. What came before it in its list still happens. */
export type Drop = { drop: string };
/** An input of the parent's own step (parent/step.ts: `heard` busy or idle, `idle` once ready, `gone` for good), or an input of one of its tasks. */
export type ParentMeaning = { parent: string; input: ParentEventInput } | TaskMeaning;
export type ParentEventInput = Extract<ParentInput, { kind: "heard" | "idle" | "gone" }>;
/** A TUI request in a child's metadata (requests/tui.ts; `parentSessionID` as the metadata names it). */
export type RequestMeaning =
  | { tuiRequest: TaskRequest; sessionID: string; parentSessionID?: string }
  /** a remote parent's request in its relay session here (requests/relay.ts), with the session's metadata as it came */
  | { relayRequest: RelayRequest; sessionID: string; metadata: Record<string, unknown> };
export type Meaning = ParentMeaning | RequestMeaning | Drop;

/** On arrival: a parent's busy/idle is recorded at once (it is newer than any snapshot asked for before it). */
export function decideOnArrival(event: Event, tasks: RegistryView): (ParentMeaning | Drop)[] {
  return collect((out) => {
    const state = sessionState(event);
    if (state && tasks.isParent(state.sessionID)) out.push({ parent: state.sessionID, input: { kind: "heard", busy: !state.idle } });
  });
}

/** Once the manager is ready, for a parent: it went idle (what waited for it may go); a deleted one is gone, and its tasks end. */
export function decideForParent(event: Event, tasks: RegistryView): (ParentMeaning | Drop)[] {
  return collect((out) => {
    const state = sessionState(event);
    if (state?.idle && tasks.isParent(state.sessionID)) out.push({ parent: state.sessionID, input: { kind: "idle" } });
    if (event.type === "session.deleted") onParentDeleted(out, tasks, event.properties.sessionID ?? event.properties.info?.id);
  });
}

/** Once the manager is ready, for a person: the TUI's request in a session's metadata, if it holds one. */
export function decideRequest(event: Event): (RequestMeaning | Drop)[] {
  return collect((out) => {
    if (event.type === "session.updated") onSessionUpdated(out, event.properties.sessionID, event.properties.info);
  });
}

/** Once the manager is ready, for a task's child: what the event means for its task, as its step's inputs in order. */
export function decideForChild(event: Event, tasks: RegistryView, questions: QuestionPolicy): (TaskMeaning | Drop)[] {
  return collect((out) => {
    steerMeanings(out, event, tasks);
    childMeanings(out, event, tasks, questions);
  });
}

/** What was decided, in order; reading a malformed event stops there with a `drop` (what came before it still happens). */
function collect<T>(decide: (out: T[]) => void): (T | Drop)[] {
  const out: (T | Drop)[] = [];
  try {
    decide(out as T[]);
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
function steerMeanings(out: TaskMeaning[], event: Event, tasks: RegistryView): void {
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

function childMeanings(out: TaskMeaning[], event: Event, tasks: RegistryView, questions: QuestionPolicy): void {
  switch (event.type) {
    case "session.status":
      return onChildState(out, tasks, event.properties.sessionID, event.properties.status.type === "idle");
    case "session.idle":
      return onChildState(out, tasks, event.properties.sessionID, true);
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
    case "session.deleted":
      return onChildDeleted(out, tasks, event.properties.sessionID ?? event.properties.info?.id);
    default:
      return;
  }
}

/** An idle running child is checked (completion.ts). */
function onChildState(out: TaskMeaning[], tasks: RegistryView, sessionID: string, idle: boolean): void {
  const entry = tasks.ofChild(sessionID);
  if (idle && entry && isWorking(entry.task.status)) out.push({ taskId: entry.task.id, input: { kind: "child-idle" } });
}

type SessionError = Extract<Event, { type: "session.error" }>["properties"]["error"];

function onSessionError(out: TaskMeaning[], tasks: RegistryView, sessionID: string | undefined, error: SessionError): void {
  const entry = sessionID ? tasks.ofChild(sessionID) : undefined;
  if (!entry || !error || !isWorking(entry.task.status)) return;
  // A rejected prompt sends session.error and no idle: it stalled. An abort's idle follows and settles it.
  const text = `${error.name}: ${(error.data as { message?: string })?.message ?? ""}`.trim();
  out.push({ taskId: entry.task.id, input: { kind: "child-error", error: text, stalled: error.name !== "MessageAbortedError" } });
}

function onPart(out: TaskMeaning[], tasks: RegistryView, part: Part): void {
  if (part.type !== "tool") return;
  const entry = tasks.ofChild(part.sessionID);
  if (!entry) return;
  // Counted once per call, when its input is known (pending parts carry none yet); a running task's is watched (the step).
  const counts = part.state.status !== "pending" && !entry.runtime.seenCalls.has(part.callID);
  out.push({ taskId: entry.task.id, input: { kind: "tool-seen", tool: part.tool, ...(counts ? { callID: part.callID, args: part.state.input } : {}) } });
}

type PermissionEvent = Extract<Event, { type: "permission.asked" | "permission.replied" }>;

/** A child waiting for a permission waits on the user: recorded on the task (list, TUI), the deadline paused. */
function onPermission(out: TaskMeaning[], tasks: RegistryView, event: PermissionEvent): void {
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

type QuestionEvent = Extract<Event, { type: "question.asked" | "question.replied" | "question.rejected" }>;

/**
 * A question's event for a task's child (the whole way of a question: questions.ts). Asked: recorded
 * where a person can answer (policy "ask"), or answered at once for nobody ("deny": a reply, not a
 * rejection, since a rejected question ends the child's turn). Replied or rejected: the recorded wait,
 * if it still stands, is cleared (an answer from background_output cleared it already).
 */
function onQuestion(out: TaskMeaning[], tasks: RegistryView, event: QuestionEvent, policy: QuestionPolicy): void {
  const entry = tasks.ofChild(event.properties.sessionID);
  if (!entry || !isMoving(entry.task.status)) return;
  const taskId = entry.task.id;
  if (event.type === "question.asked") {
    const wait = parseQuestionAsked(event.properties);
    if (!wait) return;
    // (the reply's own question.replied event finds no recorded wait: nothing else changes)
    if (policy === "deny") out.push({ taskId, input: { kind: "unanswerable", requestID: wait.id, answers: wait.questions.map(() => [NO_ONE_CAN_ANSWER]) } });
    else out.push({ taskId, input: { kind: "question", question: wait } });
  } else if (entry.runtime.question?.id === event.properties.requestID) out.push({ taskId, input: { kind: "question", question: undefined } });
}

const MAX_REQUEST_ID_CHARS = 200;

/** The TUI's request in a session's metadata (task-state.ts `offshootRequest`), if it is one this half acts on. */
export function parseRequest(metadata: unknown): TaskRequest | undefined {
  const raw = metadata && typeof metadata === "object" ? (metadata as Record<string, unknown>)[REQUEST_KEY] : undefined;
  if (!raw || typeof raw !== "object") return undefined;
  const { kind, id, child, at, requestID, reply } = raw as Record<string, unknown>;
  if (!REQUEST_KINDS.includes(kind as RequestKind) || typeof id !== "string" || id.length === 0 || id.length > MAX_REQUEST_ID_CHARS) return undefined;
  // (a permission's reply: which request, and the reply; nothing else is one)
  if (kind === "permission") {
    if (typeof requestID !== "string" || !requestID || requestID.length > MAX_REQUEST_ID_CHARS) return undefined;
    if (reply !== "once" && reply !== "always" && reply !== "reject") return undefined;
    if (child !== undefined) return undefined;
    return { kind, id, requestID, reply };
  }
  if (child === undefined) return { kind: kind as RequestKind, id };
  // (written into the parent session, about one of its children: both fields, or it is no request)
  if (typeof child !== "string" || child.length === 0 || child.length > MAX_REQUEST_ID_CHARS || typeof at !== "number" || !Number.isFinite(at))
    return undefined;
  return { kind: kind as RequestKind, id, child, at };
}

/** A `session.updated` event: a request in a child's metadata goes to requests/tui.ts (acted on once there). */
function onSessionUpdated(out: RequestMeaning[], sessionID: string, info: Session | undefined): void {
  // a remote parent's request, in its relay session (the remote task's parent here)
  const relayRequest = parseRelayRequest(info?.metadata);
  if (relayRequest) return void out.push({ relayRequest, sessionID, metadata: { ...(info?.metadata as Record<string, unknown>) } });
  const request = parseRequest(info?.metadata);
  if (!request) return;
  // a request written into the parent session about one of its children (a task whose worktree directory was freed)
  if (request.child !== undefined) return void out.push({ tuiRequest: request, sessionID: request.child, parentSessionID: sessionID });
  const parent = (info?.metadata?.offshoot as { parentSessionID?: unknown } | undefined)?.parentSessionID;
  out.push({ tuiRequest: request, sessionID, ...(typeof parent === "string" ? { parentSessionID: parent } : {}) });
}

/**
 * A deleted parent: OpenCode deletes its children too; their loops are aborted, their tasks end, and
 * nothing is delivered to the parent again. (What was owed to it is saved by its tasks' `parent-gone`
 * steps; each end saves itself.)
 */
function onParentDeleted(out: ParentMeaning[], tasks: RegistryView, sessionID: string | undefined): void {
  if (!sessionID || !tasks.isParent(sessionID)) return;
  out.push({ parent: sessionID, input: { kind: "gone" } });
  for (const { task } of tasks.ofParent(sessionID, { withLaunching: true })) {
    if (!isOpen(task.status)) continue;
    out.push({ taskId: task.id, input: { kind: "abort", ending: { status: "error", error: "its parent session was deleted" } } });
  }
}

/** A deleted child: its agent loop keeps streaming after the delete, so it is aborted, and its task ends once. */
function onChildDeleted(out: TaskMeaning[], tasks: RegistryView, sessionID: string | undefined): void {
  const entry = sessionID ? tasks.ofChild(sessionID) : undefined;
  if (entry && isOpen(entry.task.status)) {
    out.push({ taskId: entry.task.id, input: { kind: "abort", ending: { status: "error", error: "its child session was deleted" } } });
  }
}
