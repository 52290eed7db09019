// The step of a task (task-step.ts) and its runner (task-runner.ts), as a table: for each input, from
// a given task, what the task and its runtime hold after it and what the rest of the plugin saw, in
// order (the runner's host records each call: a save, a publish, a toast, the queue, the notice…).
// Then each effect of each row is removed from the table in turn, and the row's expectation must
// fail: no effect in the table goes unseen by a test.

import { isDeepStrictEqual } from "node:util";
import { describe, expect, it } from "vitest";
import { TaskRegistry, type TaskEntry } from "../../../src/manager/task/registry.js";
import { type RunnerHost, runStep } from "../../../src/manager/task/runner.js";
import { DEFAULT_TABLE, type Effect, type EffectTable, INPUT_EFFECTS, type TaskInput, edge, step } from "../../../src/manager/task/step.js";
import { EDGES, type Edge } from "../../../src/manager/task/transitions.js";
import type { BackgroundTask } from "../../../src/task-record.js";
import { arrangeRuntime, savedTask } from "./setup.js";

const NOW = 5_000;
const WORKTREE = { repo: "/r", path: "/w", directory: "/w", branch: "offshoot/bg_saved001", base: "b0", parentHead: "b0", linked: [] };
const CHANGES = { files: ["a.ts"], fileCount: 1, insertions: 2, deletions: 0 };

/** What a row observes: the host's calls in order, then the fields it names. */
interface Seen {
  calls: string[];
  task?: Partial<BackgroundTask>;
  runtime?: Record<string, unknown>;
}

interface Row {
  name: string;
  task: Partial<BackgroundTask>;
  /** runtime fields before the input */
  runtime?: Partial<TaskEntry["runtime"]>;
  input: TaskInput;
  options?: { wake?: boolean; deliver?: boolean };
  expected: Seen;
}

const WAITS = { lastError: "E", answer: "A", noticeFailures: 2, stopReason: "S" };
const WAITER = () => {};
/** a child's first finished assistant message: 10 of its 12 input tokens read from the cache */
const ASSISTANT = {
  id: "msg_a",
  sessionID: "ses_saved001",
  role: "assistant",
  time: { created: 1, completed: 2 },
  finish: "stop",
  tokens: { input: 2, output: 5, reasoning: 0, cache: { read: 10, write: 0 } },
  cost: 0,
} as never;

const REMOTE = { name: "b", relay: "ses_relay", session: "ses_there", root: "/srv/clone", directory: "/srv/wt", run: 1 };
const WAIT = { name: "b", base: "a".repeat(40), parentHead: "b".repeat(40), repo: "/repo", projectDir: "/repo" };
const REMOTE_WORKTREE = {
  repo: "/repo",
  path: "/wt/bg_1",
  directory: "/wt/bg_1",
  branch: "offshoot/bg_1",
  base: "a".repeat(40),
  parentHead: "b".repeat(40),
  linked: [],
};
const REMOTE_USAGE = { input: 4, output: 2, reasoning: 0, cacheRead: 0, cacheWrite: 0, cost: 0 };

