// THE step of a parent session: from what the plugin knows of the parent (one record, ParentState),
// a read-only view of its tasks and one input, to what it knows next and the effects, in order; and
// THE decision of what is owed to it next (owedNext). Pure: it reads, builds and returns; it assigns
// nothing, awaits nothing, reads no clock (the runner hands it a stamp). notices.ts is its one runner:
// it writes what a step returns (the only place a parent's record is written) and carries the effects
// out in order, the one send to the parent among them.
//
// What is owed to a parent, in this order, and only while it is idle (busy.ts): one notice per ended
// task run, after checking its messages for notices a previous process sent but did not record (once,
// when a task read from the file is owed one); the notice that its budget is reached (at most once);
// at most one wake-up prompt when its last running task has ended (or one failed) and there is
// something it has not read yet. Each send's outcome is an input: sent, failed, or the parent gone.
//
// Exactly once, under faults: what was delivered is recorded per task run (notifiedRun: notices,
// reportedRun: wakes and results the parent read itself) and saved right after each delivery (the
// task's own step). Never retried forever: a parent that is gone (404) ends everything owed to it;
// other failures are retried by the reconcile at most MAX_DELIVERY_ATTEMPTS times.
//
// The inputs, facts about the parent (in the vocabulary of a task's inputs, task/step.ts):
//   its events        heard (an event said busy or idle: recorded the moment it arrives), idle (it went
//                     idle, seen once the manager is ready: what waited for it goes out), gone (deleted)
//   the server's word snapshot (its busy sessions, read at start-up and by the reconcile)
//   its tasks         task-ended (a run ended), budget-reached (the session budget's one notice)
//   the delivery      sending (what owedNext decided is on its way), sent / failed (the send's outcome;
//                     a parent that answers 404 is `gone`)
//
// Each input's effects are data (PARENT_EFFECTS below): the table test
// (test/unit/manager/parent-step.test.ts) removes each one in turn and shows a test fails without it.

import { MAX_DELIVERY_ATTEMPTS } from "../../constants.js";
import type { SessionMessage } from "../../fork/types.js";
import { isMoving, isOpen, meaningOf } from "../../task-record.js";
import type { TaskEntry } from "../task/registry.js";
import { type BusySnapshot, type BusyWord, filled, isIdle, undone } from "./busy.js";
import { isNoticeOf } from "./notices.txt.js";

/** What the plugin knows of one parent session; in memory only (a restart never wakes anybody). */
export interface ParentState {
  /** the newest word on whether it is in a turn (busy.ts) */
  readonly said?: BusyWord;
  /** a wake-up prompt is owed */
  readonly owedWake: boolean;
  /** the wakes that failed in a row */
  readonly wakeFailures: number;
  /**
   * the notice that its background budget is reached: session-budget.ts decides it once per budget
   * and records that in budgets.json before it is owed (at most once, also across a restart)
   */
  readonly owedBudget?: string;
  /** its messages were checked for notices a previous process delivered but did not record */
  readonly checkedOldNotices: boolean;
  /** deleted (or answering 404): nothing is delivered to it again */
  readonly gone: boolean;
  /** the stamp of the busy mark a wake in flight set (undone if the wake fails) */
  readonly waking?: number;
}

/** A parent nobody has said anything about yet. */
export const NEW_PARENT: ParentState = { owedWake: false, wakeFailures: 0, checkedOldNotices: false, gone: false };

/** What is owed to the parent next (owedNext). */
export type Owed =
  /** its messages read, for notices a previous process sent but did not record (`queued`: the runs owed one) */
  | { kind: "check"; queued: readonly TaskEntry[] }
  /** the notice of the entry's ended run */
  | { kind: "notice"; entry: TaskEntry }
  /** the notice that its budget is reached */
  | { kind: "budget"; text: string }
  /** the wake-up prompt, reporting these ended runs (none: nothing to wake it for) */
  | { kind: "wake"; report: readonly TaskEntry[] };

