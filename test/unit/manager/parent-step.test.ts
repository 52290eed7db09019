// The step of a parent (parent/step.ts) and its runner (parent/notices.ts), as a table: for each input,
// from a given parent and its tasks, what the parent's record holds after it and what the rest of the
// plugin saw, in order (the parent's calls to the server, the tasks' inputs, the log, a delivery started).
// Then each effect of each row of PARENT_EFFECTS is removed from the table in turn, and a row's
// expectation must fail: no effect in the table goes unseen by a test. Then the decision of what is
// owed next (owedNext), as a table of its own.

import { describe, expect, it } from "vitest";
import { MAX_DELIVERY_ATTEMPTS } from "../../../src/constants.js";
import type { Client } from "../../../src/host/client.js";
import { ParentNotices } from "../../../src/manager/parent/notices.js";
import {
  NEW_PARENT,
  type Owed,
  PARENT_EFFECTS,
  type ParentEffect,
  type ParentInput,
  type ParentState,
  type ParentTable,
  type Row as TableRow,
  owedNext,
} from "../../../src/manager/parent/step.js";
import { type TaskEntry, TaskRegistry } from "../../../src/manager/task/registry.js";
import type { BackgroundTask } from "../../../src/task-record.js";
import { arrangeRuntime, savedTask } from "./setup.js";

const PARENT = "ses_parent";
const IDLE = { busy: false, at: 0 };

/** A task of the parent: its record's fields, and the runtime fields the parent's side reads. */
type TaskSpec = Partial<BackgroundTask> & { fromFile?: boolean; noticeFailures?: number; wrappingUp?: boolean };

/** What the server answers the parent's one call: stored, a failure (500), or gone (404). */
type Answer = "sent" | "failed" | "gone";

interface Seen {
  calls: string[];
  state?: Partial<ParentState>;
}

interface Row {
  name: string;
  state?: Partial<ParentState>;
  tasks?: TaskSpec[];
  /** the input, built from the parent's entries (bg_a, bg_b, … in that order) */
  input: (entries: TaskEntry[]) => ParentInput;
  answer?: Answer;
  /** what a read of the parent's messages returns: these texts as user messages */
  messages?: string[];
  expected: Seen;
}

const ended = (spec: TaskSpec = {}): TaskSpec => ({ status: "completed", completedAt: 3, ...spec });
const noticeOf = (entries: TaskEntry[], i = 0): Owed => ({ kind: "notice", entry: entries[i]! });
const wakeFor = (entries: TaskEntry[]): Owed => ({ kind: "wake", report: entries });
const BOOM = new Error("boom");