const ROWS: Row[] = [
  // ─── the edges (transitions.ts) ───
  {
    name: "start: a queued task's turn",
    task: { status: "queued", queuedBecause: "wait" },
    input: edge("start", {}),
    expected: { calls: ["watchdog armed", "timer", "save running", "publish running"], task: { status: "running", startedAt: NOW, queuedBecause: undefined } },
  },
  {
    name: "queue: a resumed run waits for a slot",
    task: { status: "resumed", run: 2 },
    input: edge("queue", { queuedPrompt: "go on", queuedBecause: "1 running" }),
    expected: { calls: ["save queued", "publish queued"], task: { status: "queued", queuedPrompt: "go on" } },
  },
  {
    name: "requeue: at start-up, a start cut before its child existed",
    task: { status: "running", sessionID: "" },
    input: edge("requeue", { queuedBecause: "OpenCode stopped" }),
    expected: { calls: ["save queued"], task: { status: "queued", queuedBecause: "OpenCode stopped" } },
  },
  {
    name: "resume: an ended task's new run",
    task: { status: "completed", completedAt: 3_000 },
    runtime: WAITS,
    input: edge("resume", { callID: "call_2", agent: "general", model: undefined }),
    expected: {
      calls: ["parent busy ses_parent", "save resumed", "timer", "publish resumed", "toast Background task started"],
      task: { status: "resumed", run: 2, startedAt: NOW, completedAt: undefined },
      runtime: { lastError: undefined, answer: undefined, noticeFailures: 0, stopReason: undefined },
    },
  },
  {
    name: "rollback: the resume's prompt was refused",
    task: { status: "resumed", run: 2 },
    input: edge("rollback", { previous: savedTask({ ownerPid: 1, status: "completed", run: 1 }) }),
    expected: { calls: ["save completed", "publish completed"], task: { status: "completed", run: 1 } },
  },
  {
    name: "finish: the run ended",
    task: { status: "running" },
    runtime: { ...WAITS, permission: { id: "p", permission: "bash", patterns: [] } },
    input: edge("finish", { ending: { status: "completed", answer: "the answer" } }),
    options: { wake: false },
    expected: {
      calls: [
        "watchdog disarmed",
        "save completed",
        "waiter released",
        "toast Background task completed",
        "publish completed",
        "timer",
        "queue fill",
        "notice wake=false deliver=true",
      ],
      task: { status: "completed", completedAt: NOW },
      runtime: { answer: "the answer", lastError: undefined, permission: undefined, bookkeeping: 0 },
    },
  },
  {
    name: "finish: a worktree task's run is committed before anybody is told",
    task: { status: "running", worktree: WORKTREE },
    input: edge("finish", { ending: { status: "completed" } }),
    expected: {
      calls: [
        "watchdog disarmed",
        "commit the run (wrappingUp)",
        "save completed (wrappingUp)",
        "overlaps",
        "save completed",
        "waiter released",
        "toast Background task completed",
        "publish completed",
        "timer",
        "queue fill",
        "notice wake=true deliver=true",
      ],
      task: { worktree: { ...WORKTREE, head: "h1", changes: CHANGES } },
      runtime: { wrappingUp: false },
    },
  },
  {
    name: "finish: while its launch is in flight (the launch's commit tells the parent)",
    task: { status: "running" },
    runtime: { launching: true },
    input: edge("finish", { ending: { status: "error", error: "boom" } }),
    expected: { calls: ["watchdog disarmed", "save error", "waiter released", "toast Background task error", "publish error"], task: { status: "error" } },
  },
  {
    name: "interrupt: OpenCode stops (saved, nothing published: the next start tells)",
    task: { status: "running" },
    input: edge("interrupt", { reason: "stopped" }),
    expected: { calls: ["watchdog disarmed", "save interrupted", "waiter released"], task: { status: "interrupted", error: "stopped", completedAt: NOW } },
  },
  {
    name: "pause: the parent's budget is reached",
    task: { status: "running" },
    input: edge("pause", { reason: "budget" }),
    expected: {
      calls: ["watchdog disarmed", "save paused", "waiter released", "publish paused", "timer", "queue fill"],
      task: { status: "paused", error: "budget" },
    },
  },
  {
    name: "continue: a person's Continue",
    task: { status: "paused", error: "budget" },
    runtime: WAITS,
    input: edge("continue", { prompt: "Continue" }),
    expected: {
      calls: ["save queued", "publish queued", "timer", "queue fill"],
      task: { status: "queued", queuedPrompt: "Continue", error: undefined, run: 1 },
      runtime: { noticeFailures: 0, stopReason: undefined },
    },
  },
  // ─── the other inputs ───
  {
    name: "claimed, from open.json",
    task: { ownerPid: 7 },
    input: { kind: "claimed", pid: 99 },
    expected: { calls: ["save running"], task: { ownerPid: 99 } },
  },
  {
    name: "claimed, a settled task read from the history (its next run's edge saves it)",
    task: { ownerPid: 7, status: "completed", run: 1, notifiedRun: 1 },
    input: { kind: "claimed", pid: 99 },
    expected: { calls: [], task: { ownerPid: 99 } },
  },
  {
    name: "launch-begun: its parent is the one asking",
    task: {},
    runtime: { launching: true },
    input: { kind: "launch-begun" },
    expected: { calls: ["parent busy ses_parent"] },
  },
  {
    name: "launch-abandoned: its waiters are let go",
    task: {},
    runtime: { launching: true },
    input: { kind: "launch-abandoned" },
    expected: { calls: ["waiter released"] },
  },
  {
    name: "child-created: the state it was created with holds (the next save records the child)",
    task: { status: "queued", sessionID: "" },
    runtime: { childPlan: { title: "t" } },
    input: { kind: "child-created", sessionID: "ses_new", createdAs: "queued" },
    expected: { calls: ["index ses_new"], task: { sessionID: "ses_new" }, runtime: { childPlan: undefined } },
  },
  {
    name: "child-created: its task started meanwhile (saved, then published anew)",
    task: { status: "running", sessionID: "" },
    input: { kind: "child-created", sessionID: "ses_new", createdAs: "queued" },
    expected: { calls: ["index ses_new", "save running", "publish running"], task: { sessionID: "ses_new" } },
  },
  {
    name: "child-created: during its launch (the launch's commit saves and tells)",
    task: { status: "error", sessionID: "" },
    runtime: { launching: true },
    input: { kind: "child-created", sessionID: "ses_new", createdAs: "running" },
    expected: { calls: ["index ses_new"], task: { sessionID: "ses_new" } },
  },
  {
    name: "child-created: adopted at start-up",
    task: { status: "queued", sessionID: "" },
    input: { kind: "child-created", sessionID: "ses_new" },
    expected: { calls: ["index ses_new"], task: { sessionID: "ses_new" } },
  },
  {
    name: "launch-committed, running",
    task: { status: "running" },
    runtime: { launching: true },
    input: { kind: "launch-committed" },
    expected: { calls: ["watchdog armed", "save running", "timer", "toast Background task started"], runtime: { launching: false } },
  },
  {
    name: "launch-committed, queued",
    task: { status: "queued" },
    runtime: { launching: true },
    input: { kind: "launch-committed" },
    expected: { calls: ["save queued", "timer", "toast Background task started", "queue fill"] },
  },
  {
    name: "launch-committed, ended while launching",
    task: { status: "error" },
    runtime: { launching: true },
    input: { kind: "launch-committed" },
    expected: { calls: ["save error", "timer", "toast Background task started", "notice wake=true deliver=true"] },
  },
  { name: "prompt-sending", task: { startedAt: 1 }, input: { kind: "prompt-sending" }, expected: { calls: [], task: { startedAt: NOW } } },
  {
    name: "prompt-sent",
    task: { queuedPrompt: "p" },
    input: { kind: "prompt-sent" },
    expected: { calls: ["save running"], task: { queuedPrompt: undefined } },
  },
  {
    name: "tool-seen, a new call of a running task (watched)",
    task: { toolCalls: 3 },
    input: { kind: "tool-seen", tool: "bash", callID: "c1", args: { command: "ls" } },
    expected: { calls: ['watch call bash {"command":"ls"}'], task: { toolCalls: 4, lastTool: "bash" }, runtime: { seenCalls: ["c1"] } },
  },
  {
    name: "tool-seen, a new call of an ended task (counted and shown, never watched)",
    task: { status: "completed", toolCalls: 3 },
    input: { kind: "tool-seen", tool: "bash", callID: "c1", args: {} },
    expected: { calls: [], task: { toolCalls: 4, lastTool: "bash" }, runtime: { seenCalls: ["c1"] } },
  },
  {
    name: "tool-seen, a call counted already",
    task: { toolCalls: 3 },
    runtime: { seenCalls: new Set(["c1"]) },
    input: { kind: "tool-seen", tool: "read", callID: "c1" },
    expected: { calls: [], task: { toolCalls: 3, lastTool: "read" } },
  },
  { name: "child-idle: its run is checked", task: {}, input: { kind: "child-idle" }, expected: { calls: ["check"] } },
  {
    name: "child-error, an abort (its idle follows)",
    task: {},
    input: { kind: "child-error", error: "E", stalled: false },
    expected: { calls: [], runtime: { lastError: "E" } },
  },
  {
    name: "child-error, a rejected prompt (no idle follows: checked now, with the error kept first)",
    task: {},
    input: { kind: "child-error", error: "E", stalled: true },
    expected: { calls: ["check stalled (E)"], runtime: { lastError: "E" } },
  },
  {
    name: "abort: its child was deleted (aborted first, its requests held; then its run ends)",
    task: { status: "running" },
    input: { kind: "abort", ending: { status: "error", error: "its child session was deleted" } },
    expected: {
      calls: [
        "abort ses_missing (running)",
        "watchdog disarmed",
        "save error",
        "waiter released",
        "toast Background task error",
        "publish error",
        "timer",
        "queue fill",
        "notice wake=true deliver=true",
      ],
      task: { status: "error", error: "its child session was deleted", completedAt: NOW },
    },
  },
  {
    name: "abort: a task that ended already (nothing to abort)",
    task: { status: "completed" },
    input: { kind: "abort", ending: { status: "error", error: "its child session was deleted" } },
    expected: { calls: [], task: { status: "completed" } },
  },
  {
    name: "assistant-message, a running task's (the watchdog takes it)",
    task: {},
    input: { kind: "assistant-message", info: ASSISTANT },
    expected: { calls: ["watch message msg_a"], task: { receipt: undefined } },
  },
  {
    name: "assistant-message, a finished step of a task a remote parent launched (shown: its parent reads what it spent)",
    task: { relay: { gitRemote: "origin" } },
    input: { kind: "assistant-message", info: ASSISTANT },
    expected: { calls: ["watch message msg_a", "publish running"], task: { receipt: undefined } },
  },
  {
    name: "assistant-message, an unfinished one of a task a remote parent launched (not shown yet)",
    task: { relay: { gitRemote: "origin" } },
    input: { kind: "assistant-message", info: { ...(ASSISTANT as object), time: { created: 1 }, finish: undefined } as never },
    expected: { calls: ["watch message msg_a"], task: { receipt: undefined } },
  },
  {
    name: "assistant-message, a fork's first finished one (its receipt saved and shown, after the watchdog took it)",
    task: { isForked: true },
    input: { kind: "assistant-message", info: ASSISTANT },
    expected: { calls: ["watch message msg_a", "save running", "publish running"], task: { receipt: { kind: "text", read: 10, input: 12 } } },
  },
  {
    name: "assistant-message, an ended fork's (its receipt only)",
    task: { status: "completed", isForked: true },
    input: { kind: "assistant-message", info: ASSISTANT },
    expected: { calls: ["save completed", "publish completed"], task: { receipt: { kind: "text", read: 10, input: 12 } } },
  },
  {
    name: "assistant-message, a fork with its receipt already",
    task: { status: "completed", isForked: true, receipt: { kind: "native", read: 1, input: 1 } },
    input: { kind: "assistant-message", info: ASSISTANT },
    expected: { calls: [], task: { receipt: { kind: "native", read: 1, input: 1 } } },
  },
  {
    name: "permission asked",
    task: {},
    input: { kind: "permission", permission: { id: "p1", permission: "bash", patterns: ["ls"] } },
    expected: {
      calls: ["deadline paused: permission bash: ls", "person waiter released", "publish running"],
      runtime: { permission: { id: "p1", permission: "bash", patterns: ["ls"] } },
    },
  },
  {
    name: "question answered",
    task: {},
    runtime: { question: { id: "q1", questions: [{ question: "Which?", options: [] }] } },
    input: { kind: "question", question: undefined },
    expected: { calls: ["deadline runs", "publish running"], runtime: { question: undefined } },
  },
  {
    name: "unanswerable: nobody can answer the question (questions: deny)",
    task: {},
    input: { kind: "unanswerable", requestID: "que_1", answers: [["nobody"]] },
    expected: { calls: ['answer que_1 [["nobody"]]'] },
  },
  {
    name: "steer-stored, a new mark (its sender told once the count is saved)",
    task: { steers: 1 },
    input: { kind: "steer-stored", mark: "m1" },
    expected: { calls: ["save running", "steer m1 stored"], task: { steers: 2 }, runtime: { steersCounted: ["m1"], lastSteerAt: NOW } },
  },
  {
    name: "steers-refused: the child failed or went away",
    task: {},
    input: { kind: "steers-refused", reason: "deleted" },
    expected: { calls: ["steer m1 refused: deleted"] },
  },
  {
    name: "steer-stored, a mark counted already",
    task: { steers: 1 },
    runtime: { steersCounted: new Set(["m1"]) },
    input: { kind: "steer-stored", mark: "m1" },
    expected: { calls: [], task: { steers: 1 } },
  },
  {
    name: "steer-queued",
    task: { status: "queued", queuedPrompt: "P" },
    input: { kind: "steer-queued", message: "M" },
    expected: {
      calls: ["save queued"],
      task: { steers: 1, queuedPrompt: "P\n\nA later message from the parent session (sent while this task waited to start):\nM" },
    },
  },
  {
    name: "usage-step: an update of a message replaces what it added",
    task: { usage: { input: 10, output: 1, reasoning: 0, cacheRead: 0, cacheWrite: 0, cost: 0.5 } },
    runtime: { usageByMessage: new Map([["msg_2", { input: 4, output: 1, reasoning: 0, cacheRead: 0, cacheWrite: 0, cost: 0.25 }]]) },
    input: { kind: "usage-step", messageID: "msg_2", now: { input: 6, output: 2, reasoning: 0, cacheRead: 0, cacheWrite: 0, cost: 0.5 } },
    expected: {
      calls: [],
      task: { usage: { input: 12, output: 2, reasoning: 0, cacheRead: 0, cacheWrite: 0, cost: 0.75 } },
      runtime: { bookkeeping: 2 },
    },
  },
  {
    name: "usage-step: a message seen first",
    task: { usage: { input: 10, output: 1, reasoning: 0, cacheRead: 0, cacheWrite: 0, cost: 0.5 } },
    input: { kind: "usage-step", messageID: "msg_3", now: { input: 6, output: 2, reasoning: 0, cacheRead: 0, cacheWrite: 0, cost: 0.5 } },
    expected: {
      calls: [],
      task: { usage: { input: 16, output: 3, reasoning: 0, cacheRead: 0, cacheWrite: 0, cost: 1 } },
      runtime: { bookkeeping: 2 },
    },
  },
  {
    name: "guard: the watchdog's counters anew",
    task: {},
    input: { kind: "guard", guard: { toolCalls: 3, sameCallsInARow: 1, emptyAnswersInARow: 0, judged: new Set(["msg_1"]), waitedMs: 0 } },
    expected: { calls: [], runtime: { guard: { toolCalls: 3, sameCallsInARow: 1, emptyAnswersInARow: 0, judged: new Set(["msg_1"]), waitedMs: 0 } } },
  },
  {
    name: "waiter-added: a caller waits for the end, or for a person",
    task: {},
    input: { kind: "waiter-added", done: WAITER, orPersonWait: true },
    expected: { calls: [], runtime: { waiters: 2, personWaiters: 2 } },
  },
  {
    name: "waiter-added: a caller waits for the end only",
    task: {},
    input: { kind: "waiter-added", done: WAITER, orPersonWait: false },
    expected: { calls: [], runtime: { waiters: 2, personWaiters: 1 } },
  },
  {
    name: "waiter-gone: released, timed out or aborted",
    task: {},
    runtime: { endWaiters: new Set([WAITER]), waitWaiters: new Set([WAITER]) },
    input: { kind: "waiter-gone", done: WAITER },
    expected: { calls: [], runtime: { waiters: 1, personWaiters: 1 } },
  },
  {
    name: "steer-sent: its sender waits for the server's word",
    task: {},
    input: { kind: "steer-sent", mark: "m2", told: () => {} },
    expected: { calls: [], runtime: { steerWaits: ["m1", "m2"] } },
  },
  {
    name: "steer-unanswered: no word in time",
    task: {},
    input: { kind: "steer-unanswered", mark: "m1", outcome: { delivered: false, reason: "no word" } },
    expected: { calls: ["steer m1 refused: no word"], runtime: { steerWaits: [] } },
  },
  {
    name: "usage-read",
    task: {},
    input: { kind: "usage-read", usage: { input: 1, output: 1, reasoning: 0, cacheRead: 0, cacheWrite: 0, cost: 0 } },
    expected: { calls: ["ledger", "save running"], task: { usage: { input: 1, output: 1, reasoning: 0, cacheRead: 0, cacheWrite: 0, cost: 0 } } },
  },
  { name: "cancel-asked", task: {}, input: { kind: "cancel-asked" }, expected: { calls: ["save running"], task: { cancelledByParent: true } } },
  {
    name: "cancel-failed",
    task: { cancelledByParent: true },
    input: { kind: "cancel-failed" },
    expected: { calls: ["save running"], task: { cancelledByParent: undefined } },
  },
  { name: "stop-asked", task: {}, input: { kind: "stop-asked", reason: "R" }, expected: { calls: [], runtime: { stopReason: "R" } } },
  {
    name: "result-read, in place of the notice",
    task: { status: "completed", run: 2 },
    input: { kind: "result-read", asNotice: true },
    expected: { calls: ["save completed"], task: { reportedRun: 2, notifiedRun: 2 } },
  },
  {
    name: "notice-sent",
    task: { status: "completed", run: 2 },
    runtime: { answer: "A" },
    input: { kind: "notice-sent" },
    expected: { calls: ["save completed"], task: { notifiedRun: 2, reportedRun: 0 }, runtime: { answer: undefined } },
  },
  {
    name: "notice-failed",
    task: {},
    runtime: { noticeFailures: 1 },
    input: { kind: "notice-failed" },
    expected: { calls: [], runtime: { noticeFailures: 2 } },
  },
  { name: "reported", task: { run: 3 }, input: { kind: "reported" }, expected: { calls: ["save running"], task: { reportedRun: 3, notifiedRun: 0 } } },
  {
    name: "parent-gone",
    task: { run: 3 },
    input: { kind: "parent-gone" },
    expected: { calls: ["save running"], task: { reportedRun: 3, notifiedRun: 3 } },
  },
  {
    name: "held-reason: a paused task's reason anew (the budget was raised)",
    task: { status: "paused", error: "paused: reached" },
    input: { kind: "held-reason", reason: "paused: raised" },
    expected: { calls: ["save paused", "publish paused"], task: { status: "paused", error: "paused: raised" } },
  },
  {
    name: "held-reason: not for a task that does not wait for a person",
    task: { status: "running" },
    input: { kind: "held-reason", reason: "x" },
    expected: { calls: [], task: { status: "running" } },
  },
  { name: "wrapping up", task: {}, input: { kind: "wrapping-up" }, expected: { calls: [], runtime: { wrappingUp: true } } },
  {
    name: "wrapped up, nothing to commit (no worktree): wrap-up over, nothing saved",
    task: { status: "completed" },
    runtime: { wrappingUp: true },
    input: { kind: "wrapped-up", outcome: { skipped: true } },
    expected: { calls: [], runtime: { wrappingUp: false } },
  },
  {
    name: "wrapped up, no change: the worktree is gone",
    task: { status: "completed", worktree: WORKTREE },
    runtime: { wrappingUp: true },
    input: { kind: "wrapped-up", outcome: { committed: { head: "b0", changes: undefined }, removed: "no changes" } },
    expected: {
      calls: ["save completed (wrappingUp)", "unhost", "overlaps"],
      task: { worktree: { ...WORKTREE, head: "b0", removed: "no changes" } },
      runtime: { wrappingUp: false },
    },
  },
  {
    name: "wrapped up, with changes: the directory is freed, the branch kept (still hosted: the TUI's requests come through its instance)",
    task: { status: "completed", worktree: { ...WORKTREE, takenAt: 3 } },
    runtime: { wrappingUp: true },
    input: { kind: "wrapped-up", outcome: { committed: { head: "b1", changes: CHANGES }, freedAt: 77 } },
    expected: {
      calls: ["save completed (wrappingUp)", "overlaps"],
      task: { worktree: { ...WORKTREE, head: "b1", changes: CHANGES, freedAt: 77 } },
      runtime: { wrappingUp: false },
    },
  },
  {
    name: "wrapped up, cut short: committed, the directory kept (still hosted)",
    task: { status: "interrupted", worktree: WORKTREE },
    runtime: { wrappingUp: true },
    input: { kind: "wrapped-up", outcome: { committed: { head: "b1", changes: CHANGES } } },
    expected: {
      calls: ["save interrupted (wrappingUp)", "overlaps"],
      task: { worktree: { ...WORKTREE, head: "b1", changes: CHANGES } },
      runtime: { wrappingUp: false },
    },
  },
  {
    name: "worktree-recreated: a resume made the freed directory again",
    task: { status: "completed", worktree: { ...WORKTREE, freedAt: 77 } },
    input: { kind: "worktree-recreated", worktree: { ...WORKTREE, sandboxDir: "/s2" } },
    expected: { calls: ["save completed"], task: { worktree: { ...WORKTREE, sandboxDir: "/s2" } } },
  },
  {
    name: "worktree-recreated: not for a removed worktree",
    task: { status: "completed", worktree: { ...WORKTREE, removed: "discarded" } },
    input: { kind: "worktree-recreated", worktree: WORKTREE },
    expected: { calls: [], task: { worktree: { ...WORKTREE, removed: "discarded" } } },
  },
  {
    name: "wrapped up, the commit failed: the error saved before the task counts as ended",
    task: { status: "completed", error: "first", worktree: WORKTREE },
    runtime: { wrappingUp: true },
    input: { kind: "wrapped-up", outcome: { failed: "git broke" } },
    expected: { calls: ["save completed (wrappingUp)", "overlaps"], task: { error: "first; git broke", worktree: WORKTREE }, runtime: { wrappingUp: false } },
  },
  {
    name: "worktree-removed: discarded",
    task: { status: "completed", worktree: WORKTREE },
    input: { kind: "worktree-removed", why: "discarded" },
    expected: { calls: ["unhost", "save completed", "overlaps", "publish completed"], task: { worktree: { ...WORKTREE, removed: "discarded" } } },
  },
  {
    name: "worktree-taken, kept",
    task: { status: "completed", worktree: WORKTREE },
    input: { kind: "worktree-taken", at: 42 },
    expected: { calls: ["save completed", "overlaps", "publish completed"], task: { worktree: { ...WORKTREE, takenAt: 42 } } },
  },
  {
    name: "resume-runs: a resumed run has its slot",
    task: { status: "resumed", run: 2 },
    input: { kind: "resume-runs" },
    expected: { calls: ["watchdog armed"] },
  },
  {
    name: "disposing: OpenCode stops, the task not interrupted",
    task: { status: "queued" },
    input: { kind: "disposing" },
    expected: { calls: ["watchdog disarmed", "waiter released"], task: { status: "queued" } },
  },
  {
    name: "request-answered",
    task: {},
    input: { kind: "request-answered", answer: { id: "r1", message: "done" } },
    expected: { calls: ["publish running"], runtime: { requestAnswer: { id: "r1", message: "done" } } },
  },
  {
    name: "overlap, another task's line",
    task: { worktree: WORKTREE },
    input: { kind: "overlap", text: "bg_x on a.ts" },
    expected: { calls: ["publish running"], runtime: { overlapNote: "bg_x on a.ts" } },
  },
  {
    name: "overlap, the task's own line (it publishes itself next)",
    task: { worktree: WORKTREE },
    input: { kind: "overlap", text: "bg_x on a.ts", quiet: true },
    expected: { calls: [], runtime: { overlapNote: "bg_x on a.ts" } },
  },
  // ─── a task on a remote, and one a remote parent launched (docs/remote.md) ───
  {
    name: "pushed: a relayed task's branch reached the shared git remote",
    task: { status: "completed", worktree: WORKTREE, relay: { gitRemote: "origin" } },
    input: { kind: "pushed", head: "h2" },
    expected: { calls: ["save completed", "publish completed"], task: { worktree: { ...WORKTREE, pushed: "h2", pushError: undefined } } },
  },
  {
    name: "pushed: the push failed, why kept for its parent",
    task: { status: "completed", worktree: WORKTREE, relay: { gitRemote: "origin" } },
    input: { kind: "pushed", error: "rejected" },
    expected: { calls: ["save completed", "publish completed"], task: { worktree: { ...WORKTREE, pushError: "rejected" } } },
  },
  {
    name: "remote-seen: the remote's usage is counted and shown",
    task: { status: "running", remote: REMOTE },
    input: { kind: "remote-seen", usage: REMOTE_USAGE, toolCalls: 3, lastTool: "bash" },
    expected: { calls: ["ledger", "save running", "publish running"], task: { usage: REMOTE_USAGE, toolCalls: 3, lastTool: "bash" } },
  },
  {
    name: "remote-seen: a new place there (no usage: the ledger is not told)",
    task: { status: "running", remote: REMOTE },
    input: { kind: "remote-seen", remote: { ...REMOTE, run: 2 } },
    expected: { calls: ["save running", "publish running"], task: { remote: { ...REMOTE, run: 2 } } },
  },
  {
    name: "remote-seen: nothing new, nothing done",
    task: { status: "running", remote: REMOTE, toolCalls: 3 },
    input: { kind: "remote-seen", remote: REMOTE, toolCalls: 3 },
    expected: { calls: [], task: { remote: REMOTE } },
  },
  {
    name: "remote-cleaned: nothing left there",
    task: { status: "completed", remote: REMOTE },
    input: { kind: "remote-cleaned" },
    expected: { calls: ["save completed"], task: { remote: { ...REMOTE, cleaned: true } } },
  },
  {
    name: "remote-started: a task that waited for a slot of its remote runs there now (where, its branch here; its wait and prompt gone)",
    task: { status: "queued", queuedPrompt: "P", remoteWait: WAIT },
    input: { kind: "remote-started", remote: REMOTE, worktree: REMOTE_WORKTREE },
    expected: { calls: ["save queued"], task: { remote: REMOTE, worktree: REMOTE_WORKTREE, remoteWait: undefined, queuedPrompt: undefined } },
  },
  {
    name: "remote-started: one that ended meanwhile (cancelled) takes nothing",
    task: { status: "cancelled", remoteWait: WAIT },
    input: { kind: "remote-started", remote: REMOTE, worktree: REMOTE_WORKTREE },
    expected: { calls: [], task: { remote: undefined, remoteWait: WAIT } },
  },
];