export type ParentInput =
  /** an event (or the plugin's own act: a launch, a resume) says it is busy or idle now */
  | { kind: "heard"; busy: boolean }
  /** the server's busy sessions: its word on the parent, if no event spoke since it was asked for */
  | { kind: "snapshot"; snapshot: BusySnapshot }
  /** it went idle (seen once the manager is ready) */
  | { kind: "idle" }
  /** it was deleted, or answered 404 */
  | { kind: "gone" }
  /** a run of one of its tasks ended; `wake: false` never wakes it, `deliver: false` leaves the delivery to a later one */
  | { kind: "task-ended"; entry: TaskEntry; wake: boolean; deliver: boolean }
  | { kind: "budget-reached"; text: string }
  | { kind: "sending"; owed: Owed }
  /** `messages`: what a check read */
  | { kind: "sent"; owed: Owed; messages?: readonly SessionMessage[] }
  | { kind: "failed"; owed: Owed; error: Error };

type Delivery = "sending" | "sent" | "failed";

/** A row of the table: an input kind, or a step of the delivery with what it delivers. */
export type Row = Exclude<ParentInput["kind"], Delivery> | `${Delivery} ${Owed["kind"]}`;

/**
 * An effect the runner carries out, in its row's order:
 * - deliver      what is owed goes out now if the parent is idle (after a delivery in flight: one per parent at a time)
 * - outstanding  whether anything is outstanding changed: the reconcile timer follows it
 * - send         THE send to the parent of what is owed: its outcome is the next input
 * - tasksGone    every task of the parent: what was owed to it recorded as done (saved)
 * - reported     the tasks the step names are reported: a wake told of them, or the parent asked for their cancel (saved)
 * - noticeSent   the notice of the tasks the step names recorded as delivered (saved)
 * - noticeFailed the failed attempt counted on the task
 * - retryLater   the delivery stops with the error (logged): the reconcile tries again
 * - giveUp       no more attempts: an error in the log (a notice then counts as delivered, a wake as done)
 * - budgetLost   the budget notice did not go out: a warning in the log (it is never sent twice)
 */
export type ParentEffect =
  "deliver" | "outstanding" | "send" | "tasksGone" | "reported" | "noticeSent" | "noticeFailed" | "retryLater" | "giveUp" | "budgetLost";

/** The effects of each row, in order; a step keeps those its input calls for. */
export const PARENT_EFFECTS: { readonly [R in Row]: readonly ParentEffect[] } = {
  heard: [],
  // (whether it was taken or not: an idle parent gets what waited for it)
  snapshot: ["deliver"],
  idle: ["deliver"],
  gone: ["tasksGone"],
  // (a cancel the parent asked for is no news to it: reported before any delivery; delivered unless `deliver: false`)
  "task-ended": ["reported", "deliver"],
  "budget-reached": ["outstanding", "deliver"],
  "sending check": ["send"],
  "sending notice": ["send"],
  "sending budget": ["send"],
  // (no send when every ended run was read by the parent itself)
  "sending wake": ["send"],
  "sent check": ["noticeSent"],
  "sent notice": ["noticeSent"],
  "sent budget": [],
  "sent wake": ["reported"],
  "failed check": ["retryLater"],
  // (retried while attempts are left; then given up, and counted as delivered)
  "failed notice": ["noticeFailed", "retryLater", "giveUp", "noticeSent"],
  "failed budget": ["budgetLost"],
  "failed wake": ["retryLater", "giveUp", "reported"],
};

export type ParentTable = typeof PARENT_EFFECTS;

/** A step's result: the parent's next state, the effects in order, the tasks its task effects concern, and the attempts a failure counted. */
export interface ParentStep {
  readonly state: ParentState;
  readonly effects: readonly ParentEffect[];
  readonly tasks: readonly TaskEntry[];
  readonly attempts?: number;
}

/**
 * The step of `parent`. `tasks` reads the parent's committed tasks in launch order (read only when the input
 * needs them); `stamp` is the runner's counter at this input (busy.ts), the mark a wake sets.
 */
