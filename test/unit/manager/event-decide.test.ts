// What each OpenCode event means (event-decide.ts), as a table: every event type the plugin handles,
// read against a registry in which the event's session is a running task's child, a parent, a
// stranger, or the child of an ended task, and the exact actions that come out. Events are the ones
// recorded on the real server (test/fixtures/recorded/events.child-lifecycle.json, the shared
// samples); where no recording exists (permissions, questions, deletes), the shape OpenCode 1.18.33
// sends (the SDK's v2 event types, /work/shared/opencode-facts.md) and nothing more.

import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Event } from "@opencode-ai/sdk/v2";
import { describe, expect, it } from "vitest";
import { type Meaning, decideForChild, decideForParent, decideOnArrival, decideRequest } from "../../../src/manager/event-decide.js";
import { TaskRegistry } from "../../../src/manager/task/registry.js";
import type { TaskInput } from "../../../src/manager/task/step.js";
import type { BackgroundTask, TaskStatus } from "../../../src/task-record.js";
import { NO_ONE_CAN_ANSWER } from "../../../src/prompts.js";
import { REQUEST_KEY, STEER_MARK } from "../../../src/task-state.js";
import { arrangeRuntime, savedTask } from "./setup.js";

const recorded = JSON.parse(readFileSync(join(import.meta.dirname, "../../fixtures/recorded/events.child-lifecycle.json"), "utf8")) as {
  parentID: string;
  children: { completed: string; aborted: string };
  events: Event[];
};
const S = recorded.children.completed; // the session every event below is about
const OTHER = recorded.children.aborted;
const PARENT = recorded.parentID;

/** The recorded event, moved onto session S when it was recorded on the other child (same shape). */
const about = (event: Event): Event => JSON.parse(JSON.stringify(event).split(OTHER).join(S));
const find = (test: (e: any) => boolean): Event => {
  const event = recorded.events.find(test);
  if (!event) throw new Error("no such recorded event");
  return about(event);
};

const busy = find((e) => e.type === "session.status" && e.properties.status.type === "busy");
const idleStatus = find((e) => e.type === "session.status" && e.properties.status.type === "idle");
const idle = find((e) => e.type === "session.idle");
const aborted = find((e) => e.type === "session.error");
const rejected: Event = { ...aborted, properties: { sessionID: S, error: { name: "UnknownError", data: { message: 'Agent not found: "nope"' } } } } as Event;
const toolPending = find((e) => e.type === "message.part.updated" && e.properties.part.type === "tool" && e.properties.part.state.status === "pending");
const toolRunning = find((e) => e.type === "message.part.updated" && e.properties.part.type === "tool" && e.properties.part.state.status === "running");
const textPart = find((e) => e.type === "message.part.updated" && e.properties.part.type === "text" && e.properties.sessionID === S);
const assistant = find((e) => e.type === "message.updated" && e.properties.info.role === "assistant" && e.properties.info.finish === "stop");
const user = find((e) => e.type === "message.updated" && e.properties.info.role === "user" && e.properties.sessionID === S);
const updated = find((e) => e.type === "session.updated" && e.properties.sessionID === S);
const info = (updated as Extract<Event, { type: "session.updated" }>).properties.info;

