// Where a parent is told. One noReply notice per ended task run, and at most one wake-up prompt
// when the parent's last running task has ended (or one failed) and there is something it has not
// read yet. Nothing is delivered while the parent is busy: it would land inside a running turn. Whether
// it is busy is parent-busy.ts's to say (the newest information wins); it is asked again before every
// notice and the wake, so a turn that starts while notices go out stops the delivery after the notice
// in flight, and the rest wait for the parent's next idle.
//
// Exactly once, under faults: what was delivered is recorded per task run (notifiedRun: notices,
// reportedRun: wakes and results the parent read itself) and saved right after each delivery. A
// process killed between the delivery and the save left the notice in the parent's messages: tasks
// loaded from the file are checked against those messages before anything is sent again.
// Never retried forever: a parent that is gone (404) ends everything owed to it; other failures are
// retried by the reconcile at most MAX_DELIVERY_ATTEMPTS times.

import { MAX_DELIVERY_ATTEMPTS } from "../../constants.js";
import { buildTaskNotification, buildWakePrompt, isNoticeOf } from "./notices.txt.js";
import { type Client, call, getBusySessions, getMessages, isSessionGone, log } from "../../host/client.js";
import { prompt, promptAsync } from "../../host/session.js";
import { activeDirectories } from "../../worktree/hub.js";
import { type BusySnapshot, ParentBusy } from "./busy.js";
import type { TaskEntry } from "../task/registry.js";
import type { Dispatch } from "../task/runner.js";
import { isMoving, isOpen, meaningOf } from "../../task-record.js";

/** What the notices need from the rest of the manager, and nothing more. */
export interface NoticeHost extends Dispatch {
  readonly client: Client;
  now(): number;
  /** the parent's committed tasks, in launch order */
  tasksOf(parent: string): TaskEntry[];
  /** every session that has tasks */
  parents(): string[];
  /** whether anything is outstanding changed (the reconcile timer follows it) */
  outstandingChanged(): void;
  /** the session budget's line for the next notice, from 80% on (session-budget.ts) */
  budgetLine?(parent: string): string | undefined;
}

export class ParentNotices {
  private readonly parentBusy = new ParentBusy();
  /** parents owed a wake-up prompt; in memory only: a restart never wakes anybody */
  private readonly owedWake = new Set<string>();
  private readonly delivering = new Map<string, Promise<void>>();
  /** parents whose messages were checked for notices a previous process delivered but did not record */
  private readonly checkedForOldNotices = new Set<string>();
  /** parents deleted (or answering 404): nothing is delivered to them again */
  private readonly gone = new Set<string>();
  private readonly wakeFailures = new Map<string, number>();
  /**
   * Parents owed the notice that their background budget is reached (session-budget.ts decides it
   * once per budget and records that in budgets.json before it is sent: at most once, also across a
   * restart). In memory until delivered.
   */
  private readonly owedBudget = new Map<string, string>();

  constructor(private readonly host: NoticeHost) {}

  /** An event says the parent is busy or idle now (recorded at once; an idle parent's flush is the caller's). */
  recordParentState(parent: string, busy: boolean): void {
    this.parentBusy.event(parent, busy);
  }

  /** Reads the server's busy sessions; what it says about a parent counts only through fillFromSnapshot. */
  readBusySessions(): Promise<BusySnapshot> {
    return this.parentBusy.snapshot(() => getBusySessions(this.host.client, activeDirectories()));
  }

  /** The snapshot's word on the parent, if no event spoke since it was requested; an idle parent gets what waited for it. */
  fillFromSnapshot(parent: string, snapshot: BusySnapshot): Promise<void> {
    this.parentBusy.fill(parent, snapshot);
    return this.flush(parent);
  }

