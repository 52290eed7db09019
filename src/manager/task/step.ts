// THE step of a task: from its record and runtime and one input to the record's new fields, the
// runtime's new fields and the effects, in order. Pure: it reads, builds and returns; it assigns
// nothing, awaits nothing, calls nothing outside this file but transitions.ts (the status edges),
// the pure texts and pure helpers (usage sums, the store's isSettled). task/runner.ts is its one runner: it writes what a step returns (the only place a
// field of a task is assigned, but for the creation of a record: launch/launcher.ts's draft, a record read from
// the task file) and carries the effects out in order.
//
// The inputs, by where they come from:
//   a status edge        { kind: "edge" }: transitions.ts's table decides fields and effects
//   the child's events   child-idle, child-error, abort, tool-seen, assistant-message, permission, question,
//                        unanswerable, steer-stored, steers-refused (event-decide.ts and questions.ts
//                        read the event); usage-step (watchdog.ts reads the message's usage)
//   the launch           launch-begun, child-created, prompt-sending, launch-committed, launch-abandoned,
//                        prompt-sent, claimed (start-up, history)
//   the agent's tools    steer-queued, cancel-asked, cancel-failed, result-read, stop-asked
//   the run's end        usage-read (completion.ts's check), wrapping-up, wrapped-up (the worktree's commit)
//   the parent told      notice-sent, notice-failed, reported, parent-gone (notices.ts)
//   the TUI and takes    worktree-removed, worktree-taken, request-answered, overlap
//   a resume             resume-runs (it has its slot), worktree-recreated (its freed directory made again)
//   OpenCode stopping    disposing (a task not interrupted: its watchdog and waiters let go)
//
// Each input's effects are data (INPUT_EFFECTS below, and transitions.ts's EDGES): the table test
// (test/unit/manager/task-step.test.ts) removes each one in turn and shows a test fails without it,
// and checks saved before told for every input kind: an input that writes the record saves it (`save`,
// or `saveWithNext`), its save before anything that tells. No task's record is saved anywhere else.

import { MESSAGES } from "../../prompts.js";
import type { PermissionWait, QuestionWait, RequestAnswer } from "../../task-state.js";
import type { AssistantMessage } from "../../host/types.js";
import { NO_USAGE, addUsage, receiptOf } from "./usage.js";
import type { Ending } from "./completion.js";
import { type Edge, type EdgeInput, type Effect as EdgeEffect, EDGES, transition } from "./transitions.js";
import {
  type BackgroundTask,
  type RemoteInfo,
  type TaskStatus,
  type Usage,
  type WorktreeInfo,
  isMoving,
  isOpen,
  isWorking,
  meaningOf,
} from "../../task-record.js";
import type { WrapUpOutcome } from "../../worktree/lifecycle.js";
import type { RunGuard, SteerOutcome } from "./registry.js";
import { isSettled } from "../../store/retention.js";

/** The runtime fields a step reads and writes (plain data; the runner keeps the rest: waiters, timers, the mailbox). */
export interface StepRuntime {
  launching: boolean;
  wrappingUp?: boolean;
  lastError?: string;
  answer?: string;
  noticeFailures: number;
  permission?: PermissionWait;
  question?: QuestionWait;
  stopReason?: string;
  /** steers of the task's child already counted, by mark; when the latest was stored */
  steersCounted: ReadonlySet<string>;
  lastSteerAt?: number;
  /** tool calls of the child already counted */
  seenCalls: ReadonlySet<string>;
  /** the answer to the task's last TUI request (published with its state) */
  requestAnswer?: RequestAnswer;
  /** its overlap line as last published ("bg_x on src/a.ts") */
  overlapNote: string;
  /** what creating a queued task's child takes, until it is created */
  childPlan?: unknown;
  /** the watchdog's counters and deadline of the current run (watchdog.ts decides them) */
  guard: Readonly<RunGuard>;
  /** the usage of each of the child's assistant messages seen this run (an update replaces what it added) */
  usageByMessage: ReadonlyMap<string, Usage>;
}