/** A steer: the TUI's or background_task's text part, with our mark in its metadata (task-state.ts). */
const steer = (() => {
  const e = structuredClone(textPart) as any;
  e.properties.part.metadata = { [STEER_MARK]: "steer_mark_1" };
  return e as Event;
})();
/** The TUI's discard request: session.updated with the child's whole metadata (ours: offshoot + offshootRequest). */
const request: Event = {
  ...updated,
  properties: {
    sessionID: S,
    info: { ...info, metadata: { offshoot: { v: 1, taskId: "bg_child", parentSessionID: PARENT }, [REQUEST_KEY]: { kind: "discard", id: "req_1" } } },
  },
} as Event;
const deleted: Event = { id: "evt_deleted", type: "session.deleted", properties: { sessionID: S, info } } as Event;
const permissionAsked: Event = {
  id: "evt_perm",
  type: "permission.asked",
  properties: {
    id: "per_1",
    sessionID: S,
    permission: "bash",
    patterns: ["rm -rf build"],
    metadata: {},
    always: [],
    tool: { messageID: "msg_1", callID: "call_1" },
  },
} as Event;
const permissionReplied: Event = { id: "evt_perm_r", type: "permission.replied", properties: { sessionID: S, requestID: "per_1", reply: "once" } } as Event;
const DB = {
  question: "Which database should I use?",
  header: "Database",
  options: [
    { label: "PostgreSQL", description: "relational" },
    { label: "SQLite", description: "a file" },
  ],
};
const questionAsked: Event = {
  id: "evt_q",
  type: "question.asked",
  properties: { id: "que_1", sessionID: S, questions: [DB], tool: { messageID: "msg_1", callID: "call_1" } },
} as Event;
const questionReplied: Event = {
  id: "evt_q_r",
  type: "question.replied",
  properties: { sessionID: S, requestID: "que_1", answers: [["PostgreSQL"]] },
} as Event;
const questionRejected: Event = { id: "evt_q_x", type: "question.rejected", properties: { sessionID: S, requestID: "que_1" } } as Event;

function task(id: string, sessionID: string, parentSessionID: string, status: TaskStatus): BackgroundTask {
  return savedTask({ id, sessionID, parentSessionID, description: id, status, ownerPid: process.pid });
}

/** The four registries: S is a running task's child, a parent (of a running task), nobody we know, an ended task's child. */
type Role = "child" | "parent" | "stranger" | "ended";
function registry(role: Role, prepare?: (registry: TaskRegistry) => void): TaskRegistry {
  const r = new TaskRegistry();
  if (role === "child") r.add(task("bg_child", S, PARENT, "running"));
  if (role === "parent") r.add(task("bg_kid", OTHER, S, "running"));
  if (role === "stranger") r.add(task("bg_other", OTHER, PARENT, "running"));
  if (role === "ended") r.add(task("bg_done", S, PARENT, "completed"));
  prepare?.(r);
  return r;
}

/** Once ready, as the manager's event hook does them: for a parent, a person, a task's child; each list ends at its drop. */
function decideEvent(event: Event, r: TaskRegistry, policy: "ask" | "deny"): Meaning[] {
  const upToDrop = (list: Meaning[]) => list.slice(0, list.findIndex((m) => "drop" in m) + 1 || list.length);
  return [decideForParent(event, r), decideRequest(event), decideForChild(event, r, policy)].flatMap(upToDrop);
}

/** Both moments, as the manager's event hook does them: on arrival, then (unless the event was dropped) once ready. */
function decide(event: Event, r: TaskRegistry, policy: "ask" | "deny" = "ask"): Meaning[] {
  const arrival = decideOnArrival(event, r);
  return arrival.some((a) => "drop" in a) ? arrival : [...arrival, ...decideEvent(event, r, policy)];
}

const part = (event: Event) => (event as Extract<Event, { type: "message.part.updated" }>).properties.part;
const toolArgs = (part(toolRunning) as Extract<ReturnType<typeof part>, { type: "tool" }>).state.input;
/** what the event means for the task: its step's input (task-step.ts) */
const input = (i: TaskInput, taskId = "bg_child"): Meaning => ({ taskId, input: i });
const refusedByError = (why: string, taskId = "bg_child"): Meaning =>
  input({ kind: "steers-refused", reason: `the child session reported an error: ${why}` }, taskId);
const refusedByDelete = (taskId: string): Meaning => input({ kind: "steers-refused", reason: "its child session was deleted" }, taskId);
const deletedEnd = (taskId: string, whose: "child" | "parent"): Meaning =>
  input({ kind: "abort", ending: { status: "error", error: `its ${whose} session was deleted` } }, taskId);
/** The parent's own inputs (parent/step.ts): `busy`/`idle` heard on arrival, `flush` its idle once ready, `gone`. */
const parent = (call: "busy" | "idle" | "flush" | "gone"): Meaning => ({
  parent: S,
  input: call === "flush" ? { kind: "idle" } : call === "gone" ? { kind: "gone" } : { kind: "heard", busy: call === "busy" },
});
const tuiRequest: Meaning = { tuiRequest: { kind: "discard", id: "req_1" }, sessionID: S, parentSessionID: PARENT };