  /**
   * Called once per ended run. `wake: false` (start-up recovery, a parent that read the result in the
   * same call) only queues the notice. `deliver: false` leaves the delivery to a later flush.
   */
  async taskEnded(entry: TaskEntry, options: { wake: boolean; deliver: boolean }): Promise<void> {
    const parent = entry.task.parentSessionID;
    // A cancel the parent asked for is no news to it (saved by its step, before any delivery; the end
    // itself was saved by the edge that called this).
    if (meaningOf(entry.task.status).end === "cancel" && entry.task.cancelledByParent) await this.host.dispatch(entry, { kind: "reported" });
    if (options.wake && !this.gone.has(parent)) {
      const siblings = this.host.tasksOf(parent);
      const stillRunning = siblings.some(stillWorking); // (a paused task waits for a person, not for the parent)
      if (meaningOf(entry.task.status).end === "failure" || (!stillRunning && siblings.some(unreported))) this.owedWake.add(parent);
    }
    if (options.deliver) await this.flush(parent);
  }

  /** The parent is owed the one notice that its budget is reached; delivered with its next flush. */
  budgetReached(parent: string, text: string): void {
    if (this.gone.has(parent)) return;
    this.owedBudget.set(parent, text);
    this.host.outstandingChanged();
    void this.flush(parent);
  }

  /** A deleted parent: everything owed to it is dropped (recorded as done, so never retried; resolves once saved). */
  async parentGone(parent: string): Promise<void> {
    this.gone.add(parent);
    this.owedWake.delete(parent);
    this.owedBudget.delete(parent);
    this.parentBusy.forget(parent);
    // (each written at once; their saves, asked for in this same turn, are one write)
    await Promise.all(this.host.tasksOf(parent).map((entry) => this.host.dispatch(entry, { kind: "parent-gone" })));
  }

  private undelivered(parent: string): TaskEntry[] {
    if (this.gone.has(parent)) return [];
    return this.host.tasksOf(parent).filter((e) => !notEnded(e) && e.task.notifiedRun < e.task.run);
  }

  hasOutstanding(): boolean {
    return this.parentsWithOutstanding().length > 0;
  }

  /** Parents owed a notice or a wake. */
  parentsWithOutstanding(): string[] {
    const owed = this.host.parents().filter((p) => this.owedWake.has(p) || this.owedBudget.has(p) || this.undelivered(p).length > 0);
    for (const p of this.owedBudget.keys()) if (!owed.includes(p)) owed.push(p);
    return owed;
  }

  /** Delivers queued notices and the wake-up, once, if the parent is idle. Safe to call often. */
  flush(parent: string): Promise<void> {
    const running = this.delivering.get(parent);
    if (running) return running.then(() => this.flush(parent));
    if (!this.parentBusy.isIdle(parent)) return Promise.resolve();
    const delivery = this.deliver(parent)
      .catch((error) => log(this.host.client, "warn", `notifying session ${parent} failed: ${(error as Error).message}`))
      .finally(() => {
        this.delivering.delete(parent);
        this.host.outstandingChanged();
      });
    this.delivering.set(parent, delivery);
    return delivery;
  }

  private async deliver(parent: string): Promise<void> {
    // Tasks can end while notices go out (each is a round trip): deliver until none is left, so the
    // wake-up never overtakes the notice of a task it reports as ended.
    for (let queued = this.undelivered(parent); queued.length > 0; queued = this.undelivered(parent)) {
      if (!this.checkedForOldNotices.has(parent) && queued.some((e) => e.runtime.fromFile)) {
        await this.recordNoticesAlreadyThere(parent, queued);
        continue;
      }
      for (const entry of queued) {
        if (!this.parentBusy.isIdle(parent) || this.gone.has(parent)) return;
        await this.sendNotice(parent, entry);
      }
    }
    await this.sendBudgetNotice(parent);
    await this.sendWake(parent);
  }

  /** The budget notice (noReply), once: given up after a failure rather than sent twice. */
  private async sendBudgetNotice(parent: string): Promise<void> {
    const text = this.owedBudget.get(parent);
    if (text === undefined || !this.parentBusy.isIdle(parent) || this.gone.has(parent)) return;
    this.owedBudget.delete(parent);
    const last = this.host.tasksOf(parent).at(-1)?.task;
    try {
      await call(
        `telling session ${parent} its budget is reached`,
        prompt(this.host.client, parent, { noReply: true, agent: last?.parentAgent, model: last?.parentModel, parts: [{ type: "text", text }] }),
      );
    } catch (error) {
      if (isSessionGone(error)) await this.parentGone(parent);
      else log(this.host.client, "warn", `the budget notice of session ${parent} was not delivered: ${(error as Error).message}`);
    }
  }