/** Runs the row on a fresh task through the real runner with a recording host; what it saw. */
async function play(row: Row, table: EffectTable = DEFAULT_TABLE): Promise<Seen> {
  const registry = new TaskRegistry();
  const entry = registry.add(savedTask({ ownerPid: 1, ...row.task }));
  const runtime = arrangeRuntime(entry);
  Object.assign(runtime, row.runtime ?? {});
  const calls: string[] = [];
  const bookkept = new Map([["msg_1", { input: 1, output: 0, reasoning: 0, cacheRead: 0, cacheWrite: 0, cost: 0 }]]);
  runtime.usageByMessage = new Map([...bookkept, ...(row.runtime?.usageByMessage ?? [])]);
  runtime.endWaiters.add(() => calls.push("waiter released"));
  runtime.waitWaiters = new Set([...(row.runtime?.waitWaiters ?? []), () => calls.push("person waiter released")]);
  runtime.steerWaits.set("m1", (o) => calls.push(o.delivered ? "steer m1 stored" : `steer m1 refused: ${o.reason}`));
  const host: RunnerHost = {
    now: () => NOW,
    warn: (message) => calls.push(`warn ${message}`),
    parentBusy: (parent) => calls.push(`parent busy ${parent}`),
    watchdog: {
      runStarted: () => calls.push("watchdog armed"),
      runEnded: () => calls.push("watchdog disarmed"),
      personWaitChanged: (_e, what) => calls.push(what ? `deadline paused: ${what}` : "deadline runs"),
      toolCall: (_e, call) => calls.push(`watch call ${call.tool} ${JSON.stringify(call.args)}`),
      assistantMessage: (_e, info) => calls.push(`watch message ${info.id}`),
    },
    abortChild: async (t) => void calls.push(`abort ${t.sessionID} (${t.status})`),
    checkCompletion: async (e, stalled) => void calls.push(stalled ? `check stalled (${e.runtime.lastError})` : "check"),
    answerForNobody: async (_t, requestID, answers) => void calls.push(`answer ${requestID} ${JSON.stringify(answers)}`),
    wrapUpRun: async () => (calls.push(`commit the run${entry.runtime.wrappingUp ? " (wrappingUp)" : ""}`), { committed: { head: "h1", changes: CHANGES } }),
    toast: (t) => calls.push(`toast ${t.title}`),
    publish: (e) => calls.push(`publish ${e.task.status}`),
    updateReconcileTimer: () => calls.push("timer"),
    fillQueue: () => calls.push("queue fill"),
    save: async () => void calls.push(`save ${entry.task.status}${entry.runtime.wrappingUp ? " (wrappingUp)" : ""}`),
    noticeEnded: async (_e, o) => void calls.push(`notice wake=${o.wake} deliver=${o.deliver}`),
    indexChild: (e) => calls.push(`index ${e.task.sessionID}`),
    ledgerNote: () => calls.push("ledger"),
    refreshOverlaps: () => calls.push("overlaps"),
    unhost: () => calls.push("unhost"),
    table,
  };
  await runStep(host, entry, row.input, row.options);
  const seen: Seen = { calls };
  if (row.expected.task) seen.task = Object.fromEntries(Object.keys(row.expected.task).map((k) => [k, entry.task[k as keyof BackgroundTask]]));
  if (row.expected.runtime) {
    const runtime: Record<string, unknown> = {
      ...entry.runtime,
      seenCalls: [...entry.runtime.seenCalls],
      steersCounted: [...entry.runtime.steersCounted],
      bookkeeping: entry.runtime.usageByMessage.size,
      waiters: entry.runtime.endWaiters.size,
      personWaiters: entry.runtime.waitWaiters?.size ?? 0,
      steerWaits: [...entry.runtime.steerWaits.keys()],
    };
    seen.runtime = Object.fromEntries(Object.keys(row.expected.runtime).map((k) => [k, runtime[k]]));
  }
  return seen;
}