export type { WrapUpOutcome };

export type TaskInput =
  | { [E in Edge]: { kind: "edge"; edge: E; input: EdgeInput[E] } }[Edge]
  | { kind: "claimed"; pid: number }
  /** a launch registered (in flight): its parent is the one asking, so it is busy */
  | { kind: "launch-begun" }
  /** `createdAs`: the status its child's metadata was created with (createChild; absent: adopted at start-up) */
  | { kind: "child-created"; sessionID: string; createdAs?: TaskStatus }
  | { kind: "launch-committed" }
  /** the launch failed before it was committed: the task is gone from the registry */
  | { kind: "launch-abandoned" }
  | { kind: "prompt-sending" }
  | { kind: "prompt-sent" }
  /** `callID` when the call is to be counted, `args` its input (the watchdog's repeat breaker compares them) */
  | { kind: "tool-seen"; tool: string; callID?: string; args?: unknown }
  /** the child went idle: its run is checked (completion.ts), a job of its mailbox */
  | { kind: "child-idle" }
  /** the child's session.error; `stalled`: no idle follows (a rejected prompt), so its run is checked now */
  | { kind: "child-error"; error: string; stalled: boolean }
  /** an assistant message of the child was updated: its usage for the watchdog, a fork's receipt once */
  | { kind: "assistant-message"; info: AssistantMessage; systemDiffers?: string }
  /** its child's session (or its parent's) was deleted: the child's loop, still streaming, is aborted, then the run ends with `ending` */
  | { kind: "abort"; ending: Ending }
  | { kind: "permission"; permission: PermissionWait | undefined }
  | { kind: "question"; question: QuestionWait | undefined }
  /** nobody can answer the child's question (questions: "deny"): it is answered at once with `answers` */
  | { kind: "unanswerable"; requestID: string; answers: string[][] }
  | { kind: "steer-stored"; mark: string }
  /** the child failed or went away: steers waiting for the server are refused with `reason` */
  | { kind: "steers-refused"; reason: string }
  | { kind: "steer-queued"; message: string }
  /** a child's message's usage as it reads now (it replaces what the message added before) */
  | { kind: "usage-step"; messageID: string; now: Usage }
  /** the watchdog's counters anew (watchdog.ts) */
  | { kind: "guard"; guard: RunGuard }
  /** background_output({ block }) waits for the run's end (`orPersonWait`: or for the child to wait for a person) */
  | { kind: "waiter-added"; done: () => void; orPersonWait: boolean }
  /** it stopped waiting (released, timed out, aborted) */
  | { kind: "waiter-gone"; done: () => void }
  /** a steer went to the child: `told` how it went once the server's event says (steer.ts) */
  | { kind: "steer-sent"; mark: string; told: (outcome: SteerOutcome) => void }
  /** a steer that got no word: its send failed, or no event came in time */
  | { kind: "steer-unanswered"; mark: string; outcome: SteerOutcome }
  | { kind: "usage-read"; usage: Usage }
  | { kind: "cancel-asked" }
  | { kind: "cancel-failed" }
  | { kind: "stop-asked"; reason: string }
  | { kind: "result-read"; asNotice: boolean }
  | { kind: "notice-sent" }
  | { kind: "notice-failed" }
  | { kind: "reported" }
  | { kind: "parent-gone" }
  /** a task waiting for a person: why, anew (the budget was raised: it no longer says "reached") */
  | { kind: "held-reason"; reason: string }
  | { kind: "wrapping-up" }
  | { kind: "wrapped-up"; outcome: WrapUpOutcome }
  | { kind: "worktree-removed"; why: "discarded" | "taken" }
  | { kind: "worktree-taken"; at: number }
  /** a resume made the freed worktree directory again from the branch (launch/launcher.ts resumeTask) */
  | { kind: "worktree-recreated"; worktree: WorktreeInfo }
  /** a resumed run has its slot: it runs now */
  | { kind: "resume-runs" }
  /** OpenCode is stopping and the task is not interrupted (not running, or still launching) */
  | { kind: "disposing" }
  | { kind: "request-answered"; answer: RequestAnswer }
  /** `quiet`: the task publishes itself next (its own edge or take) */
  | { kind: "overlap"; text: string; quiet?: boolean }
  /** a task a remote parent launched (its `relay`): its branch was pushed to the shared git remote again, or why not */
  | { kind: "pushed"; head?: string; error?: string }
  /**
   * a task that runs on a remote: what its state there says now (../remote/follow.ts): where it runs
   * and which run, the usage and tool calls its child reported (a step late), its last tool
   */
  | { kind: "remote-seen"; remote?: RemoteInfo; usage?: Usage; toolCalls?: number; lastTool?: string }
  /** a remote task's leftovers there (its worktree, branch and sessions) and on the shared git remote are gone */
  | { kind: "remote-cleaned" }
  /** a task that waited here for a slot of its remote was launched there (../remote/launch.ts): where it runs, its worktree's branch here */
  | { kind: "remote-started"; remote: RemoteInfo; worktree: WorktreeInfo };

