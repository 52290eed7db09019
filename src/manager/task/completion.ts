// Where a task is decided complete. Pure: the child's messages and what the manager knows go in,
// an ending (or "still running") comes out. The manager reads the messages and applies the ending.

import type { AssistantMessage } from "../../host/types.js";
import type { SessionMessage } from "../../fork/types.js";
import { describeError } from "../../host/client.js";
import type { TaskStatus } from "../../task-record.js";

export type EndStatus = Exclude<TaskStatus, "running" | "resumed">;

export interface ChildOutcome {
  /** the latest prompt has been answered (successfully or not) */
  finished: boolean;
  /** all text parts of the last assistant message */
  answer: string;
  error?: string;
  aborted: boolean;
  /** when the child last did something for this run (ms), if it did anything */
  lastActivity?: number;
}

export interface Ending {
  status: EndStatus;
  error?: string;
  answer?: string;
  /** when the run really ended, if earlier than now (a run cut short by a stopped process) */
  endedAt?: number;
}

/**
 * What the child produced for its latest prompt. An idle event alone is not proof of completion
 * (a session is idle before its loop starts), so completion is read from the messages themselves.
 * `since`: the run's start; a latest prompt older than that is a previous run's.
 */
export function readChildOutcome(messages: readonly SessionMessage[], since = 0): ChildOutcome {
  let lastUser = -1;
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i]?.info?.role === "user") {
      lastUser = i;
      break;
    }
  }
  const unfinished: ChildOutcome = { finished: false, answer: "", aborted: false };
  if (lastUser < 0 || (messages[lastUser]!.info.time?.created ?? 0) < since) return unfinished;
  const last = messages.at(-1)!.info;
  unfinished.lastActivity = (last.time as { completed?: number }).completed ?? last.time.created;
  let answer: SessionMessage | undefined;
  for (let i = messages.length - 1; i > lastUser; i--) {
    if (messages[i]!.info.role === "assistant") {
      answer = messages[i];
      break;
    }
  }
  if (!answer) answer = stepCutShort(messages, lastUser, since);
  if (!answer) return unfinished;
  const info = answer.info as AssistantMessage;
  const text = (Array.isArray(answer.parts) ? answer.parts : [])
    .flatMap((p) => (p.type === "text" && typeof p.text === "string" && !p.ignored && !p.synthetic ? [p.text] : []))
    .join("\n")
    .trim();
  const aborted = info.error?.name === "MessageAbortedError";
  const error = info.error ? describeError(info.error) : undefined;
  const finished = Boolean(info.error || info.finish || info.time.completed);
  return { finished, answer: text, error, aborted, lastActivity: unfinished.lastActivity };
}

/**
 * A message sent into the run while a step was running (a steer, steer.ts) is answered by the next
 * step. When the running step then ended in an error or an abort, the loop stopped and no step
 * answers it: the run ended with that step. (A step that ended before the message came is not it: a
 * message to an idle child starts a new loop, which answers it.)
 */
function stepCutShort(messages: readonly SessionMessage[], lastUser: number, since: number): SessionMessage | undefined {
  for (let i = lastUser - 1; i >= 0; i--) {
    const info = messages[i]!.info;
    if (info.role === "user") return undefined;
    if (info.role !== "assistant") continue;
    const sent = messages[lastUser]!.info.time.created;
    const completed = (info as AssistantMessage).time.completed;
    return info.time.created >= since && (info as AssistantMessage).error && (completed === undefined || completed >= sent) ? messages[i] : undefined;
  }
  return undefined;
}

export interface EndingContext {
  /** the parent itself asked for the cancel */
  cancelledByParent: boolean;
  /** the OpenCode process that ran the child has stopped: whatever is unfinished was interrupted */
  processStopped: boolean;
  /**
   * this process is a one-shot `opencode run`: no TUI and no other client reach its sessions, so an
   * abort nobody of ours asked for is the run ending (OpenCode aborts its sessions on the way out),
   * even when its event arrives before the plugin is disposed
   */
  oneShotRun?: boolean;
  /** why an unfinished idle child should end now (a rejected prompt, a run that never started) */
  stalledReason?: string;
  /** the plugin stopped the child itself (watchdog.ts), for this reason */
  stopReason?: string;
}

export const INTERRUPTED_REASON = "interrupted: OpenCode stopped while the task ran; resume it to continue";

/** The reason a cancel of the parent's agent records (its abort's end, or cancel.ts's own end of the run). */
export const CANCELLED_BY_PARENT = "cancelled by the parent session";

/** A queued fork whose child was not created before OpenCode stopped: what it inherits was held in memory only. */
export const CHILD_NEVER_CREATED =
  "OpenCode stopped before this forked task's child session was created, and what it was to inherit was lost; launch it again with fork: true";

/** The rule. `undefined`: the child is still working on its latest prompt. */
export function decideEnding(outcome: ChildOutcome, context: EndingContext): Ending | undefined {
  if (outcome.finished) {
    if (outcome.aborted) {
      if (context.stopReason) return { status: "error", error: context.stopReason };
      if (context.cancelledByParent) return { status: "cancelled", error: CANCELLED_BY_PARENT };
      // OpenCode aborts running sessions when it quits: that is an interruption, not a cancel.
      if (context.processStopped || context.oneShotRun) return { status: "interrupted", error: INTERRUPTED_REASON, endedAt: outcome.lastActivity };
      return { status: "cancelled", error: "the child session was aborted from outside (the TUI or another client)" };
    }
    if (outcome.error) return { status: "error", error: outcome.error };
    return { status: "completed", answer: outcome.answer };
  }
  if (context.processStopped) return { status: "interrupted", error: INTERRUPTED_REASON, endedAt: outcome.lastActivity };
  if (context.stalledReason) return { status: "error", error: context.stalledReason };
  return undefined;
}