export function parentStep(
  parent: string,
  state: ParentState,
  input: ParentInput,
  tasks: () => readonly TaskEntry[],
  stamp: number,
  table: ParentTable = PARENT_EFFECTS,
): ParentStep {
  const row = table[rowOf(input)];
  const keep = (...effects: ParentEffect[]) => row.filter((e) => effects.includes(e));
  const to = (next: Partial<ParentState>, effects: readonly ParentEffect[] = row, touched: readonly TaskEntry[] = [], attempts?: number): ParentStep => ({
    state: { ...state, ...next },
    effects,
    tasks: touched,
    ...(attempts !== undefined ? { attempts } : {}),
  });
  switch (input.kind) {
    case "heard":
      return to({ said: { busy: input.busy, at: stamp } });
    case "snapshot":
      return to({ said: filled(state.said, parent, input.snapshot) ?? state.said });
    case "idle":
      return to({});
    case "gone":
      return to({ gone: true, owedWake: false, owedBudget: undefined, said: undefined, waking: undefined }, row, tasks());
    case "task-ended":
      return taskEnded(state, input, tasks, row);
    case "budget-reached":
      return state.gone ? to({}, []) : to({ owedBudget: input.text });
    case "sending":
      return sending(state, input.owed, stamp, row);
    case "sent":
      return sent(state, input, row);
    case "failed":
      return failed(state, input, row, keep);
  }
}

function rowOf(input: ParentInput): Row {
  return input.kind === "sending" || input.kind === "sent" || input.kind === "failed" ? `${input.kind} ${input.owed.kind}` : input.kind;
}

function taskEnded(
  state: ParentState,
  input: Extract<ParentInput, { kind: "task-ended" }>,
  tasks: () => readonly TaskEntry[],
  row: readonly ParentEffect[],
): ParentStep {
  const { entry } = input;
  const end = meaningOf(entry.task.status).end;
  // A cancel the parent asked for is no news to it (its end itself was saved by the edge that told this).
  const reportsItself = end === "cancel" && Boolean(entry.task.cancelledByParent);
  let owedWake = state.owedWake;
  if (input.wake && !state.gone) {
    const siblings = tasks();
    const stillRunning = siblings.some(stillWorking); // (a paused task waits for a person, not for the parent)
    if (end === "failure" || (!stillRunning && siblings.some((e) => unreported(e) && !(reportsItself && e === entry)))) owedWake = true;
  }
  const effects = row.filter((e) => (e === "reported" ? reportsItself : e === "deliver" ? input.deliver : true));
  return { state: { ...state, owedWake }, effects, tasks: reportsItself ? [entry] : [] };
}

/** What is owed is on its way: marked first (checked, the budget's notice no longer owed, a wake's busy mark). */
function sending(state: ParentState, owed: Owed, stamp: number, row: readonly ParentEffect[]): ParentStep {
  switch (owed.kind) {
    case "check":
      return { state: { ...state, checkedOldNotices: true }, effects: row, tasks: [] };
    case "notice":
      return { state, effects: row, tasks: [] };
    case "budget":
      // given up after a failure rather than sent twice
      return { state: { ...state, owedBudget: undefined }, effects: row, tasks: [] };
    case "wake":
      // Everything ended since the last wake was read by the parent itself: nothing to wake it for.
      if (owed.report.length === 0) return { state: { ...state, owedWake: false }, effects: [], tasks: [] };
      // The wake makes the parent busy; anything ending meanwhile waits for its next idle.
      return { state: { ...state, said: { busy: true, at: stamp }, waking: stamp }, effects: row, tasks: [] };
  }
}

function sent(state: ParentState, input: Extract<ParentInput, { kind: "sent" }>, row: readonly ParentEffect[]): ParentStep {
  const { owed } = input;
  switch (owed.kind) {
    case "check": {
      // the runs whose notice a previous process sent but was killed before recording
      const messages = input.messages ?? [];
      const found = owed.queued.filter(({ task }) =>
        messages.some(
          (m) =>
            m.info.role === "user" &&
            (m.info.time?.created ?? 0) >= task.startedAt &&
            (Array.isArray(m.parts) ? m.parts : []).some((p) => p.type === "text" && typeof p.text === "string" && isNoticeOf(p.text, task)),
        ),
      );
      return { state, effects: row, tasks: found };
    }
    case "notice":
      return { state, effects: row, tasks: [owed.entry] };
    case "budget":
      return { state, effects: row, tasks: [] };
    case "wake":
      return { state: { ...state, owedWake: false, wakeFailures: 0, waking: undefined }, effects: row, tasks: owed.report };
  }
}