export type InputKind = TaskInput["kind"];

/**
 * An effect the runner carries out, in its input's order. Besides the edges' own (transitions.ts):
 * - indexChild      the registry finds the task by its new child session
 * - markCall        the tool call is remembered as counted
 * - markSteer       the steer's mark is remembered as counted
 * - ledgerNote      the parent's budget ledger takes the task's new usage (budget-ledger.ts)
 * - personWait      the watchdog's deadline stands still while a person is waited for, and
 *                   background_output({ block }) callers that also wait for that return
 * - refreshOverlaps the overlap lines of the parent's worktree tasks recomputed (overlaps.ts)
 * - unhost          the worktree's instance no longer forwards this task's events (it is gone)
 * - wrapUpDone      the run's commit is over and saved: a sibling's delivery may now tell of its end
 *                   (notices.ts notEnded; never before the save, or a notice would tell what no file holds)
 * - abortChild      the child's loop aborted; its model requests wait until that is done (step-gate.ts)
 * - endRun          the run ends (the edge `finish`, a step of its own) once what came before is done,
 *                   if it has not ended meanwhile
 * - checkCompletion the child's run checked: a job of its mailbox reads its messages (completion.ts)
 * - checkStalled    the same, with the reason it stalled, unless the server reports the child busy
 * - watchToolCall   the watchdog counts the call and checks its repeat breaker
 * - watchAssistant  the watchdog takes the message's usage (spend caps, the budget, empty answers)
 * - answerForNobody the child's question answered with the text that says nobody can answer
 * - steerConfirmed  the steer waiting for this mark is told it was stored (steer.ts)
 * - refuseSteers    every steer waiting for the server is told it was refused, and why
 * - awaitSteer      the steer's sender waits for the server's word (the runtime's steerWaits)
 * - tellSteer       the steer's sender is told the outcome it got instead
 * - addWaiter / dropWaiter   a background_output({ block }) caller waits (endWaiters, waitWaiters), or no longer
 * - saveWithNext    the change is saved by the task file's next write, not one of its own: an input that
 *                   tells nobody and comes often (every update of a child's message, every tool part), a
 *                   queued task's child (a write of its own would be one more per queued task among a
 *                   turn's launches), or a launch's step before the launch is committed (the file does
 *                   not hold the task yet: launch-committed saves it). Nothing shows it before a write
 *                   holds it; a crash before then loses only what the run's end or start-up reads again
 *                   (the usage is read whole from the child, a child is linked by its metadata).
 *                   The runner does nothing for it: it is the table's word that the change is saved
 *
 * Saved before told: every input that writes a field of the task's record carries `save` (or
 * `saveWithNext`), and `save` comes before anything that tells (publish, a toast, a released waiter,
 * a notice, wrapUpDone). The table test checks it for every input kind.
 */