const ROWS: Row[] = [
  // ─── its events and the server's word ───
  {
    name: "heard: an event says it is idle (stamped)",
    input: () => ({ kind: "heard", busy: false }),
    expected: { calls: [], state: { said: { busy: false, at: 1 } } },
  },
  {
    name: "snapshot, newer than the word: taken, and what waited goes",
    state: { said: { busy: true, at: 2 } },
    input: () => ({ kind: "snapshot", snapshot: { busy: new Set(), requestedAt: 5 } }),
    expected: { calls: ["deliver"], state: { said: { busy: false, at: 5 } } },
  },
  {
    name: "snapshot, older than an event: not taken (the delivery still looks)",
    state: { said: { busy: true, at: 9 } },
    input: () => ({ kind: "snapshot", snapshot: { busy: new Set(), requestedAt: 5 } }),
    expected: { calls: ["deliver"], state: { said: { busy: true, at: 9 } } },
  },
  { name: "idle: what waited for it goes", state: { said: IDLE }, input: () => ({ kind: "idle" }), expected: { calls: ["deliver"] } },
  {
    name: "gone: everything owed to it is done (saved on each task)",
    state: { said: IDLE, owedWake: true, owedBudget: "B" },
    tasks: [ended(), {}],
    input: () => ({ kind: "gone" }),
    expected: {
      calls: ["task bg_a parent-gone", "task bg_b parent-gone"],
      state: { gone: true, owedWake: false, owedBudget: undefined, said: undefined },
    },
  },
  // ─── its tasks ───
  {
    name: "task-ended: its last running task: a wake is owed, and it is delivered",
    tasks: [ended()],
    input: ([a]) => ({ kind: "task-ended", entry: a!, wake: true, deliver: true }),
    expected: { calls: ["deliver"], state: { owedWake: true } },
  },
  {
    name: "task-ended: a sibling still runs: no wake yet",
    tasks: [ended(), {}],
    input: ([a]) => ({ kind: "task-ended", entry: a!, wake: true, deliver: true }),
    expected: { calls: ["deliver"], state: { owedWake: false } },
  },
  {
    name: "task-ended: a failure wakes it even while a sibling runs",
    tasks: [ended({ status: "error" }), {}],
    input: ([a]) => ({ kind: "task-ended", entry: a!, wake: true, deliver: true }),
    expected: { calls: ["deliver"], state: { owedWake: true } },
  },
  {
    name: "task-ended: a cancel it asked for is no news (reported first, before any delivery; nothing to wake it for)",
    tasks: [ended({ status: "cancelled", cancelledByParent: true })],
    input: ([a]) => ({ kind: "task-ended", entry: a!, wake: true, deliver: true }),
    expected: { calls: ["task bg_a reported", "deliver"], state: { owedWake: false } },
  },
  {
    name: "task-ended: start-up recovery (no wake, delivered later)",
    tasks: [ended({ status: "interrupted" })],
    input: ([a]) => ({ kind: "task-ended", entry: a!, wake: false, deliver: false }),
    expected: { calls: [], state: { owedWake: false } },
  },
  {
    name: "task-ended: not for a parent that is gone",
    state: { gone: true },
    tasks: [ended({ status: "error" })],
    input: ([a]) => ({ kind: "task-ended", entry: a!, wake: true, deliver: true }),
    expected: { calls: ["deliver"], state: { owedWake: false } },
  },
  {
    name: "budget-reached: owed, outstanding, delivered",
    input: () => ({ kind: "budget-reached", text: "B" }),
    expected: { calls: ["outstanding", "deliver"], state: { owedBudget: "B" } },
  },
  {
    name: "budget-reached: not for a parent that is gone",
    state: { gone: true },
    input: () => ({ kind: "budget-reached", text: "B" }),
    expected: { calls: [], state: { owedBudget: undefined } },
  },
  // ─── the delivery: what is owed goes, and its outcome ───
  {
    name: "sending check: its messages read; a notice found there counts as delivered",
    state: { said: IDLE },
    tasks: [ended({ fromFile: true }), ended({ fromFile: true })],
    input: (entries) => ({ kind: "sending", owed: { kind: "check", queued: entries } }),
    messages: ['[background task bg_a completed] "saved"'],
    expected: { calls: ["read ses_parent", "task bg_a notice-sent"], state: { checkedOldNotices: true } },
  },
  {
    name: "sending notice: stored in its words (noReply), then recorded",
    state: { said: IDLE },
    tasks: [ended({ parentAgent: "build" })],
    input: (entries) => ({ kind: "sending", owed: noticeOf(entries) }),
    expected: { calls: ['notice to ses_parent by build: [background task bg_a completed] "saved"', "task bg_a notice-sent"] },
  },
  {
    name: "sending notice, a failure: counted, and the delivery stops (the reconcile retries)",
    state: { said: IDLE },
    tasks: [ended()],
    input: (entries) => ({ kind: "sending", owed: noticeOf(entries) }),
    answer: "failed",
    expected: {
      calls: [
        'notice to ses_parent by -: [background task bg_a completed] "saved"',
        "task bg_a notice-failed",
        "threw notifying session ses_parent failed (HTTP 500): E: boom",
      ],
    },
  },
  {
    name: "sending notice, a 404: the parent is gone",
    state: { said: IDLE },
    tasks: [ended()],
    input: (entries) => ({ kind: "sending", owed: noticeOf(entries) }),
    answer: "gone",
    expected: { calls: ['notice to ses_parent by -: [background task bg_a completed] "saved"', "task bg_a parent-gone"], state: { gone: true } },
  },
  {
    name: "sending budget: no longer owed before it goes (never twice)",
    state: { said: IDLE, owedBudget: "[background budget] reached" },
    tasks: [ended({ parentAgent: "plan" })],
    input: () => ({ kind: "sending", owed: { kind: "budget", text: "[background budget] reached" } }),
    expected: { calls: ["notice to ses_parent by plan: [background budget] reached"], state: { owedBudget: undefined } },
  },
  {
    name: "sending wake: it makes the parent busy, and reports what it tells",
    state: { said: IDLE, owedWake: true, wakeFailures: 2 },
    tasks: [ended(), ended()],
    input: (entries) => ({ kind: "sending", owed: wakeFor(entries) }),
    expected: {
      calls: ["wake ses_parent", "task bg_a reported", "task bg_b reported"],
      state: { owedWake: false, wakeFailures: 0, said: { busy: true, at: 1 }, waking: undefined },
    },
  },
  {
    name: "sending wake, nothing to report (the parent read every result itself): no wake",
    state: { said: IDLE, owedWake: true },
    input: () => ({ kind: "sending", owed: wakeFor([]) }),
    expected: { calls: [], state: { owedWake: false, said: IDLE } },
  },
  {
    name: "sent check, no notice there",
    tasks: [ended({ fromFile: true })],
    input: (entries) => ({ kind: "sent", owed: { kind: "check", queued: entries }, messages: [] }),
    expected: { calls: [] },
  },
  { name: "sent budget", input: () => ({ kind: "sent", owed: { kind: "budget", text: "B" } }), expected: { calls: [] } },
  {
    name: "failed check: the delivery stops (its messages are not read again)",
    state: { checkedOldNotices: true },
    tasks: [ended({ fromFile: true })],
    input: (entries) => ({ kind: "failed", owed: { kind: "check", queued: entries }, error: BOOM }),
    expected: { calls: ["threw boom"], state: { checkedOldNotices: true } },
  },
  {
    name: "failed notice, its last attempt: given up, and counted as delivered",
    tasks: [ended({ noticeFailures: MAX_DELIVERY_ATTEMPTS - 1 })],
    input: (entries) => ({ kind: "failed", owed: noticeOf(entries), error: BOOM }),
    expected: {
      calls: [
        "task bg_a notice-failed",
        `log error: giving up on the notice of task bg_a after ${MAX_DELIVERY_ATTEMPTS} attempts: boom`,
        "task bg_a notice-sent",
      ],
    },
  },
  {
    name: "failed budget: a warning, never sent again",
    input: () => ({ kind: "failed", owed: { kind: "budget", text: "B" }, error: BOOM }),
    expected: { calls: ["log warn: the budget notice of session ses_parent was not delivered: boom"] },
  },
  {
    name: "failed wake: its busy mark undone, counted, the delivery stops",
    state: { said: { busy: true, at: 4 }, waking: 4, owedWake: true, wakeFailures: 1 },
    tasks: [ended()],
    input: (entries) => ({ kind: "failed", owed: wakeFor(entries), error: BOOM }),
    expected: { calls: ["threw boom"], state: { said: { busy: false, at: 4 }, waking: undefined, wakeFailures: 2, owedWake: true } },
  },
  {
    name: "failed wake, its last attempt: given up, what it would have told reported",
    state: { said: { busy: true, at: 4 }, waking: 4, owedWake: true, wakeFailures: MAX_DELIVERY_ATTEMPTS - 1 },
    tasks: [ended()],
    input: (entries) => ({ kind: "failed", owed: wakeFor(entries), error: BOOM }),
    expected: {
      calls: [`log error: giving up on waking session ses_parent after ${MAX_DELIVERY_ATTEMPTS} attempts: boom`, "task bg_a reported"],
      state: { said: { busy: false, at: 4 }, wakeFailures: 0, owedWake: false },
    },
  },
];

