import { buildTaskNotification, buildWakePrompt } from "../prompts.js";
import { call, getMessages, log, readChildOutcome } from "./client.js";
import type { TaskManager } from "./task-manager.js";
import { type BackgroundTask, isActive } from "./types.js";

/**
 * Tells parents about ended tasks: one noReply message per task run, and one wake-up prompt when
 * the parent's last running task has ended or one has failed. Nothing is delivered while the parent
 * is busy (it would land inside a running turn); it waits for the parent's idle.
 */
export class Notifier {
  /** parents owed a wake-up prompt; persisted with the tasks */
  readonly pendingWakes = new Set<string>();
  private readonly parentBusy = new Map<string, boolean>();
  private readonly delivering = new Map<string, Promise<void>>();
  private readonly lastWakeAt = new Map<string, number>();

  constructor(private readonly manager: TaskManager) {}

  /** Records the parent's state from its events; an idle parent gets what waited for it. */
  setParentBusy(parent: string, busy: boolean): Promise<void> {
    this.recordParentState(parent, busy);
    return busy ? Promise.resolve() : this.flush(parent);
  }

  recordParentState(parent: string, busy: boolean): void {
    this.parentBusy.set(parent, busy);
  }

  private undelivered(parent: string): BackgroundTask[] {
    return this.manager.tasksOf(parent).filter((t) => !isActive(t.status) && t.notifiedRun < t.run);
  }

  hasPendingFor(parents: Iterable<string>): boolean {
    for (const parent of parents) if (this.pendingWakes.has(parent) || this.undelivered(parent).length > 0) return true;
    return false;
  }

  hasAnyPending(): boolean {
    return this.parentsWithPending().length > 0;
  }

  parentsWithPending(): string[] {
    const parents = new Set(this.manager.list().map((t) => t.parentSessionID));
    return [...parents].filter((p) => this.pendingWakes.has(p) || this.undelivered(p).length > 0);
  }

  /** Called once per ended run: decides whether the parent is owed a wake-up, then delivers what it can. */
  async taskEnded(task: BackgroundTask): Promise<void> {
    const parent = task.parentSessionID;
    const stillRunning = this.manager.tasksOf(parent).some((t) => isActive(t.status));
    if (task.status === "error") this.pendingWakes.add(parent);
    else if (!stillRunning && this.anythingToWakeFor(parent)) this.pendingWakes.add(parent);
    await this.manager.save();
    await this.flush(parent);
  }

  /** A parent that cancelled its own tasks and has nothing else new need not be woken for them. */
  private anythingToWakeFor(parent: string): boolean {
    const since = this.lastWakeAt.get(parent) ?? 0;
    return this.manager
      .tasksOf(parent)
      .some((t) => !isActive(t.status) && (t.completedAt ?? 0) >= since && !(t.status === "cancelled" && t.cancelledByParent));
  }

  /** Delivers queued notifications and the wake-up, once, if the parent is idle. Safe to call often. */
  flush(parent: string): Promise<void> {
    const running = this.delivering.get(parent);
    if (running) return running.then(() => this.flush(parent));
    if (this.parentBusy.get(parent) !== false) return Promise.resolve();
    const delivery = this.deliver(parent)
      .catch((error) => log(this.manager.client, "warn", `notifying session ${parent} failed: ${(error as Error).message}`))
      .finally(() => {
        this.delivering.delete(parent);
        this.manager.updateReconcileTimer();
      });
    this.delivering.set(parent, delivery);
    return delivery;
  }

  private async deliver(parent: string): Promise<void> {
    const client = this.manager.client;
    // Tasks can end while notices go out (each is a round trip): deliver until none is left, so the
    // wake-up never overtakes the notice of a task it reports as ended.
    for (let queued = this.undelivered(parent); queued.length > 0; queued = this.undelivered(parent)) {
      for (const task of queued) {
        if (this.parentBusy.get(parent) !== false) return;
        const answer = await this.answerOf(task);
        await call(
          `notifying session ${parent}`,
          client.session.prompt({
            path: { id: parent },
            body: { noReply: true, agent: task.parentAgent, model: task.parentModel, parts: [{ type: "text", text: buildTaskNotification(task, answer, this.manager.now()) }] },
          }),
        );
        task.notifiedRun = task.run;
        await this.manager.save();
      }
    }
    if (!this.pendingWakes.has(parent) || this.parentBusy.get(parent) !== false) return;
    const tasks = this.manager.tasksOf(parent);
    const last = tasks.at(-1);
    const since = this.lastWakeAt.get(parent) ?? 0;
    const ended = tasks.filter((t) => !isActive(t.status) && (t.completedAt ?? 0) >= since);
    // The wake makes the parent busy; anything ending meanwhile waits for its next idle.
    this.parentBusy.set(parent, true);
    try {
      await call(
        `waking session ${parent}`,
        client.session.promptAsync({
          path: { id: parent },
          body: {
            agent: last?.parentAgent,
            model: last?.parentModel,
            parts: [{ type: "text", text: buildWakePrompt(ended, tasks.filter((t) => isActive(t.status))) }],
          },
        }),
      );
    } catch (error) {
      this.parentBusy.set(parent, false);
      throw error;
    }
    this.pendingWakes.delete(parent);
    this.lastWakeAt.set(parent, this.manager.now());
    await this.manager.save();
  }

  private async answerOf(task: BackgroundTask): Promise<string> {
    if (task.status !== "completed") return "";
    const known = this.manager.answerOf(task);
    if (known !== undefined) return known;
    try {
      return readChildOutcome(await getMessages(this.manager.client, task.sessionID)).answer;
    } catch {
      return "";
    }
  }
}
