// Doing what an OpenCode event means: the plugin's event hook. event-decide.ts decides the actions
// (pure); this carries them out, in order: what an event changes of a task is run as its step's input
// (task-step.ts, through the manager's `run`), nothing here writes a task. An action that waits (a completion check, a flush, an
// abort, a TUI request) is started in its turn and they are awaited together. The hook never throws:
// a failure is logged and the event dropped (the reconcile recovers a missed ending).

import type { AssistantMessage, Event } from "../host/types.js";
import { abortQuietly, getBusySessions, log } from "../host/client.js";
import { activeDirectories, sessionDirectory } from "../worktree/hub.js";
import type { EndingContext } from "./completion.js";
import { type EventAction, type RegistryView, decideEvent, decideOnArrival } from "./event-decide.js";
import type { ParentNotices } from "./notices.js";
import { type QuestionHost, answerForNobody, questionPolicy } from "./questions.js";
import type { TaskEntry } from "./registry.js";
import { type RequestHost, onRequest } from "./requests.js";
import { type SteerHost, steerStored, steersRefused } from "./steer.js";
import type { BackgroundTask } from "./types.js";
import type { Watchdog } from "./watchdog.js";
import { receiptOf } from "./receipt.js";

/** What carrying out an event's actions needs of the manager. */
export interface EventHost extends SteerHost, QuestionHost {
  readonly isDisposed: boolean;
  /** the child's model requests wait at the gate (step-gate.ts) until `work`, an abort of it, is done */
  holdRequests<T>(sessionID: string, work: Promise<T>): Promise<T>;
  readonly registry: RegistryView & { get(id: string): TaskEntry | undefined } & RequestHost["registry"];
  readonly notices: Pick<ParentNotices, "recordParentState" | "flush" | "parentGone">;
  readonly watchdog: Pick<Watchdog, "toolCall" | "assistantMessage">;
  readonly options: Parameters<typeof questionPolicy>[0]["options"];
  readonly oneShotRun: boolean;
  now(): number;
  /** start-up (the task file loaded, recovery done): events wait for it */
  ready(): Promise<void>;
  checkCompletion(task: BackgroundTask, context?: Partial<EndingContext>): Promise<void>;
  /** why an idle child without an answer should end now, if it should */
  stalledReason(task: BackgroundTask): string | undefined;
}

/** The plugin's event hook. Resolves when the work the event set off is done (tests wait on it). */
export async function applyEvent(host: EventHost & RequestHost, event: Event): Promise<void> {
  if (host.isDisposed) return;
  try {
    // A parent's busy/idle is recorded the moment it arrives, even while start-up still runs: it is newer
    // than any snapshot asked for before it (parent-busy.ts). (Before the task file is loaded nobody is
    // a parent yet; the start-up snapshot, asked for after that, is newer anyway.)
    const arrival = runActions(host, event, decideOnArrival(event, host.registry)); // (nothing of it waits)
    if (arrival.dropped) return;
    await host.ready();
    const { work } = runActions(host, event, decideEvent(event, host.registry, questionPolicy(host)));
    await Promise.all([...arrival.work, ...work]);
  } catch (error) {
    log(host.client, "error", `offshoot event ${event?.type} failed: ${(error as Error).message}`);
  }
}

/**
 * Carries the actions out in order: each is done, or started and its promise kept (`work`, awaited
 * together by the caller). A `drop` is logged and ends the list.
 */
function runActions(host: EventHost & RequestHost, event: Event, actions: EventAction[]): { work: Promise<void>[]; dropped: boolean } {
  const work: Promise<void>[] = [];
  for (const action of actions) {
    if (action.kind === "drop") {
      log(host.client, "error", `offshoot event ${event?.type} failed: ${action.reason}`);
      return { work, dropped: true };
    }
    const started = carryOut(host, action);
    if (started) work.push(started);
  }
  return { work, dropped: false };
}

/** One action: done now, or started (its promise returned). */
function carryOut(host: EventHost & RequestHost, action: Exclude<EventAction, { kind: "drop" }>): Promise<void> | void {
  switch (action.kind) {
    case "record-parent-state":
      return host.notices.recordParentState(action.parent, action.busy);
    case "flush-notices":
      return host.notices.flush(action.parent);
    case "parent-gone":
      return host.notices.parentGone(action.parent);
    case "tui-request":
      return onRequest(host, action.sessionID, action.request, action.parentSessionID);
    case "answer-for-nobody":
      return answerForNobody(host.client, action.taskId, action.sessionID, action.requestID, action.answers);
  }
  const entry = host.registry.get(action.taskId);
  if (!entry) return;
  const { task } = entry;
  switch (action.kind) {
    case "task":
      return host.run(entry, action.input).then(() => undefined);
    case "steer-confirmed":
      return steerStored(entry, action.mark);
    case "steers-refused":
      return steersRefused(entry, action.reason);
    case "check-completion":
      return host.checkCompletion(task);
    case "check-stalled":
      return checkStalled(host, task);
    case "watch-tool-call":
      return host.watchdog.toolCall(entry, action.part);
    case "watch-assistant":
      return host.watchdog.assistantMessage(entry, action.info);
    case "record-receipt":
      return recordReceipt(host, entry, action.info);
    case "end":
      return (
        action.abortFirst ? host.holdRequests(task.sessionID, abortQuietly(host.client, task.sessionID, sessionDirectory(task.sessionID))) : Promise.resolve()
      ).then(() => host.finish(task, action.ending));
  }
}

/** A rejected prompt: unless the server reports the child busy, its run is checked with the reason it stalled. */
async function checkStalled(host: EventHost, task: BackgroundTask): Promise<void> {
  const busy = await getBusySessions(host.client, activeDirectories());
  if (!busy.has(task.sessionID)) await host.checkCompletion(task, { stalledReason: host.stalledReason(task) });
}

/** The fork receipt, once: kept on the task (saved) and shown to the TUI (published: task-step.ts `receipt`). */
function recordReceipt(host: EventHost, entry: TaskEntry, info: AssistantMessage): Promise<void> | void {
  const receipt = receiptOf(entry.task, info);
  if (receipt) return host.run(entry, { kind: "receipt", receipt }).then(() => undefined);
}