/** The parent's tasks as registry entries, bg_a, bg_b, … in launch order. */
function entriesOf(specs: TaskSpec[] = []): TaskEntry[] {
  const registry = new TaskRegistry();
  return specs.map(({ fromFile, noticeFailures, wrappingUp, ...task }, i) => {
    const entry = registry.add(savedTask({ ownerPid: 1, id: `bg_${"abcdefgh"[i]}`, callID: `call_${i}`, parentSessionID: PARENT, ...task }), {
      fromFile: Boolean(fromFile),
    });
    Object.assign(arrangeRuntime(entry), { noticeFailures: noticeFailures ?? 0, wrappingUp: Boolean(wrappingUp) });
    return entry;
  });
}

/** A client that records the parent's calls and answers each as `answer` says. */
function fakeClient(calls: string[], answer: Answer, messages: string[]): Client {
  const reply = () =>
    answer === "sent"
      ? { data: {}, response: { status: 200 } }
      : { error: { name: "E", data: { message: "boom" } }, response: { status: answer === "gone" ? 404 : 500 } };
  const firstLine = (body: { parts: { text: string }[] }) => body.parts[0]!.text.split("\n")[0];
  return {
    session: {
      prompt: async (o: { path: { id: string }; body: { noReply?: boolean; agent?: string; parts: { text: string }[] } }) => {
        calls.push(`${o.body.noReply ? "notice" : "prompt"} to ${o.path.id} by ${o.body.agent ?? "-"}: ${firstLine(o.body)}`);
        return reply();
      },
      promptAsync: async (o: { path: { id: string } }) => (calls.push(`wake ${o.path.id}`), reply()),
      messages: async (o: { path: { id: string } }) => {
        calls.push(`read ${o.path.id}`);
        if (answer !== "sent") return reply();
        return { data: messages.map((text) => ({ info: { role: "user", time: { created: 10 } }, parts: [{ type: "text", text }] })) };
      },
    },
    app: { log: async (o: { body: { level: string; message: string } }) => (calls.push(`log ${o.body.level}: ${o.body.message}`), {}) },
  } as unknown as Client;
}