const table: [string, Event, Record<Role, Meaning[]>][] = [
  ["session.status busy", busy, { child: [], parent: [parent("busy")], stranger: [], ended: [] }],
  [
    "session.status idle",
    idleStatus,
    {
      child: [input({ kind: "child-idle" })],
      parent: [parent("idle"), parent("flush")],
      stranger: [],
      ended: [],
    },
  ],
  [
    "session.idle",
    idle,
    {
      child: [input({ kind: "child-idle" })],
      parent: [parent("idle"), parent("flush")],
      stranger: [],
      ended: [],
    },
  ],
  [
    "session.error, an abort (its idle follows and settles it)",
    aborted,
    {
      child: [refusedByError("MessageAbortedError: Aborted"), input({ kind: "child-error", error: "MessageAbortedError: Aborted", stalled: false })],
      // (steers wait only on a task's child: nothing waits on another session)
      parent: [],
      stranger: [],
      ended: [refusedByError("MessageAbortedError: Aborted", "bg_done")],
    },
  ],
  [
    "session.error, a rejected prompt (no idle follows)",
    rejected,
    {
      child: [
        refusedByError('UnknownError: Agent not found: "nope"'),
        input({ kind: "child-error", error: 'UnknownError: Agent not found: "nope"', stalled: true }),
      ],
      parent: [],
      stranger: [],
      ended: [refusedByError('UnknownError: Agent not found: "nope"', "bg_done")],
    },
  ],
  [
    "message.part.updated, a tool part still pending (no input yet: not counted)",
    toolPending,
    {
      child: [input({ kind: "tool-seen", tool: "probe_tool" })],
      parent: [],
      stranger: [],
      ended: [input({ kind: "tool-seen", tool: "probe_tool" }, "bg_done")],
    },
  ],
  [
    "message.part.updated, a tool part running",
    toolRunning,
    {
      // (watched only while its task works: the step decides)
      child: [input({ kind: "tool-seen", tool: "probe_tool", callID: "call_10", args: toolArgs })],
      parent: [],
      stranger: [],
      ended: [input({ kind: "tool-seen", tool: "probe_tool", callID: "call_10", args: toolArgs }, "bg_done")],
    },
  ],
  ["message.part.updated, a text part", textPart, { child: [], parent: [], stranger: [], ended: [] }],
  [
    "message.part.updated, a stored steer (its mark)",
    steer,
    {
      child: [input({ kind: "steer-stored", mark: "steer_mark_1" })],
      parent: [],
      stranger: [],
      ended: [input({ kind: "steer-stored", mark: "steer_mark_1" }, "bg_done")],
    },
  ],
  [
    "message.updated, an assistant message",
    assistant,
    {
      // (its usage while its task counts it, a fork's receipt: the step decides)
      child: [input({ kind: "assistant-message", info: (assistant as any).properties.info })],
      parent: [],
      stranger: [],
      ended: [input({ kind: "assistant-message", info: (assistant as any).properties.info }, "bg_done")],
    },
  ],
  ["message.updated, a user message", user, { child: [], parent: [], stranger: [], ended: [] }],
  [
    "permission.asked",
    permissionAsked,
    {
      child: [input({ kind: "permission", permission: { id: "per_1", permission: "bash", patterns: ["rm -rf build"] } })],
      parent: [],
      stranger: [],
      ended: [],
    },
  ],
  [
    "permission.asked with no id (it could not be answered) and a pattern that is not text: recorded as the TUI reads it, i.e. not at all",
    { ...permissionAsked, properties: { ...(permissionAsked as { properties: object }).properties, id: "", patterns: [7] } } as Event,
    { child: [], parent: [], stranger: [], ended: [] },
  ],
  [
    "permission.replied (none recorded: nothing to clear, the state is published again)",
    permissionReplied,
    { child: [input({ kind: "permission", permission: undefined })], parent: [], stranger: [], ended: [] },
  ],
  [
    "question.asked (policy ask)",
    questionAsked,
    {
      child: [input({ kind: "question", question: { id: "que_1", questions: [DB] } })],
      parent: [],
      stranger: [],
      ended: [],
    },
  ],
  ["question.replied (no question recorded)", questionReplied, { child: [], parent: [], stranger: [], ended: [] }],
  ["question.rejected (no question recorded)", questionRejected, { child: [], parent: [], stranger: [], ended: [] }],
  ["session.updated, no request in it", updated, { child: [], parent: [], stranger: [], ended: [] }],
  [
    "session.updated, the TUI's discard request (requests.ts acts on it once, whoever runs the session)",
    request,
    {
      child: [tuiRequest],
      parent: [tuiRequest],
      stranger: [tuiRequest],
      ended: [tuiRequest],
    },
  ],
  [
    "session.deleted",
    deleted,
    {
      child: [refusedByDelete("bg_child"), deletedEnd("bg_child", "child")],
      parent: [parent("gone"), deletedEnd("bg_kid", "parent")],
      stranger: [],
      ended: [refusedByDelete("bg_done")],
    },
  ],
];

