// The one runner of task/step.ts: it writes what a step returns on the task's record and runtime
// (the only place a field of a task is assigned, besides a record's creation), then carries the
// step's effects out, once, in their order. An effect that is I/O is awaited before the next; the
// others run at once. A refused edge is logged and changes nothing.
//
// The write happens before anything is awaited: a caller that does not await sees the new state at
// once. The runner is not a mailbox (mailbox.ts is): an effect may run a step of its own task (a
// worktree's commit of the run records what it found), and nothing here waits for a job.

import type { AssistantMessage } from "../../host/types.js";
import { taskEndedToast, taskStartedToast } from "../../prompts.js";
import { permissionText } from "../../task-state.js";
import type { SteerOutcome, TaskEntry, TaskRuntime } from "./registry.js";
import { DEFAULT_TABLE, type Effect, type EffectTable, type WrapUpOutcome, type TaskInput, edge, step } from "./step.js";
import { type BackgroundTask, type TaskFields, isOpen, isWorking } from "../../task-record.js";
import { systemDifference } from "../../native/request-check.js";

/**
 * A task's entry as its one writer sees it: everyone else holds it readonly all the way down
 * (registry.ts TaskEntry), so a write anywhere else does not compile.
 */
type Writable = { readonly task: TaskFields; readonly runtime: TaskRuntime };
const writable = (entry: TaskEntry): Writable => entry as unknown as Writable;

/** The wake/deliver of the notice a `finish` sends (task-manager.ts finish). */
export type DispatchOptions = { wake?: boolean; deliver?: boolean };

/**
 * THE way a task changes, as every part of the manager sees it (TaskManager.dispatch): an input goes to
 * the task's step (task/step.ts), which says what it writes and which effects follow; the runner here
 * writes it and carries them out in order. False when the step refused it (logged, nothing changed).
 */
export interface Dispatch {
  dispatch(entry: TaskEntry, input: TaskInput, options?: DispatchOptions): Promise<boolean>;
}

/** What the effects call: the manager's parts, nothing more. */
export interface RunnerHost {
  now(): number;
  warn(message: string): void;
  parentBusy(parentSessionID: string): void;
  watchdog: {
    runStarted(entry: TaskEntry): void;
    runEnded(entry: TaskEntry): void;
    personWaitChanged(entry: TaskEntry, what?: string): void;
    toolCall(entry: TaskEntry, call: { tool: string; args?: unknown }): void;
    assistantMessage(entry: TaskEntry, info: AssistantMessage): void;
  };
  /** the child's loop aborted; its model requests wait until that is done (step-gate.ts) */
  abortChild(task: BackgroundTask): Promise<void>;
  /** the child's run checked as a job of its mailbox (completion.ts); `stalled`: with the reason it stalled, unless the server reports it busy */
  checkCompletion(entry: TaskEntry, stalled: boolean): Promise<void>;
  /** the child's question answered for nobody (questions.ts) */
  answerForNobody(task: BackgroundTask, requestID: string, answers: string[][]): Promise<void>;
  /** a worktree task's run committed (src/worktree); never throws */
  wrapUpRun(task: BackgroundTask): Promise<WrapUpOutcome>;
  toast(toast: { title: string; message: string; variant: "info" | "success" | "warning" | "error" }): void;
  /** the task's state in its child's metadata (publish.ts) */
  publish(entry: TaskEntry): void;
  updateReconcileTimer(): void;
  fillQueue(): void;
  save(): Promise<void>;
  noticeEnded(entry: TaskEntry, options: { wake: boolean; deliver: boolean }): Promise<void>;
  /** the registry finds the task by its child session */
  indexChild(entry: TaskEntry): void;
  /** the parent's budget ledger takes the task's usage */
  ledgerNote(task: BackgroundTask): void;
  /** the overlap lines of the parent's worktree tasks recomputed (overlaps.ts); this task's own is published by its own publish */
  refreshOverlaps(task: BackgroundTask): void;
  /** the task's worktree is gone: its instance forwards nothing more */
  unhost(task: BackgroundTask): void;
  /** the effects' table (a test removes one effect at a time); the real one when absent */
  readonly table?: EffectTable;
}

/** Runs `input` on the entry's task: written, then its effects in order. False (logged, nothing changed) when refused. */
export function runStep(host: RunnerHost, entry: TaskEntry, input: TaskInput, options: DispatchOptions = {}): Promise<boolean> {
  // a native child's first request as sent, checked in the request hooks (native/request-check.ts): a fact for its receipt
  if (input.kind === "assistant-message" && entry.task.fork?.kind === "native" && !entry.task.receipt && entry.task.sessionID) {
    const differs = systemDifference(entry.task.sessionID);
    if (differs) input = { ...input, systemDiffers: differs };
  }
  const written = writeStep(entry, input, host.now(), host.table);
  if ("refused" in written) {
    host.warn(`task ${entry.task.id}: ${written.refused}; nothing changed`);
    return Promise.resolve(false);
  }
  return runEffects(host, entry, written.effects, input, options);
}

/** The step's write alone: the record and runtime take what it returns; its effects are returned, not run (the runner runs them). */
export function writeStep(
  entry: TaskEntry,
  input: TaskInput,
  now: number,
  table: EffectTable = DEFAULT_TABLE,
): { effects: readonly Effect[] } | { refused: string } {
  const result = step(entry, input, now, table);
  if ("refused" in result) return result;
  const { task, runtime } = writable(entry);
  Object.assign(task, result.task); // the only place a task's fields change
  Object.assign(runtime, result.runtime);
  return result;
}