  /** Marks as delivered the runs whose notice a previous process sent but was killed before recording. */
  private async recordNoticesAlreadyThere(parent: string, queued: TaskEntry[]): Promise<void> {
    this.checkedForOldNotices.add(parent);
    let messages;
    try {
      messages = await getMessages(this.host.client, parent);
    } catch (error) {
      if (isSessionGone(error)) return this.parentGone(parent);
      throw error;
    }
    const found: Promise<boolean>[] = [];
    for (const entry of queued) {
      const { task } = entry;
      const there = messages.some(
        (m) =>
          m.info.role === "user" &&
          (m.info.time?.created ?? 0) >= task.startedAt &&
          (Array.isArray(m.parts) ? m.parts : []).some((p) => p.type === "text" && typeof p.text === "string" && isNoticeOf(p.text, task)),
      );
      // (written at once; the saves they ask for in this same turn are one write, awaited below)
      if (there) found.push(this.host.dispatch(entry, { kind: "notice-sent" }));
    }
    await Promise.all(found);
  }

  private async sendNotice(parent: string, entry: TaskEntry): Promise<void> {
    const { task, runtime } = entry;
    try {
      await call(
        `notifying session ${parent}`,
        prompt(this.host.client, parent, {
          noReply: true,
          agent: task.parentAgent,
          model: task.parentModel,
          parts: [
            {
              type: "text",
              text: buildTaskNotification(
                task,
                runtime.answer ?? "",
                this.host.now(),
                this.host.tasksOf(parent).map((e) => e.task),
                this.host.budgetLine?.(parent),
              ),
            },
          ],
        }),
      );
    } catch (error) {
      await this.host.dispatch(entry, { kind: "notice-failed" });
      if ((await this.deliveryFailed(parent, error, runtime.noticeFailures, `the notice of task ${task.id}`)) === "gone") return;
    }
    await this.host.dispatch(entry, { kind: "notice-sent" }); // (saved)
  }

  /**
   * A delivery that failed: a gone parent (404) ends everything owed to it; another failure is thrown
   * (the reconcile tries again) until the attempts run out, then given up with an error in the log.
   */
  private async deliveryFailed(parent: string, error: unknown, attempts: number, what: string): Promise<"gone" | "given up"> {
    if (isSessionGone(error)) {
      await this.parentGone(parent);
      return "gone";
    }
    if (attempts < MAX_DELIVERY_ATTEMPTS) throw error;
    log(this.host.client, "error", `giving up on ${what} after ${attempts} attempts: ${(error as Error).message}`);
    return "given up";
  }

  private async sendWake(parent: string): Promise<void> {
    if (!this.owedWake.has(parent) || !this.parentBusy.isIdle(parent) || this.gone.has(parent)) return;
    const entries = this.host.tasksOf(parent);
    const report = entries.filter(unreported);
    // Everything ended since the last wake was read by the parent itself: nothing to wake it for.
    if (report.length === 0) {
      this.owedWake.delete(parent);
      return;
    }
    const last = entries.at(-1)!.task;
    // The wake makes the parent busy; anything ending meanwhile waits for its next idle.
    const waking = this.parentBusy.event(parent, true);
    try {
      await call(
        `waking session ${parent}`,
        promptAsync(this.host.client, parent, {
          agent: last.parentAgent,
          model: last.parentModel,
          parts: [
            {
              type: "text",
              text: buildWakePrompt(
                report.map((e) => e.task),
                entries.filter(stillWorking).map((e) => e.task),
                entries.filter((e) => meaningOf(e.task.status).waitsForPerson).map((e) => e.task),
              ),
            },
          ],
        }),
      );
    } catch (error) {
      this.parentBusy.undo(parent, waking);
      const failures = (this.wakeFailures.get(parent) ?? 0) + 1;
      this.wakeFailures.set(parent, failures);
      if ((await this.deliveryFailed(parent, error, failures, `waking session ${parent}`)) === "gone") return;
    }
    this.owedWake.delete(parent);
    this.wakeFailures.delete(parent);
    // (each written at once; their saves, asked for in this same turn, are one write)
    await Promise.all(report.map((entry) => this.host.dispatch(entry, { kind: "reported" })));
  }
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