describe("a task's step and its runner (task-step.ts, task-runner.ts)", () => {
  for (const row of ROWS) {
    it(row.name, async () => {
      expect(await play(row)).toEqual(row.expected);
    });
  }

  it("a refused edge changes nothing and runs nothing; the log says why", async () => {
    const row: Row = {
      name: "",
      task: { status: "completed" },
      input: edge("finish", { ending: { status: "error" } }),
      expected: { calls: [], task: { status: "completed" } },
    };
    const seen = await play(row);
    expect(seen.calls).toEqual([`warn task bg_saved001: finish is not allowed from completed; nothing changed`]);
    expect(seen.task).toEqual({ status: "completed" });
  });

  it("every input kind and every edge has a row", () => {
    const kinds = new Set(ROWS.map((r) => (r.input.kind === "edge" ? r.input.edge : r.input.kind)));
    for (const kind of [...Object.keys(INPUT_EFFECTS), ...Object.keys(EDGES)]) expect(kinds, kind).toContain(kind);
  });
});

/** Effects that tell somebody of the task: the TUI, a toast, a waiting caller, the parent (a notice, or a sibling's notice once `wrappingUp` is over). */
const TELLING: readonly Effect[] = [
  "publish",
  "toastStarted",
  "toastEnded",
  "releaseWaiters",
  "personWait",
  "noticeEnded",
  "wrapUpDone",
  "steerConfirmed",
  "refuseSteers",
  "tellSteer",
];
/** The inputs that never write a field of the task's record (their rows check it): the rest must say how they are saved. */
const RUNTIME_ONLY = new Set([
  "guard",
  "waiter-added",
  "waiter-gone",
  "steer-sent",
  "steer-unanswered",
  "abort",
  "launch-begun",
  "launch-abandoned",
  "child-idle",
  "unanswerable",
  "steers-refused",
  "resume-runs",
  "disposing",
  "launch-committed",
  "child-error",
  "permission",
  "question",
  "stop-asked",
  "notice-failed",
  "wrapping-up",
  "request-answered",
  "overlap",
]);