async function runEffects(host: RunnerHost, entry: TaskEntry, effects: readonly Effect[], input: TaskInput, options: DispatchOptions): Promise<boolean> {
  for (const effect of effects) {
    if (effect === "stopIfLaunching") {
      if (entry.runtime.launching) break; // commitLaunch takes it from here
      continue;
    }
    const pending = runEffect(host, entry, effect, input, options);
    if (pending) await pending;
  }
  return true;
}

function runEffect(
  host: RunnerHost,
  entry: TaskEntry,
  effect: Exclude<Effect, "stopIfLaunching">,
  input: TaskInput,
  options: DispatchOptions,
): Promise<unknown> | void {
  const { task, runtime } = writable(entry);
  switch (effect) {
    case "abortChild":
      return host.abortChild(task);
    case "endRun":
      // (the edge refuses a run that ended meanwhile: nothing to log for it)
      if (input.kind === "abort" && isOpen(task.status)) return runStep(host, entry, edge("finish", { ending: input.ending }), options);
      return;
    case "endRunState":
    case "freshRunState":
      return; // (the step wrote the run's runtime fields)
    case "parentBusy":
      return host.parentBusy(task.parentSessionID);
    case "watchdogStart":
      return host.watchdog.runStarted(entry);
    case "watchdogEnd":
      return host.watchdog.runEnded(entry);
    case "wrapUpRun":
      if (!task.worktree) return;
      // meanwhile a sibling's delivery leaves this task's notice to its own end (notices.ts)
      return runStep(host, entry, { kind: "wrapping-up" }).then(() =>
        host.wrapUpRun(task).then((outcome) => runStep(host, entry, { kind: "wrapped-up", outcome })),
      );
    case "releaseWaiters":
      return releaseWaiters(entry);
    case "toastStarted":
      return host.toast(taskStartedToast(task));
    case "toastEnded":
      return host.toast(taskEndedToast(task));
    case "publish":
      return host.publish(entry);
    case "timer":
      return host.updateReconcileTimer();
    case "queueFill":
      return host.fillQueue();
    case "save":
      return host.save();
    case "saveWithNext":
      return; // (nothing written now: the task file's next save holds every committed task; task/step.ts says which inputs)
    case "noticeEnded":
      return host.noticeEnded(entry, { wake: options.wake ?? true, deliver: options.deliver ?? true });
    case "indexChild":
      return host.indexChild(entry);
    case "markCall":
      if (input.kind === "tool-seen" && input.callID !== undefined) runtime.seenCalls.add(input.callID);
      return;
    case "markSteer":
      if (input.kind === "steer-stored") runtime.steersCounted.add(input.mark);
      return;
    case "ledgerNote":
      return host.ledgerNote(task);
    case "personWait": {
      const what = personWaitOf(entry);
      if (isWorking(task.status)) host.watchdog.personWaitChanged(entry, what);
      if (what) for (const done of [...(runtime.waitWaiters ?? [])]) done();
      return;
    }
    case "refreshOverlaps":
      return host.refreshOverlaps(task);
    case "unhost":
      return host.unhost(task);
    case "wrapUpDone":
      runtime.wrappingUp = false;
      return;
    case "checkCompletion":
      return host.checkCompletion(entry, false);
    case "checkStalled":
      return host.checkCompletion(entry, true);
    case "watchToolCall":
      if (input.kind === "tool-seen") host.watchdog.toolCall(entry, { tool: input.tool, args: input.args });
      return;
    case "watchAssistant":
      if (input.kind === "assistant-message") host.watchdog.assistantMessage(entry, input.info);
      return;
    case "answerForNobody":
      if (input.kind === "unanswerable") return host.answerForNobody(task, input.requestID, input.answers);
      return;
    case "steerConfirmed":
      if (input.kind === "steer-stored") resolveSteer(entry, input.mark, { delivered: true });
      return;
    case "refuseSteers":
      if (input.kind === "steers-refused")
        for (const mark of [...runtime.steerWaits.keys()]) resolveSteer(entry, mark, { delivered: false, reason: input.reason });
      return;
    case "awaitSteer":
      if (input.kind === "steer-sent") runtime.steerWaits.set(input.mark, input.told);
      return;
    case "tellSteer":
      if (input.kind === "steer-unanswered") resolveSteer(entry, input.mark, input.outcome);
      return;
    case "addWaiter":
      if (input.kind !== "waiter-added") return;
      runtime.endWaiters.add(input.done);
      if (input.orPersonWait) (runtime.waitWaiters ??= new Set()).add(input.done);
      return;
    case "dropWaiter":
      if (input.kind !== "waiter-gone") return;
      runtime.endWaiters.delete(input.done);
      runtime.waitWaiters?.delete(input.done);
      return;
  }
}

/** The steer waiting for `mark` is told how it went, once (steer.ts waits for it). */
function resolveSteer(entry: TaskEntry, mark: string, outcome: SteerOutcome): void {
  const { steerWaits } = writable(entry).runtime;
  const waiting = steerWaits.get(mark);
  if (!waiting) return;
  steerWaits.delete(mark);
  waiting(outcome);
}

/** What the child waits for a person for, if it does ("permission bash rm -rf build", "question \"Which?\""). */
function personWaitOf(entry: TaskEntry): string | undefined {
  const { permission, question } = entry.runtime;
  if (permission) return `permission ${permissionText(permission)}`;
  if (question) return `question ${JSON.stringify(question.questions[0]?.question ?? "")}`;
  return undefined;
}

/** background_output({ block }) callers waiting for the task to end are released. */
function releaseWaiters(entry: TaskEntry): void {
  for (const done of [...entry.runtime.endWaiters]) done();
}