/** Runs the row's input through the real runner (its delivery in flight recorded, not run); what it saw. */
async function play(row: Row, table: ParentTable = PARENT_EFFECTS): Promise<Seen> {
  const calls: string[] = [];
  const entries = entriesOf(row.tasks);
  const notices = new ParentNotices({
    client: fakeClient(calls, row.answer ?? "sent", row.messages ?? []),
    now: () => 5_000,
    tasksOf: () => entries,
    parents: () => [PARENT],
    dispatch: async (entry, input) => (calls.push(`task ${entry.task.id} ${input.kind}`), true),
    outstandingChanged: () => calls.push("outstanding"),
    table,
  });
  notices.flush = async () => void calls.push("deliver");
  const records = (notices as unknown as { records: Map<string, { state: ParentState }> }).records;
  records.set(PARENT, { state: { ...NEW_PARENT, ...row.state } });
  await notices.input(PARENT, row.input(entries)).catch((error: Error) => calls.push(`threw ${error.message}`));
  const seen: Seen = { calls };
  const state = records.get(PARENT)!.state;
  if (row.expected.state) seen.state = Object.fromEntries(Object.keys(row.expected.state).map((k) => [k, state[k as keyof ParentState]]));
  return seen;
}

/** The table row an input is read from (the rows the effects test plays for it). */
const rowOf = (input: ParentInput): TableRow =>
  input.kind === "sending" || input.kind === "sent" || input.kind === "failed" ? `${input.kind} ${input.owed.kind}` : input.kind;

