// The gate before each model request of a child. OpenCode's session loop calls the
// `experimental.chat.messages.transform` hook with the session's messages just before it builds and
// sends the next request, and waits for the hook (the loop in the pinned source:
// `trigger("experimental.chat.messages.transform", {}, { messages })`, then `process`). Each step's
// usage also reaches the plugin as a message event, but that event is handled on its own time: the
// loop could run the step's tools and send the next request before the plugin had counted the step,
// and a cap's or the budget's abort then landed on a request already sent. The provider charged it;
// the child's message, aborted mid-stream, records nothing (a spend cap of 5,000 tokens ended a
// child at its fifth step of 2,300; a budget of 10k read "10k of 10k" when 11k were charged).
//
// THE RULE: before a child's request goes out, its finished steps of this run (the assistant
// messages after the last user message, as the loop hands them) are counted through the same path
// as their events (watchdog.ts `assistantMessage`, once per message: the total is the same
// whichever comes first; the gate starts after the newest step already counted, so its work is the
// new steps). A stop or a pause that this or an event sets off holds the child's requests until its
// abort is done (`RequestHolds`, registered in the same tick as it is decided), and the request
// waits for that hold: the abort lands while the loop waits here, so the request is never sent, and
// every step the provider answered is a step the task counted.
//
// Pure up to the host's calls; reading the messages is linear in the run's steps (OpenCode itself
// converts every message of the session for each request).

import type { AssistantMessage } from "../../host/types.js";
import type { SessionMessage } from "../../fork/types.js";
import { isWorking } from "../../task-record.js";
import type { SpendHost } from "./host.js";

/** What the gate uses of the room's host, and the holds of children whose abort is in flight. */
export type StepGateHost = Pick<SpendHost, "ofChild" | "stepFinished" | "counted"> & { readonly holds: RequestHolds };

/** The session of the messages the loop hands (the hook's input names none), or undefined. */
export function sessionOf(messages: readonly SessionMessage[]): string | undefined {
  const id = messages.at(-1)?.info?.sessionID;
  return typeof id === "string" && id ? id : undefined;
}

/** The finished assistant messages after the last user message, oldest first: the run's steps the next request follows. */
export function finishedSteps(messages: readonly SessionMessage[]): AssistantMessage[] {
  let start = messages.length;
  while (start > 0 && messages[start - 1]?.info?.role !== "user") start -= 1;
  const steps: AssistantMessage[] = [];
  for (let i = start; i < messages.length; i++) {
    const info = messages[i]?.info as Partial<AssistantMessage> | undefined;
    if (info?.role === "assistant" && typeof info.id === "string" && info.time?.completed) steps.push(info as AssistantMessage);
  }
  return steps;
}

/**
 * Resolves when the session's next request may go (or no longer matters: its child was aborted
 * meanwhile). Never throws nor rejects: messages it cannot read, or a count that fails, let the
 * request go (`warn` says why; its events and the run's end count the step as before).
 */
export function gateStep(host: StepGateHost, messages: readonly SessionMessage[], warn: (message: string) => void): Promise<void> {
  let sessionID: string | undefined;
  try {
    sessionID = sessionOf(messages);
    if (!sessionID) return Promise.resolve();
    const entry = host.ofChild(sessionID);
    if (entry && isWorking(entry.task.status)) {
      // the steps after the newest one already counted (usually none, or the one just finished)
      const steps = finishedSteps(messages);
      let first = steps.length;
      while (first > 0 && !host.counted(entry, steps[first - 1]!)) first -= 1;
      for (const info of steps.slice(first)) {
        host.stepFinished(entry, info);
        if (!isWorking(entry.task.status) || entry.runtime.stopReason) break; // (held: the rest is counted by its events and the run's end)
      }
    }
  } catch (error) {
    warn(`counting the steps of session ${sessionID ?? "?"} before its request failed: ${(error as Error)?.message ?? String(error)}`);
  }
  return sessionID ? host.holds.of(sessionID) : Promise.resolve();
}

/**
 * Child sessions whose model requests wait: a stop's or a pause's abort in flight. One per session,
 * the newest; gone once it settled. Owned by the manager; holds nothing across a restart (an abort
 * outlives no process).
 */
export class RequestHolds {
  private readonly held = new Map<string, Promise<void>>();

  /** The session's requests wait until `work` settles; returns `work`. */
  until<T>(sessionID: string, work: Promise<T>): Promise<T> {
    if (!sessionID) return work;
    const settled = work.then(
      () => undefined,
      () => undefined,
    );
    this.held.set(sessionID, settled);
    void settled.then(() => {
      if (this.held.get(sessionID) === settled) this.held.delete(sessionID);
    });
    return work;
  }

  /** Settles when the session's hold does (at once when there is none). */
  of(sessionID: string): Promise<void> {
    return this.held.get(sessionID) ?? Promise.resolve();
  }
}
