import type { Event, Part } from "@opencode-ai/sdk/v2";
import { RECONCILE_INTERVAL_MS } from "../constants.js";
import { taskEndedToast, taskStartedToast } from "../prompts.js";
import { type Client, ServerCallError, call, getBusySessions, getMessages, log, readChildOutcome } from "./client.js";
import { Notifier } from "./notifier.js";
import { loadStore, saveStore } from "./store.js";
import { ToastThrottle } from "./toasts.js";
import { type BackgroundTask, type TaskStatus, isActive } from "./types.js";

export interface ManagerOptions {
  client: Client;
  storePath: string;
  now?: () => number;
  reconcileIntervalMs?: number;
}

type EndStatus = Exclude<TaskStatus, "running" | "resumed">;

function isProcessAlive(pid: number | undefined): boolean {
  if (!pid) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * Owns every task of this OpenCode process: the registry, its file, and the lifecycle driven by
 * the child sessions' events. Completion is decided from events (idle / error), confirmed by the
 * child's messages; a slow reconcile asks session.status() only to recover a missed event.
 */
export class TaskManager {
  readonly client: Client;
  readonly now: () => number;
  readonly notifier: Notifier;
  readonly toasts: ToastThrottle;

  private readonly tasks = new Map<string, BackgroundTask>();
  private readonly bySession = new Map<string, BackgroundTask>();
  /** every session that has launched a task: its idle and busy events matter */
  private readonly parents = new Set<string>();
  /** the answer read when a run ended, so its notice does not read the child's messages again */
  private readonly answers = new Map<string, string>();
  /** tasks whose launch is still in flight: usable by events, never written to the file */
  private readonly launching = new Set<string>();
  private readonly checking = new Map<string, Promise<void>>();
  private readonly waiters = new Map<string, Set<() => void>>();
  private readonly seenToolCalls = new Map<string, Set<string>>();
  /** the latest session.error of a running child, used when its messages carry no error */
  private readonly lastErrors = new Map<string, string>();
  private readonly storePath: string;
  private readonly reconcileIntervalMs: number;
  private reconcileTimer: ReturnType<typeof setInterval> | undefined;
  private startPromise: Promise<void> | undefined;
  private saveChain: Promise<void> = Promise.resolve();
  private queuedSave: Promise<void> | undefined;
  private disposed = false;

  constructor(options: ManagerOptions) {
    this.client = options.client;
    this.storePath = options.storePath;
    this.now = options.now ?? Date.now;
    this.reconcileIntervalMs = options.reconcileIntervalMs ?? RECONCILE_INTERVAL_MS;
    this.toasts = new ToastThrottle(this.client, this.now);
    this.notifier = new Notifier(this);
  }

  // ─── start-up ───

  /** Loads the task file and recovers tasks left running; runs once, on first use. */
  ready(): Promise<void> {
    this.startPromise ??= this.start().catch((error) => {
      log(this.client, "error", `offshoot start-up failed: ${(error as Error).message}`);
    });
    return this.startPromise;
  }

  private async start(): Promise<void> {
    const { tasks: stored, warnings } = await loadStore(this.storePath);
    for (const warning of warnings) log(this.client, "warn", warning);
    // Another live OpenCode process on this project runs its own tasks; the file keeps them for it.
    for (const task of stored) {
      if (task.ownerPid !== process.pid && isProcessAlive(task.ownerPid)) continue;
      task.ownerPid = process.pid;
      this.index(task);
    }
    await this.recoverAfterRestart();
    this.updateReconcileTimer();
  }

  /** Tasks saved as running: gone → error; idle → completed or interrupted; busy → events finish them. */
  private async recoverAfterRestart(): Promise<void> {
    const active = this.list().filter((t) => isActive(t.status));
    const parents = new Set(this.list().map((t) => t.parentSessionID));
    if (active.length === 0 && !this.notifier.hasPendingFor(parents)) return;
    const busy = await getBusySessions(this.client);
    for (const parent of parents) this.notifier.recordParentState(parent, busy.has(parent));
    for (const task of active) {
      if (busy.has(task.sessionID)) continue;
      const exists = await this.sessionExists(task.sessionID);
      if (!exists) {
        await this.finish(task, "error", "its child session no longer exists");
        continue;
      }
      await this.checkCompletion(task, { ifUnfinished: "interrupted: OpenCode stopped before the task finished" });
    }
    await Promise.all([...parents].map((parent) => this.notifier.flush(parent)));
  }

  private async sessionExists(sessionID: string): Promise<boolean> {
    try {
      await call("reading the child session", this.client.session.get({ path: { id: sessionID } }));
      return true;
    } catch (error) {
      if (error instanceof ServerCallError && (error.status === 404 || error.status === 400)) return false;
      throw error;
    }
  }

  // ─── registry ───

  private index(task: BackgroundTask): void {
    this.tasks.set(task.id, task);
    this.bySession.set(task.sessionID, task);
    this.parents.add(task.parentSessionID);
  }

  isParentSession(sessionID: string): boolean {
    return this.parents.has(sessionID);
  }

  /** The answer of the task's last run, if it was read when the run ended. */
  answerOf(task: BackgroundTask): string | undefined {
    return this.answers.get(task.id);
  }

  get(id: string): BackgroundTask | undefined {
    return this.tasks.get(id);
  }

  list(): BackgroundTask[] {
    return [...this.tasks.values()];
  }

  tasksOf(parentSessionID: string): BackgroundTask[] {
    return this.list().filter((t) => t.parentSessionID === parentSessionID && !this.launching.has(t.id));
  }

  findByCallID(parentSessionID: string, callID: string): BackgroundTask | undefined {
    return this.list().find((t) => t.parentSessionID === parentSessionID && t.callID === callID);
  }

  isChildSession(sessionID: string): boolean {
    return this.bySession.has(sessionID);
  }

  /** Registers a task whose launch is in flight: events can already finish it, the file does not see it yet. */
  beginLaunch(task: BackgroundTask): void {
    this.launching.add(task.id);
    this.index(task);
    this.notifier.recordParentState(task.parentSessionID, true);
  }

  async commitLaunch(task: BackgroundTask): Promise<void> {
    this.launching.delete(task.id);
    await this.save();
    this.updateReconcileTimer();
    this.toasts.show(taskStartedToast(task));
    // The child may have finished before the launch was committed.
    if (!isActive(task.status)) void this.notifier.taskEnded(task);
  }

  abandonLaunch(task: BackgroundTask): void {
    this.launching.delete(task.id);
    this.tasks.delete(task.id);
    this.bySession.delete(task.sessionID);
    this.seenToolCalls.delete(task.id);
    this.lastErrors.delete(task.sessionID);
    this.wake(task.id);
  }

  /** Marks a finished task as running again for a follow-up prompt. */
  async beginResume(task: BackgroundTask, fields: Pick<BackgroundTask, "callID" | "agent" | "model">): Promise<void> {
    Object.assign(task, fields, {
      status: "resumed" as const,
      run: task.run + 1,
      startedAt: this.now(),
      completedAt: undefined,
      error: undefined,
      cancelledByParent: undefined,
    });
    this.lastErrors.delete(task.sessionID);
    this.answers.delete(task.id);
    this.notifier.recordParentState(task.parentSessionID, true);
    await this.save();
    this.updateReconcileTimer();
    this.toasts.show(taskStartedToast(task));
  }

  // ─── lifecycle ───

  /** Ends a task once: later calls for the same run are ignored. */
  async finish(task: BackgroundTask, status: EndStatus, error?: string, answer?: string): Promise<void> {
    if (!isActive(task.status)) return;
    task.status = status;
    task.completedAt = this.now();
    task.error = error;
    if (answer !== undefined) this.answers.set(task.id, answer);
    this.lastErrors.delete(task.sessionID);
    this.wake(task.id);
    this.toasts.show(taskEndedToast(task));
    if (this.launching.has(task.id)) return; // commitLaunch notifies
    this.updateReconcileTimer();
    await this.notifier.taskEnded(task); // saves the ended task with the parent's wake state
  }

  /**
   * Reads the child's messages and ends the task if its latest prompt has been answered.
   * One check per task at a time; idle and status events for the same moment share it.
   */
  checkCompletion(task: BackgroundTask, options: { ifUnfinished?: string } = {}): Promise<void> {
    const running = this.checking.get(task.id);
    if (running) return running;
    const check = (async () => {
      if (!isActive(task.status)) return;
      const outcome = readChildOutcome(await getMessages(this.client, task.sessionID), task.startedAt);
      if (!isActive(task.status)) return;
      if (!outcome.finished) {
        if (options.ifUnfinished) await this.finish(task, "error", options.ifUnfinished);
        return;
      }
      if (outcome.aborted) await this.finish(task, "cancelled", task.cancelledByParent ? "cancelled by the parent session" : "the child session was aborted");
      else if (outcome.error) await this.finish(task, "error", outcome.error);
      else await this.finish(task, "completed", undefined, outcome.answer);
    })()
      .catch((error) => log(this.client, "warn", `checking task ${task.id} failed: ${(error as Error).message}`))
      .finally(() => this.checking.delete(task.id));
    this.checking.set(task.id, check);
    return check;
  }

  /**
   * Why an idle child without an answer should end now, if it should: a run the server rejected
   * (a session.error and no idle follows) or a run that never started. Otherwise it is still starting.
   */
  private stalledReason(task: BackgroundTask): string | undefined {
    const error = this.lastErrors.get(task.sessionID);
    if (error) return error;
    if (this.now() - task.startedAt > 2 * this.reconcileIntervalMs) return "the child session stopped without answering";
    return undefined;
  }

  /** Resolves when the task is no longer running, after `timeoutMs`, or when `signal` aborts. */
  waitForEnd(task: BackgroundTask, timeoutMs: number, signal?: AbortSignal): Promise<void> {
    if (!isActive(task.status) || signal?.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const set = this.waiters.get(task.id) ?? new Set();
      this.waiters.set(task.id, set);
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", done);
        set.delete(done);
        resolve();
      };
      const timer = setTimeout(done, timeoutMs);
      signal?.addEventListener("abort", done, { once: true });
      set.add(done);
    });
  }

  private wake(taskID: string): void {
    const set = this.waiters.get(taskID);
    if (!set) return;
    this.waiters.delete(taskID);
    for (const done of [...set]) done();
  }

  // ─── events ───

  /** The plugin's event hook. Never throws: a failure is logged and the event dropped. */
  async handleEvent(event: Event): Promise<void> {
    try {
      await this.ready();
      await this.dispatch(event);
    } catch (error) {
      log(this.client, "error", `offshoot event ${event?.type} failed: ${(error as Error).message}`);
    }
  }

  /** Resolves when the work the event set off is done (OpenCode does not wait; tests do). */
  private async dispatch(event: Event): Promise<void> {
    switch (event.type) {
      case "session.status":
        return this.onSessionState(event.properties.sessionID, event.properties.status.type === "idle");
      case "session.idle":
        return this.onSessionState(event.properties.sessionID, true);
      case "session.error": {
        const { sessionID, error } = event.properties;
        const task = sessionID ? this.bySession.get(sessionID) : undefined;
        if (!task || !error || !isActive(task.status)) return;
        this.lastErrors.set(task.sessionID, `${error.name}: ${(error.data as { message?: string })?.message ?? ""}`.trim());
        // A rejected prompt sends session.error and no idle; an abort's idle follows and settles it.
        if (error.name !== "MessageAbortedError") return this.checkIfIdle(task);
        return;
      }
      case "message.part.updated":
        return this.onPart(event.properties.part);
      case "session.deleted": {
        const task = this.bySession.get(event.properties.sessionID);
        if (task && isActive(task.status)) await this.finish(task, "error", "its child session was deleted");
        return;
      }
      default:
        return;
    }
  }

  private async onSessionState(sessionID: string, idle: boolean): Promise<void> {
    const work: Promise<void>[] = [];
    if (this.isParentSession(sessionID)) work.push(this.notifier.setParentBusy(sessionID, !idle));
    const task = this.bySession.get(sessionID);
    if (idle && task && isActive(task.status)) work.push(this.checkCompletion(task));
    await Promise.all(work);
  }

  private async checkIfIdle(task: BackgroundTask): Promise<void> {
    const busy = await getBusySessions(this.client);
    if (!busy.has(task.sessionID)) await this.checkCompletion(task, { ifUnfinished: this.stalledReason(task) });
  }

  private onPart(part: Part): void {
    if (part.type !== "tool") return;
    const task = this.bySession.get(part.sessionID);
    if (!task) return;
    const seen = this.seenToolCalls.get(task.id) ?? new Set<string>();
    this.seenToolCalls.set(task.id, seen);
    if (!seen.has(part.callID)) {
      seen.add(part.callID);
      task.toolCalls += 1;
    }
    task.lastTool = part.tool;
  }

  // ─── persistence and timers ───

  /**
   * Writes the file. Writes are serialised, and every save asked for while one is waiting its turn
   * shares that one: it takes its snapshot when it starts, so it holds all their changes.
   */
  save(): Promise<void> {
    this.queuedSave ??= this.saveChain.then(() => {
      this.queuedSave = undefined;
      const tasks = this.list().filter((t) => !this.launching.has(t.id));
      return saveStore(this.storePath, tasks).catch((error) =>
        log(this.client, "error", `saving tasks failed: ${(error as Error).message}`),
      );
    });
    this.saveChain = this.queuedSave;
    return this.queuedSave;
  }

  /** The reconcile runs only while something is outstanding: a running task or an undelivered notice. */
  updateReconcileTimer(): void {
    const outstanding = this.list().some((t) => isActive(t.status)) || this.notifier.hasAnyPending();
    if (outstanding && !this.reconcileTimer && !this.disposed) {
      this.reconcileTimer = setInterval(() => void this.reconcile(), this.reconcileIntervalMs);
      this.reconcileTimer.unref?.();
    } else if (!outstanding && this.reconcileTimer) {
      clearInterval(this.reconcileTimer);
      this.reconcileTimer = undefined;
    }
  }

  /** Recovers a missed idle event: any running task whose child the server reports idle is checked. */
  async reconcile(): Promise<void> {
    try {
      const busy = await getBusySessions(this.client);
      for (const task of this.list()) {
        if (isActive(task.status) && !this.launching.has(task.id) && !busy.has(task.sessionID)) {
          await this.checkCompletion(task, { ifUnfinished: this.stalledReason(task) });
        }
      }
      await Promise.all(this.notifier.parentsWithPending().map((parent) => this.notifier.setParentBusy(parent, busy.has(parent))));
    } catch (error) {
      log(this.client, "warn", `reconcile failed: ${(error as Error).message}`);
    } finally {
      this.updateReconcileTimer();
    }
  }

  async dispose(): Promise<void> {
    this.disposed = true;
    if (this.reconcileTimer) clearInterval(this.reconcileTimer);
    this.reconcileTimer = undefined;
    this.toasts.dispose();
    for (const id of [...this.waiters.keys()]) this.wake(id);
    await this.saveChain;
  }
}