const kindOf = (row: Row) => (row.input.kind === "edge" ? row.input.edge : row.input.kind);

/**
 * Saved before told, for every row of every input kind (edges too), read from the step under `table`:
 * an input that writes a field of the record carries `save` (or `saveWithNext`, when it tells nobody),
 * and its `save` comes before anything that tells. A kind that writes the record in none of its rows
 * must be one of RUNTIME_ONLY, and such a kind writes it in none. The faults found, as text.
 */
function savedBeforeToldFaults(table: EffectTable): string[] {
  const faults: string[] = [];
  const writers = new Set<string>();
  for (const row of ROWS) {
    const entry = new TaskRegistry().add(savedTask({ ownerPid: 1, ...row.task }));
    Object.assign(entry.runtime, row.runtime ?? {});
    const result = step(entry, row.input, NOW, table);
    if ("refused" in result) continue;
    const written = Object.keys(result.task).filter((k) => !isDeepStrictEqual(result.task[k as keyof BackgroundTask], entry.task[k as keyof BackgroundTask]));
    const told = result.effects.findIndex((e) => TELLING.includes(e));
    const saved = result.effects.indexOf("save");
    if (written.length === 0) continue;
    writers.add(kindOf(row));
    if (saved < 0 && !result.effects.includes("saveWithNext")) faults.push(`${row.name}: writes ${written.join(", ")} and does not save it`);
    if (told >= 0 && (saved < 0 || saved > told)) faults.push(`${row.name}: ${result.effects[told]} before its save (${result.effects.join(", ")})`);
  }
  for (const kind of new Set(ROWS.map(kindOf))) {
    if (!writers.has(kind) && !RUNTIME_ONLY.has(kind)) faults.push(`${kind}: no row writes the record, and it is not runtime-only`);
    if (writers.has(kind) && RUNTIME_ONLY.has(kind)) faults.push(`${kind}: writes the record, but is listed runtime-only`);
  }
  return faults;
}

