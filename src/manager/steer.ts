// Steering: a message sent into a task that has not ended, without a new task, run or child.
//
// - A running task: the message goes to its child session at once (prompt_async). OpenCode 1.18.33
//   stores it as a user message and the child's running loop takes it into its next model request
//   (after the tool calls of its current step; tried on the real server). The text part carries a
//   mark (metadata, never sent to the model); the message is reported as sent only once the
//   server's event shows the part stored, never on the 204 alone (prompt_async answers before it
//   creates the message, and reports a failure as session.error).
// - A queued task: the message joins its prompt, which it gets when it starts.
// - An ended task: not steered (undefined): the caller resumes it as before.
//
// Every stored message with a mark in a task's child counts as one steer of the task, the TUI's
// "Send a message" included (it marks its messages the same way). A completion check waits for a
// steer in flight, so a run is never ended from messages read just before its steer was stored.

import { STEER_CONFIRM_MS } from "../constants.js";
import { MESSAGES } from "../prompts.js";
import { type Client, isSessionGone, log } from "../host/client.js";
import type { Ending } from "./completion.js";
import type { ToolReply } from "./launch.js";
import { sendTaskPrompt } from "./prompt.js";
import type { TaskEntry } from "./registry.js";
import { type BackgroundTask, isActive } from "./types.js";

/** What steering needs of the manager. */
export interface SteerHost {
  readonly client: Client;
  readonly registry: { get(id: string): TaskEntry | undefined };
  save(): Promise<void>;
  /** ends the task's run once (a child found gone) */
  finish(task: BackgroundTask, ending: Ending): Promise<void>;
}

type Outcome = { delivered: true } | { delivered: false; reason: string; unconfirmed?: boolean };

/** Steers waiting for the server to confirm them, by mark. */
const pending = new Map<string, { sessionID: string; settle: (outcome: Outcome) => void }>();

/** What steering keeps per task while this process runs it (nothing of it is saved but `task.steers`). */
interface SteerState {
  /** the steer being sent, until it is confirmed or refused */
  inFlight?: Promise<unknown>;
  /** marks already counted (the server may repeat a part's event) */
  counted: Set<string>;
  /** when the latest steer was stored */
  lastAt?: number;
}
const states = new WeakMap<TaskEntry, SteerState>();

function stateOf(entry: TaskEntry): SteerState {
  let state = states.get(entry);
  if (!state) states.set(entry, (state = { counted: new Set() }));
  return state;
}

/** The steer being sent to this task, if any: a completion check waits for it first. */
export function steerInFlight(entry: TaskEntry): Promise<unknown> | undefined {
  return states.get(entry)?.inFlight;
}

/** When the task's latest steer was stored (a run that got one then is not stalled before it is answered). */
export function lastSteerAt(entry: TaskEntry): number | undefined {
  return states.get(entry)?.lastAt;
}

function newMark(): string {
  return `steer_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 10)}`;
}

function settle(mark: string, outcome: Outcome): void {
  const waiting = pending.get(mark);
  if (!waiting) return;
  pending.delete(mark);
  waiting.settle(outcome);
}

/** The server stored a steer's part (event-decide.ts found its mark): the steer waiting for it is sent. */
export function steerStored(mark: string): void {
  settle(mark, { delivered: true });
}

/** A stored steer of the task's child counts once per mark (the server may repeat a part's event). */
export function countSteer(host: { now(): number; save(): Promise<void> }, entry: TaskEntry, mark: string): void {
  const state = stateOf(entry);
  if (state.counted.has(mark)) return;
  state.counted.add(mark);
  state.lastAt = host.now();
  entry.task.steers = (entry.task.steers ?? 0) + 1;
  void host.save();
}

/** The session failed or was deleted: every steer in flight into it is refused with the reason. */
export function steersRefused(sessionID: string, reason: string): void {
  for (const [mark, waiting] of pending) if (waiting.sessionID === sessionID) settle(mark, { delivered: false, reason });
}

/** The message, to the child, confirmed by the server's event, refused, or unconfirmed after STEER_CONFIRM_MS. */
async function deliver(manager: SteerHost, task: BackgroundTask, prompt: string): Promise<Outcome> {
  const mark = newMark();
  const sessionID = task.sessionID;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const outcome = new Promise<Outcome>((resolve) => {
    pending.set(mark, { sessionID, settle: resolve });
    timer = setTimeout(
      () => settle(mark, { delivered: false, unconfirmed: true, reason: `the server did not confirm that it stored it within ${STEER_CONFIRM_MS / 1000}s` }),
      STEER_CONFIRM_MS,
    );
    timer.unref?.();
  });
  try {
    // the task's agent, model and chosen variant (a native fork's variant and system too), the part marked
    await sendTaskPrompt(manager.client, task, prompt, { what: "sending the message", mark });
  } catch (error) {
    settle(mark, { delivered: false, reason: isSessionGone(error) ? "its child session no longer exists" : (error as Error).message });
    if (isSessionGone(error)) {
      await manager
        .finish(task, { status: "error", error: "its child session no longer exists" })
        .catch((failure) => log(manager.client, "warn", `ending task ${task.id} failed: ${(failure as Error).message}`));
    }
  }
  const result = await outcome;
  clearTimeout(timer);
  return result;
}

/**
 * `background_task({ resume, prompt })` on a task that has not ended. Returns the tool's answer, or
 * undefined when the task turned out to have ended meanwhile (the caller then resumes it).
 */
export async function steerTask(manager: SteerHost, task: BackgroundTask, prompt: string, agent: string | undefined): Promise<ToolReply | string | undefined> {
  const entry = manager.registry.get(task.id);
  if (!entry || entry.task !== task) return MESSAGES.steerNotDelivered(task, "the task is no longer known to this OpenCode process");
  if (agent && agent !== task.agent) return MESSAGES.steerAgentChange(task, agent);
  await entry.runtime.checking; // a completion check under way decides first: the task may have just ended
  if (!isActive(task.status)) return undefined;
  const reply = (output: string): ToolReply => ({
    title: `Message: ${task.description}`,
    output,
    metadata: { sessionId: task.sessionID, taskId: task.id, steered: true },
  });

  if (task.status === "queued") {
    task.queuedPrompt = MESSAGES.queuedWithMessage(task.queuedPrompt ?? "", prompt);
    task.steers = (task.steers ?? 0) + 1;
    await manager.save();
    return reply(MESSAGES.steerQueued(task));
  }
  // Just out of the queue: its own prompt is still on its way (startQueued drops queuedPrompt once sent).
  if (!task.sessionID || task.queuedPrompt !== undefined) {
    return MESSAGES.steerNotDelivered(task, "the task is just starting and its prompt is still being sent; call background_task with resume again in a moment");
  }
  const state = stateOf(entry);
  const previous = state.inFlight;
  const sending = (async () => {
    await previous; // one steer of a task at a time, in the order sent
    if (!isActive(task.status)) return undefined;
    return deliver(manager, task, prompt);
  })();
  state.inFlight = sending;
  const outcome = await sending.finally(() => {
    if (state.inFlight === sending) state.inFlight = undefined;
  });
  if (!outcome) return undefined;
  if (outcome.delivered) return reply(MESSAGES.steered(task));
  return outcome.unconfirmed ? MESSAGES.steerUnconfirmed(task, outcome.reason) : MESSAGES.steerNotDelivered(task, outcome.reason);
}