export type Effect =
  | EdgeEffect
  | "abortChild"
  | "endRun"
  | "indexChild"
  | "markCall"
  | "markSteer"
  | "ledgerNote"
  | "personWait"
  | "refreshOverlaps"
  | "unhost"
  | "wrapUpDone"
  | "saveWithNext"
  | "checkCompletion"
  | "checkStalled"
  | "watchToolCall"
  | "watchAssistant"
  | "answerForNobody"
  | "steerConfirmed"
  | "refuseSteers"
  | "awaitSteer"
  | "tellSteer"
  | "addWaiter"
  | "dropWaiter";

/** The effects of each input that is not an edge (an edge's are its row of EDGES), in order. */
export const INPUT_EFFECTS: { readonly [K in Exclude<InputKind, "edge">]: readonly Effect[] } = {
  // (a settled task, read from the history: its owner matters only once it runs again, and that edge
  // saves; one of open.json is this process's now, and saved so: start-up, an adopted child)
  claimed: ["save", "saveWithNext"],
  "launch-begun": ["parentBusy"],
  // (saved and published when its task changed status while the child was being created: the state
  // the child was created with is old; otherwise the next write holds the child)
  "child-created": ["indexChild", "saveWithNext", "save", "publish"],
  // (those its state asks for: the watchdog for a running task, the notice of a run that ended before
  // the launch returned, the queue for a queued one)
  "launch-committed": ["watchdogStart", "save", "timer", "toastStarted", "noticeEnded", "queueFill"],
  // (the launch is not committed yet: launch-committed saves it)
  "launch-abandoned": ["releaseWaiters"],
  "prompt-sending": ["saveWithNext"],
  "prompt-sent": ["save"],
  // (watched only when it counts and its run works)
  "tool-seen": ["markCall", "watchToolCall", "saveWithNext"],
  "child-idle": ["checkCompletion"],
  // (checked only when it stalled)
  "child-error": ["checkStalled"],
  // (the abort first, then the end: its requests are held meanwhile, and it ends as it was when the abort was asked)
  abort: ["abortChild", "endRun"],
  // (the watchdog first, as the event came; a fork's receipt, once: saved and shown to the TUI)
  "assistant-message": ["watchAssistant", "save", "publish"],
  permission: ["personWait", "publish"],
  question: ["personWait", "publish"],
  unanswerable: ["answerForNobody"],
  // (the steer's sender is told once its count is saved)
  "steer-stored": ["markSteer", "save", "steerConfirmed"],
  "steers-refused": ["refuseSteers"],
  "steer-sent": ["awaitSteer"],
  "steer-unanswered": ["tellSteer"],
  guard: [],
  "waiter-added": ["addWaiter"],
  "waiter-gone": ["dropWaiter"],
  "steer-queued": ["save"],
  "usage-step": ["saveWithNext"],
  "usage-read": ["ledgerNote", "save"],
  "cancel-asked": ["save"],
  "cancel-failed": ["save"],
  "stop-asked": [],
  "result-read": ["save"],
  "notice-sent": ["save"],
  "notice-failed": [],
  reported: ["save"],
  "held-reason": ["save", "publish"],
  "parent-gone": ["save"],
  "wrapping-up": [],
  // (saved before `wrappingUp` is cleared: a sibling's delivery tells of this task's end once it is clear)
  "wrapped-up": ["save", "wrapUpDone", "unhost", "refreshOverlaps"],
  "worktree-removed": ["unhost", "save", "refreshOverlaps", "publish"],
  "worktree-taken": ["save", "refreshOverlaps", "publish"],
  "worktree-recreated": ["save"],
  "resume-runs": ["watchdogStart"],
  disposing: ["watchdogEnd", "releaseWaiters"],
  "request-answered": ["publish"],
  overlap: ["publish"],
  pushed: ["save", "publish"],
  // (its usage, as the parent's budget counts it; saved and shown to the TUI)
  "remote-seen": ["ledgerNote", "save", "publish"],
  "remote-cleaned": ["save"],
  // (its start follows at once: the edge `start` publishes it)
  "remote-started": ["save"],
};

export interface StepState {
  readonly task: Readonly<BackgroundTask>;
  readonly runtime: Readonly<StepRuntime>;
}