describe("a parent's step and its runner (parent/step.ts, parent/notices.ts)", () => {
  for (const row of ROWS) {
    it(row.name, async () => {
      expect(await play(row)).toEqual(row.expected);
    });
  }

  it("every row of the table has a test row", () => {
    const rows = new Set(ROWS.map((r) => rowOf(r.input(entriesOf(r.tasks)))));
    // (a send's outcome is played through the row that sends it: "sending notice" runs "sent notice")
    for (const r of ["sent notice", "sent wake", "failed notice", "failed wake"] as const) rows.add(r);
    for (const key of Object.keys(PARENT_EFFECTS)) expect(rows, key).toContain(key);
  });
});

describe("no effect of the parent's table goes unseen", () => {
  const pairs: { row: TableRow; effect: ParentEffect }[] = [];
  for (const [row, effects] of Object.entries(PARENT_EFFECTS)) for (const effect of effects) pairs.push({ row: row as TableRow, effect });

  for (const { row, effect } of pairs) {
    it(`${row} without ${effect}: a row above fails`, async () => {
      const table = { ...PARENT_EFFECTS, [row]: PARENT_EFFECTS[row].filter((e) => e !== effect) };
      const failed: string[] = [];
      for (const r of ROWS) {
        try {
          expect(await play(r, table)).toEqual(r.expected); // the row's own assertion, as above
        } catch {
          failed.push(r.name);
        }
      }
      expect(failed.length, `removing ${effect} from ${row} went unseen`).toBeGreaterThan(0);
    });
  }
});

describe("what is owed next (owedNext): notices first, then the budget's notice, then the wake; nothing while busy or gone", () => {
  const cases: { name: string; state: Partial<ParentState>; tasks: TaskSpec[]; owed: string | undefined }[] = [
    { name: "a busy parent: nothing", state: { said: { busy: true, at: 1 }, owedWake: true }, tasks: [ended()], owed: undefined },
    { name: "nobody said anything yet: nothing", state: { owedBudget: "B" }, tasks: [], owed: undefined },
    { name: "a gone parent: nothing", state: { said: IDLE, gone: true, owedWake: true }, tasks: [ended()], owed: undefined },
    {
      name: "a task read from the file is owed a notice: its messages checked first",
      state: { said: IDLE },
      tasks: [ended(), ended({ fromFile: true })],
      owed: "check bg_a bg_b",
    },
    {
      name: "checked already: the first notice, in launch order",
      state: { said: IDLE, checkedOldNotices: true },
      tasks: [ended({ fromFile: true }), ended()],
      owed: "notice bg_a",
    },
    { name: "the check does not wait for an idle parent", state: { said: { busy: true, at: 1 } }, tasks: [ended({ fromFile: true })], owed: "check bg_a" },
    {
      name: "delivered or reported already: the budget's notice before the wake",
      state: { said: IDLE, owedBudget: "B", owedWake: true },
      tasks: [ended({ notifiedRun: 1 })],
      owed: "budget",
    },
    {
      name: "the wake, with the runs it reports",
      state: { said: IDLE, owedWake: true },
      tasks: [ended({ notifiedRun: 1 }), ended({ notifiedRun: 1, reportedRun: 1 })],
      owed: "wake bg_a",
    },
    {
      name: "a run still committing on its branch is no notice yet",
      state: { said: IDLE, owedWake: true },
      tasks: [ended({ wrappingUp: true })],
      owed: "wake",
    },
    { name: "a running task is owed nothing", state: { said: IDLE }, tasks: [{}], owed: undefined },
  ];
  const show = (owed: Owed | undefined): string | undefined => {
    if (!owed) return undefined;
    const ids = (list: readonly TaskEntry[]) => list.map((e) => ` ${e.task.id}`).join("");
    if (owed.kind === "check") return `check${ids(owed.queued)}`;
    if (owed.kind === "notice") return `notice ${owed.entry.task.id}`;
    if (owed.kind === "wake") return `wake${ids(owed.report)}`;
    return owed.kind;
  };
  for (const c of cases) {
    it(c.name, () => {
      expect(show(owedNext({ ...NEW_PARENT, ...c.state }, entriesOf(c.tasks)))).toBe(c.owed);
    });
  }
});