describe("saved before told (every input kind)", () => {
  it("an input that writes the task's record saves it, before anything tells of it", () => {
    expect(savedBeforeToldFaults(DEFAULT_TABLE)).toEqual([]);
  });
});

describe("no effect of the table goes unseen", () => {
  const pairs: { row: string; effect: Effect }[] = [];
  for (const [name, rule] of Object.entries(EDGES)) for (const effect of rule.effects) pairs.push({ row: name, effect });
  for (const [name, effects] of Object.entries(INPUT_EFFECTS)) for (const effect of effects) pairs.push({ row: name, effect });

  /** The table without `effect` in `row`'s list. */
  function without(row: string, effect: Effect): EffectTable {
    const drop = (list: readonly Effect[]) => list.filter((e) => e !== effect);
    if (row in EDGES) {
      const edges = { ...EDGES, [row]: { ...EDGES[row as Edge], effects: drop(EDGES[row as Edge].effects) } } as typeof EDGES;
      return { edges, inputs: INPUT_EFFECTS };
    }
    return { edges: EDGES, inputs: { ...INPUT_EFFECTS, [row]: drop(INPUT_EFFECTS[row as keyof typeof INPUT_EFFECTS]) } };
  }

  for (const { row, effect } of pairs) {
    it(`${row} without ${effect}: one of its rows above fails`, async () => {
      const rows = ROWS.filter((r) => (r.input.kind === "edge" ? r.input.edge : r.input.kind) === row);
      // (saved before told, checked on the whole table, is one of the assertions that may fail)
      const failed = savedBeforeToldFaults(without(row, effect));
      for (const r of rows) {
        const seen = await play(r, without(row, effect));
        try {
          expect(seen).toEqual(r.expected); // the row's own assertion, as above
        } catch {
          failed.push(r.name);
        }
      }
      expect(failed.length, `removing ${effect} from ${row} went unseen`).toBeGreaterThan(0);
    });
  }
});