export type Step = { task: Partial<BackgroundTask>; runtime: Partial<StepRuntime>; effects: readonly Effect[] } | { refused: string };

const NOTHING: Step = { task: {}, runtime: {}, effects: [] };

/** What `input` does to the task now. Never mutates, never throws; a refused edge says why. */
export function step(state: StepState, input: TaskInput, now: number, effects: EffectTable = DEFAULT_TABLE): Step {
  const { task, runtime } = state;
  if (input.kind === "edge") return edgeStep(state, input, now, effects);
  const own = effects.inputs[input.kind];
  const change = (taskFields: Partial<BackgroundTask>, runtimeFields: Partial<StepRuntime> = {}, list: readonly Effect[] = own): Step => ({
    task: taskFields,
    runtime: runtimeFields,
    effects: list,
  });
  switch (input.kind) {
    case "claimed":
      return change(
        { ownerPid: input.pid },
        {},
        own.filter((e) => e !== (isSettled(task) ? "save" : "saveWithNext")),
      );
    case "child-created": {
      // It started or ended while its child was being created (a queued task's, after its launch): the
      // state that went out with the child is old, the new one is published once saved. Otherwise the
      // next save records the child (at the latest when the task starts; after a stop before that,
      // start-up links it by its metadata: recovery.ts adoptOrphans): saving here would put one more
      // file write per queued task among a turn's launches.
      const moved = input.createdAs !== undefined && input.createdAs !== task.status && !runtime.launching;
      const list = own.filter((e) => (moved ? e !== "saveWithNext" : e !== "save" && e !== "publish"));
      return change({ sessionID: input.sessionID }, { childPlan: undefined }, list);
    }
    case "launch-begun":
    case "launch-abandoned":
    case "child-idle":
    case "unanswerable":
    case "steers-refused":
    case "resume-runs":
    case "disposing":
    case "steer-sent":
    case "steer-unanswered":
    case "waiter-added":
    case "waiter-gone":
      return change({});
    case "guard":
      return change({}, { guard: input.guard });
    case "launch-committed": {
      // the launch's follow-ups, those its state asks for
      const list = own.filter(
        (e) =>
          (e !== "watchdogStart" || isWorking(task.status)) &&
          (e !== "noticeEnded" || !isMoving(task.status)) &&
          (e !== "queueFill" || meaningOf(task.status).queued),
      );
      return change({}, { launching: false }, list);
    }
    case "prompt-sending":
      return change({ startedAt: now }); // a launch's run starts when its prompt goes out, not when its child was asked for
    case "prompt-sent":
      return change({ queuedPrompt: undefined });
    case "tool-seen": {
      const counts = input.callID !== undefined && !runtime.seenCalls.has(input.callID);
      const watched = counts && isWorking(task.status);
      const list = own.filter((e) => (e !== "markCall" || counts) && (e !== "watchToolCall" || watched));
      return change({ lastTool: input.tool, ...(counts ? { toolCalls: task.toolCalls + 1 } : {}) }, {}, list);
    }
    case "child-error":
      return change({}, { lastError: input.error }, input.stalled ? own : []);
    case "abort":
      return isOpen(task.status) ? change({}) : NOTHING;
    case "assistant-message": {
      // a forked child's first finished message, once: its receipt (usage.ts); a paused task's usage
      // still counts (the step its pause cut short may still be answered, and is charged)
      const receipt = receiptOf(task, input.info, input.systemDiffers);
      const counts = meaningOf(task.status).countsUsage;
      // a task a remote parent follows publishes what each finished step spent: its parent reads its
      // usage and tool calls there (../remote/follow.ts), a step late, for its caps and its budget
      const stepSpent = task.relay !== undefined && counts && Boolean(input.info.time?.completed || input.info.finish);
      const list = own.filter((e) => (e === "watchAssistant" ? counts : e === "publish" ? receipt !== undefined || stepSpent : receipt !== undefined));
      return change(receipt ? { receipt } : {}, {}, list);
    }
    case "permission":
      return change({}, { permission: input.permission });
    case "question":
      return change({}, { question: input.question });
    case "steer-stored":
      if (runtime.steersCounted.has(input.mark)) return NOTHING; // the server may repeat a part's event
      return change({ steers: (task.steers ?? 0) + 1 }, { lastSteerAt: now });
    case "steer-queued":
      return change({ queuedPrompt: MESSAGES.queuedWithMessage(task.queuedPrompt ?? "", input.message), steers: (task.steers ?? 0) + 1 });
    case "usage-step": {
      const base = task.usage ?? NO_USAGE;
      const before = runtime.usageByMessage.get(input.messageID);
      const usageByMessage = new Map(runtime.usageByMessage).set(input.messageID, input.now);
      return change({ usage: addUsage(before ? addUsage(base, before, -1) : base, input.now) }, { usageByMessage });
    }
    case "usage-read":
      return change({ usage: input.usage });
    case "cancel-asked":
      return change({ cancelledByParent: true });
    case "cancel-failed":
      return change({ cancelledByParent: undefined });
    case "stop-asked":
      return change({}, { stopReason: input.reason });
    case "result-read":
      return change({ reportedRun: task.run, ...(input.asNotice ? { notifiedRun: task.run } : {}) });
    case "notice-sent":
      // the answer was kept for this notice only (background_output reads the child)
      return change({ notifiedRun: task.run }, { answer: undefined });
    case "notice-failed":
      return change({}, { noticeFailures: runtime.noticeFailures + 1 });
    case "reported":
      return change({ reportedRun: task.run });
    case "parent-gone":
      return change({ notifiedRun: task.run, reportedRun: task.run });
    case "held-reason":
      return meaningOf(task.status).waitsForPerson && task.error !== input.reason ? change({ error: input.reason }) : NOTHING;
    case "wrapping-up":
      return change({}, { wrappingUp: true });
    case "wrapped-up":
      return wrappedUpStep(task, input.outcome, own);
    case "worktree-removed":
      if (!task.worktree || task.worktree.removed) return NOTHING;
      return change({ worktree: { ...task.worktree, removed: input.why } });
    case "worktree-taken":
      if (!task.worktree) return NOTHING;
      return change({ worktree: { ...task.worktree, takenAt: input.at } });
    case "worktree-recreated":
      if (!task.worktree || task.worktree.removed) return NOTHING;
      return change({ worktree: input.worktree });
    case "request-answered":
      return change({}, { requestAnswer: input.answer });
    case "overlap":
      if (runtime.overlapNote === input.text) return NOTHING;
      return change({}, { overlapNote: input.text }, input.quiet ? [] : own);
    case "pushed":
      if (!task.worktree || task.worktree.removed) return NOTHING;
      return change({
        worktree: input.head ? { ...task.worktree, pushed: input.head, pushError: undefined } : { ...task.worktree, pushError: input.error ?? "not pushed" },
      });
    case "remote-seen": {
      const fields: Partial<BackgroundTask> = {
        ...(input.remote && !sameRemote(task.remote, input.remote) ? { remote: input.remote } : {}),
        ...(input.usage && !sameUsage(task.usage, input.usage) ? { usage: input.usage } : {}),
        ...(input.toolCalls !== undefined && input.toolCalls !== task.toolCalls ? { toolCalls: input.toolCalls } : {}),
        ...(input.lastTool !== undefined && input.lastTool !== task.lastTool ? { lastTool: input.lastTool } : {}),
      };
      if (!Object.keys(fields).length) return NOTHING;
      return change(
        fields,
        {},
        own.filter((e) => e !== "ledgerNote" || fields.usage),
      );
    }
    case "remote-started":
      if (!task.remoteWait || !meaningOf(task.status).queued) return NOTHING;
      return change({ remote: input.remote, worktree: input.worktree, remoteWait: undefined, queuedPrompt: undefined });
    case "remote-cleaned":
      if (!task.remote || task.remote.cleaned) return NOTHING;
      return change({ remote: { ...task.remote, cleaned: true } });
  }
}