function failed(
  state: ParentState,
  input: Extract<ParentInput, { kind: "failed" }>,
  row: readonly ParentEffect[],
  keep: (...effects: ParentEffect[]) => readonly ParentEffect[],
): ParentStep {
  const { owed } = input;
  switch (owed.kind) {
    case "check":
    case "budget":
      return { state, effects: row, tasks: [] };
    case "notice": {
      const attempts = owed.entry.runtime.noticeFailures + 1; // (this one counted by noticeFailed)
      const effects = attempts < MAX_DELIVERY_ATTEMPTS ? keep("noticeFailed", "retryLater") : keep("noticeFailed", "giveUp", "noticeSent");
      return { state, effects, tasks: [owed.entry], attempts };
    }
    case "wake": {
      const attempts = state.wakeFailures + 1;
      const said = state.waking === undefined ? state.said : undone(state.said, state.waking);
      if (attempts < MAX_DELIVERY_ATTEMPTS)
        return { state: { ...state, said, waking: undefined, wakeFailures: attempts }, effects: keep("retryLater"), tasks: [], attempts };
      const next = { ...state, said, waking: undefined, wakeFailures: 0, owedWake: false };
      return { state: next, effects: keep("giveUp", "reported"), tasks: owed.report, attempts };
    }
  }
}

/**
 * THE decision of what is owed to the parent next, or undefined: nothing, or nothing while it is busy
 * or gone. Notices first, in launch order (the wake never overtakes the notice of a task it reports as
 * ended), then the budget's notice, then the wake.
 */
export function owedNext(state: ParentState, tasks: readonly TaskEntry[]): Owed | undefined {
  const queued = undelivered(state, tasks);
  const idle = isIdle(state.said);
  if (queued.length > 0) {
    if (!state.checkedOldNotices && queued.some((e) => e.runtime.fromFile)) return { kind: "check", queued };
    return idle ? { kind: "notice", entry: queued[0]! } : undefined;
  }
  if (!idle || state.gone) return undefined;
  if (state.owedBudget !== undefined) return { kind: "budget", text: state.owedBudget };
  if (state.owedWake) return { kind: "wake", report: tasks.filter(unreported) };
  return undefined;
}

/** The parent's ended runs whose notice is still owed (none to a parent that is gone). */
export function undelivered(state: ParentState, tasks: readonly TaskEntry[]): TaskEntry[] {
  if (state.gone) return [];
  return tasks.filter((e) => !notEnded(e) && e.task.notifiedRun < e.task.run);
}

/** Whether anything is owed to the parent: a notice, the budget's notice or a wake. */
export function hasOwed(state: ParentState, tasks: () => readonly TaskEntry[]): boolean {
  return state.owedWake || state.owedBudget !== undefined || undelivered(state, tasks()).length > 0;
}

/** An ended run the parent has not been told about by a wake and has not read itself. */
export function unreported(entry: TaskEntry): boolean {
  return !notEnded(entry) && entry.task.reportedRun < entry.task.run;
}

/** It runs or waits for a slot (a paused task does not: it waits for a person). */
export function stillWorking(entry: TaskEntry): boolean {
  return isMoving(entry.task.status) || Boolean(entry.runtime.wrappingUp);
}

/**
 * Whether the parent is still to hear of the task's end: it runs, or its ended run is still being
 * committed on its worktree branch (its notice would say "changes: none yet"; its own end sends it).
 */
export function notEnded(entry: TaskEntry): boolean {
  return isOpen(entry.task.status) || Boolean(entry.runtime.wrappingUp);
}
