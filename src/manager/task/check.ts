// The completion check of a task's run: its child's messages read, and the run ended if
// completion.ts's rule says it is over. A job of the task's mailbox (after a steer being stored,
// never beside it); idle and status events of the same moment share one check. The step asks for it
// (task/step.ts `checkCompletion`, `checkStalled`); the reconcile and start-up's recovery ask too.

import { type Client, getBusySessions, getMessages, isSessionGone, log } from "../../host/client.js";
import { activeDirectories } from "../../worktree/hub.js";
import { type BackgroundTask, isWorking } from "../../task-record.js";
import { type Ending, type EndingContext, decideEnding, readChildOutcome } from "./completion.js";
import type { TaskEntry } from "./registry.js";
import type { Dispatch, DispatchOptions } from "./runner.js";
import { usageOfSession } from "./usage.js";

/** What the check needs of the task's owner (task-manager.ts). */
export interface CheckHost extends Dispatch {
  readonly client: Client;
  now(): number;
  readonly reconcileIntervalMs: number;
  /** this process is a one-shot `opencode run` (an abort nobody of ours asked for is the run ending) */
  readonly oneShotRun: boolean;
  /** the entry of this very record (a stale copy finds none) */
  entryOf(task: BackgroundTask): TaskEntry | undefined;
  /** the run's end, once (the edge `finish`) */
  finish(task: BackgroundTask, ending: Ending, options?: DispatchOptions): Promise<void>;
  /** the check, as the owner offers it (the stalled check goes through it) */
  checkCompletion(task: BackgroundTask, context?: Partial<EndingContext>, options?: DispatchOptions): Promise<void>;
}

/** Reads the child's messages and ends the task if completion.ts says its run is over (a job of its mailbox). */
export function checkCompletion(host: CheckHost, task: BackgroundTask, context: Partial<EndingContext> = {}, options: DispatchOptions = {}): Promise<void> {
  const entry = host.entryOf(task);
  if (!entry) return Promise.resolve();
  return entry.runtime.mailbox
    .postOnce("check", async () => {
      if (!isWorking(task.status) || !task.sessionID) return; // no child yet: nothing has run
      let messages;
      try {
        messages = await getMessages(host.client, task.sessionID);
      } catch (error) {
        if (!isSessionGone(error)) throw error;
        return host.finish(task, { status: "error", error: "its child session no longer exists" }, options);
      }
      if (!isWorking(task.status)) return;
      const ending = decideEnding(readChildOutcome(messages, task.startedAt), {
        cancelledByParent: Boolean(task.cancelledByParent),
        processStopped: context.processStopped ?? false,
        oneShotRun: host.oneShotRun,
        stalledReason: context.stalledReason,
        stopReason: entry.runtime.stopReason,
      });
      if (!ending) return;
      // the authoritative sum, every run of the child; its save is the end's own (both asked for in
      // this same turn: one write holds both, keeping.ts save)
      const read = host.dispatch(entry, { kind: "usage-read", usage: usageOfSession(messages) });
      await host.finish(task, ending, options);
      await read;
    })
    .catch((error) => log(host.client, "warn", `checking task ${task.id} failed: ${(error as Error).message}`));
}

/** The step's completion check: a stalled child (a rejected prompt) is checked unless the server reports it busy. */
export async function checkRun(host: CheckHost, entry: TaskEntry, stalled: boolean): Promise<void> {
  const { task } = entry;
  if (!stalled) return host.checkCompletion(task);
  const busy = await getBusySessions(host.client, activeDirectories());
  if (!busy.has(task.sessionID)) await host.checkCompletion(task, { stalledReason: stalledReason(host, task) });
}

/**
 * Why an idle child without an answer should end now, if it should: a run the server rejected
 * (a session.error and no idle follows) or a run that never started. Otherwise it is still starting.
 */
export function stalledReason(host: Pick<CheckHost, "entryOf" | "now" | "reconcileIntervalMs">, task: BackgroundTask): string | undefined {
  const entry = host.entryOf(task);
  if (entry?.runtime.lastError) return entry.runtime.lastError;
  const since = Math.max(task.startedAt, entry?.runtime.lastSteerAt ?? 0); // a message sent into the run restarts the wait
  if (host.now() - since > 2 * host.reconcileIntervalMs) return "the child session stopped without answering";
  return undefined;
}