function sameRemote(a: RemoteInfo | undefined, b: RemoteInfo): boolean {
  return a !== undefined && JSON.stringify(a) === JSON.stringify(b);
}

function sameUsage(a: Usage | undefined, b: Usage): boolean {
  return a !== undefined && (Object.keys(b) as (keyof Usage)[]).every((k) => a[k] === b[k]);
}

/** A run's commit on its worktree branch: its summary kept; a branch with no change lost its worktree, one with changes its directory (freed); a failure joins the error. */
function wrappedUpStep(task: Readonly<BackgroundTask>, outcome: WrapUpOutcome, own: readonly Effect[]): Step {
  const info = task.worktree;
  if (!info || "skipped" in outcome) return { task: {}, runtime: {}, effects: own.filter((e) => e === "wrapUpDone") };
  if ("failed" in outcome) {
    return {
      // (a task a remote parent launched: nothing could be pushed, which its parent reads)
      task: {
        error: task.error ? `${task.error}; ${outcome.failed}` : outcome.failed,
        ...(task.relay ? { worktree: { ...info, pushError: outcome.failed, wrapped: task.run } } : {}),
      },
      runtime: {},
      effects: own.filter((e) => e !== "unhost"),
    };
  }
  const { head, changes } = outcome.committed;
  const pushed = outcome.pushed && ("head" in outcome.pushed ? { pushed: outcome.pushed.head, pushError: undefined } : { pushError: outcome.pushed.error });
  const worktree = {
    ...info,
    ...pushed,
    ...(task.relay ? { wrapped: task.run } : {}),
    head,
    changes,
    ...(outcome.removed ? { removed: outcome.removed } : {}),
    ...(outcome.freedAt !== undefined ? { freedAt: outcome.freedAt } : {}),
  };
  delete worktree.takenAt; // a new run brings changes not taken yet
  if (changes === undefined) delete worktree.changes;
  // its worktree and branch gone: its instance no longer forwards its events. A freed one stays hosted:
  // the TUI's requests about it (take, discard) come as events of its child, on that instance's bus
  return { task: { worktree }, runtime: {}, effects: outcome.removed ? own : own.filter((e) => e !== "unhost") };
}