describe("what an OpenCode event means (event-decide.ts)", () => {
  for (const [name, event, expected] of table) {
    for (const role of ["child", "parent", "stranger", "ended"] as const) {
      it(`${name}: S is ${role === "child" ? "a running task's child" : role === "parent" ? "a parent" : role === "stranger" ? "no session of ours" : "an ended task's child"}`, () => {
        expect(decide(event, registry(role))).toEqual(expected[role]);
      });
    }
  }

  it("only a parent's busy/idle is read on arrival (before start-up is done); everything else once the manager is ready", () => {
    const r = registry("parent");
    expect(decideOnArrival(idle, r)).toEqual([parent("idle")]);
    expect(decideEvent(idle, r, "ask")).toEqual([parent("flush")]);
    expect(decideOnArrival(deleted, r)).toEqual([]);
    expect(decideOnArrival(steer, registry("child"))).toEqual([]);
  });

  it("a queued task (not running yet) is not checked on idle, but a person's wait and a delete still reach it", () => {
    const r = new TaskRegistry();
    r.add(task("bg_queued", S, PARENT, "queued"));
    expect(decide(idle, r)).toEqual([]);
    expect(decide(permissionAsked, r)).toEqual([
      input({ kind: "permission", permission: { id: "per_1", permission: "bash", patterns: ["rm -rf build"] } }, "bg_queued"),
    ]);
    expect(decide(deleted, r)).toEqual([refusedByDelete("bg_queued"), deletedEnd("bg_queued", "child")]);
  });

  it("a tool call already counted is only shown again (the server repeats a part's event as its state changes)", () => {
    const r = registry("child", (r) => arrangeRuntime(r.get("bg_child")!).seenCalls.add("call_10"));
    expect(decide(toolRunning, r)).toEqual([input({ kind: "tool-seen", tool: "probe_tool" })]);
  });

  it("a deleted parent ends only its tasks that have not ended, those still launching included", () => {
    const r = registry("parent", (r) => {
      r.add(task("bg_launching", "ses_launching", S, "running"), { launching: true });
      r.add(task("bg_settled", "ses_settled", S, "completed"));
      r.add(task("bg_waiting", "", S, "queued")); // a queued task whose child is not created yet
    });
    expect(
      decide(deleted, r)
        .filter((a) => "input" in a && a.input.kind === "abort")
        .map((a) => (a as { taskId: string }).taskId),
    ).toEqual(["bg_kid", "bg_launching", "bg_waiting"]);
  });

  it("a permission replied: cleared when it is the recorded one; another id leaves it waiting and says so again", () => {
    const waiting = { id: "per_0", permission: "edit", patterns: ["src/a.ts"] };
    const other = registry("child", (r) => (arrangeRuntime(r.get("bg_child")!).permission = waiting));
    expect(decide(permissionReplied, other)).toEqual([input({ kind: "permission", permission: waiting })]);
    const same = registry("child", (r) => (arrangeRuntime(r.get("bg_child")!).permission = { ...waiting, id: "per_1" }));
    expect(decide(permissionReplied, same)).toEqual([input({ kind: "permission", permission: undefined })]);
  });

  it("a question answered or refused elsewhere ends the recorded wait; another question's answer changes nothing", () => {
    const r = registry("child", (r) => (arrangeRuntime(r.get("bg_child")!).question = { id: "que_1", questions: [{ question: DB.question, options: [] }] }));
    const cleared = [input({ kind: "question", question: undefined })];
    expect(decide(questionReplied, r)).toEqual(cleared);
    expect(decide(questionRejected, r)).toEqual(cleared);
    const another = { ...questionReplied, properties: { ...(questionReplied as any).properties, requestID: "que_9" } } as Event;
    expect(decide(another, r)).toEqual([]);
  });

  it("where nobody can answer (questions: deny) the question is answered at once, one answer per question, nothing recorded", () => {
    const two = { ...questionAsked, properties: { ...(questionAsked as any).properties, questions: [DB, { question: "Which port?", options: [] }] } } as Event;
    expect(decide(two, registry("child"), "deny")).toEqual([
      input({ kind: "unanswerable", requestID: "que_1", answers: [[NO_ONE_CAN_ANSWER], [NO_ONE_CAN_ANSWER]] }),
    ]);
    expect(decide(two, registry("ended"), "deny")).toEqual([]);
  });

  it("a question.asked it cannot read, a request it does not know, events it does not handle: nothing", () => {
    const r = registry("child");
    expect(decide({ ...questionAsked, properties: { sessionID: S, id: "que_2", questions: [] } } as Event, r)).toEqual([]);
    const unknown = { ...request, properties: { sessionID: S, info: { ...info, metadata: { [REQUEST_KEY]: { kind: "merge", id: "req_2" } } } } } as Event;
    expect(decide(unknown, r)).toEqual([]);
    for (const event of recorded.events.filter((e) => ["session.created", "session.diff", "message.part.delta"].includes(e.type)))
      expect(decide(about(event), r)).toEqual([]);
  });

  it("never throws: an event it cannot read ends the list with a drop, after what was decided before the bad field", () => {
    const r = registry("child");
    for (const bad of [
      undefined,
      null,
      {},
      { type: "session.status" },
      { type: "session.status", properties: {} },
      { type: "message.part.updated", properties: { part: null } },
    ]) {
      const actions = decide(bad as never, r);
      expect(actions.every((a) => "drop" in a)).toBe(true);
    }
    expect(decide({ type: "session.status", properties: {} } as never, r)).toEqual([{ drop: "Cannot read properties of undefined (reading 'type')" }]);
    // a tool part without its state: nothing of it is read (its tool, its count), the event is dropped
    const noState = structuredClone(toolRunning) as any;
    delete noState.properties.part.state;
    expect(decide(noState, r)).toEqual([{ drop: "Cannot read properties of undefined (reading 'status')" }]);
    // after what was decided before the bad field: a parent's idle recorded on arrival, then its status unreadable
    let reads = 0;
    const flaky = {
      type: "session.status",
      properties: {
        sessionID: S,
        status: {
          get type() {
            if (reads++ > 0) throw new Error("unreadable");
            return "idle";
          },
        },
      },
    } as never;
    // (read for the parent and again for a child: each audience's list ends at its own drop)
    expect(decide(flaky, registry("parent"))).toEqual([parent("idle"), { drop: "unreadable" }, { drop: "unreadable" }]);
    expect(decide({ type: "server.connected", properties: {} } as never, r)).toEqual([]);
  });

  it("changes nothing it reads", () => {
    const r = registry("child", (r) => (arrangeRuntime(r.get("bg_child")!).permission = { id: "per_0", permission: "edit", patterns: [] }));
    const entry = r.get("bg_child")!;
    const before = structuredClone({ task: entry.task, permission: entry.runtime.permission, seen: [...entry.runtime.seenCalls] });
    for (const [, event] of table) decide(event, r);
    expect({ task: entry.task, permission: entry.runtime.permission, seen: [...entry.runtime.seenCalls] }).toEqual(before);
  });
});