/** An edge (transitions.ts): its fields, the runtime a run's start or end resets, its effects. */
function edgeStep(state: StepState, input: Extract<TaskInput, { kind: "edge" }>, now: number, table: EffectTable): Step {
  const result = transition(state.task, input.edge, input.input, now, table.edges);
  if ("refused" in result) return result;
  const ends = result.effects.includes("endRunState");
  const fresh = result.effects.includes("freshRunState");
  // a run's end clears its waits and keeps its answer for the notice; a new run starts with fresh counters
  const answer = input.edge === "finish" ? (input.input as EdgeInput["finish"]).ending.answer : undefined;
  // (what only a running run needs goes once it ended: a server that runs for weeks keeps every ended
  // task's record, nothing more; the watchdog reads them only while the task runs)
  const released = { usageByMessage: new Map(), guard: { ...state.runtime.guard, judged: new Set<string>() } };
  const runtime: Partial<StepRuntime> = {
    ...(ends ? { lastError: undefined, permission: undefined, question: undefined, ...released, ...(answer !== undefined ? { answer } : {}) } : {}),
    ...(fresh ? { lastError: undefined, answer: undefined, noticeFailures: 0, stopReason: undefined } : {}),
  };
  return { task: result.next, runtime, effects: result.effects };
}

/** The effects of every input: the edges' rows and the other inputs' (a test swaps one to remove an effect). */
export interface EffectTable {
  readonly edges: typeof EDGES;
  readonly inputs: typeof INPUT_EFFECTS;
}

export const DEFAULT_TABLE: EffectTable = { edges: EDGES, inputs: INPUT_EFFECTS };

/** The input of an edge (`dispatch(entry, edge("pause", { reason }))`). */
export function edge<E extends Edge>(name: E, input: EdgeInput[E]): TaskInput {
  return { kind: "edge", edge: name, input } as TaskInput;
}
