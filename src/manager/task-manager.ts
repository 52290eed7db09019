// The task manager: the one place that owns this process's tasks and applies the rules its rooms
// decide. The map of the rooms (task/, launch/, spend/, parent/, requests/) and of the front files
// beside this one is README.md in this folder. Nothing outside the manager holds this class: the
// tools get task-service.ts; the rooms get their hosts, each with `dispatch`, the one way to change a
// task (task/runner.ts). Every call to OpenCode goes through ../host/, which imports nothing of ours.

import type { Event } from "../host/types.js";
import { RECONCILE_INTERVAL_MS } from "../constants.js";
import { DEFAULT_OPTIONS, type PluginOptions } from "../options.js";
import { type DispatchOptions, type RunnerHost, runStep } from "./task/runner.js";
import { type TaskInput, edge } from "./task/step.js";
import { type Client, abortQuietly, log } from "../host/client.js";
import { type Ending, type EndingContext, INTERRUPTED_REASON } from "./task/completion.js";
import { onEvent } from "./event-hook.js";
import { answerForNobody } from "./requests/questions.js";
import { QueuedTasks } from "./launch/queued.js";
import { ParentNotices } from "./parent/notices.js";
import { publishTaskState } from "./task/publish.js";
import { startUp } from "./start-up.js";
import { TaskQueue } from "./launch/queue.js";
import { TaskKeeping } from "./keeping.js";
import { type ChildPlan, type TaskEntry, TaskRegistry } from "./task/registry.js";
import { TaskFiles } from "../store/task-files.js";
import { forgetProcesses } from "../store/processes.js";
import { ToastThrottle } from "./toasts.js";
import { type BackgroundTask, type WorktreeInfo, isMoving, isOpen, isWorking } from "../task-record.js";
import { checkCompletion, checkRun, stalledReason } from "./task/check.js";
import { Watchdog } from "./spend/watchdog.js";
import { BudgetLedger } from "./spend/budget-ledger.js";
import { SessionBudget } from "./spend/session-budget.js";
import { sessionDirectory } from "../worktree/hub.js";
import { releaseWorktrees, wrapUpRun, unhostTask } from "../worktree/lifecycle.js";
import { refreshOverlaps } from "./requests/overlaps.js";
import { RequestHolds, gateStep } from "./spend/step-gate.js";
import type { SpendHost } from "./spend/host.js";
import type { SessionMessage } from "../fork/types.js";
import { type QuestionWait, permissionText } from "../task-state.js";
import { RemoteTasks } from "./remote/remote-tasks.js";
import type { RemoteActions } from "./remote/actions.js";
import type { TransportFactory } from "./remote/links.js";

export interface ManagerOptions {
  client: Client;
  legacyTaskFile: string;
  /** this process is a one-shot `opencode run`: it exits when the parent goes idle (see run-mode.ts) */
  oneShotRun?: boolean;
  /** the plugin's options (options.ts); defaults when absent */
  options?: PluginOptions;
  now?: () => number;
  reconcileIntervalMs?: number;
  /** the project's directory and id (OpenCode's): worktree tasks are made from it */
  project?: { directory: string; id: string };
  /** how a remote's transport is made (tests: a fake); the HTTP one when absent */
  remoteTransport?: TransportFactory;
}

export class TaskManager {
  readonly client: Client;
  readonly now: () => number;
  readonly registry = new TaskRegistry();
  readonly notices: ParentNotices;
  readonly toasts: ToastThrottle;
  readonly reconcileIntervalMs: number;
  readonly oneShotRun: boolean;
  readonly options: PluginOptions;
  readonly queue: TaskQueue;
  readonly watchdog: Watchdog;
  /** the budget of each parent session's background work (session-budget.ts) */
  readonly ledger: BudgetLedger;
  readonly budget: SessionBudget;
  readonly project: { directory: string; id: string } | undefined;
  /** this process's tasks that run on remotes (remote/): their launch, their following, what is asked of them */
  readonly remotes: RemoteTasks;

  private readonly legacyTaskFile: string;
  readonly store: TaskFiles;
  private reconcileTimer: ReturnType<typeof setInterval> | undefined;
  private startUpDone: Promise<void> | undefined;
  /** the task file's writes, the store's upkeep, a parent's history read (keeping.ts) */
  private readonly keeping: TaskKeeping = new TaskKeeping(this);
  /** queued tasks: their children created in launch order, their starts (launch/queued.ts) */
  private readonly queued: QueuedTasks = new QueuedTasks(this);
  private disposed = false;
  /** what task/runner.ts's effects call */
  private readonly runnerHost: RunnerHost;
  /** children whose model requests wait for an abort in flight (step-gate.ts) */
  private readonly holds = new RequestHolds();
  /** what the spend room's parts call (spend/host.ts): one object for the watchdog, the budget, its ledger and the step gate */
  private readonly spendHost: SpendHost & { readonly holds: RequestHolds };

  constructor(options: ManagerOptions) {
    this.client = options.client;
    this.legacyTaskFile = options.legacyTaskFile;
    this.now = options.now ?? Date.now;
    this.reconcileIntervalMs = options.reconcileIntervalMs ?? RECONCILE_INTERVAL_MS;
    this.oneShotRun = options.oneShotRun ?? false;
    this.project = options.project;
    this.options = options.options ?? { ...DEFAULT_OPTIONS };
    this.store = new TaskFiles(this.legacyTaskFile, this.options, () => this.now());
    this.queue = new TaskQueue(this.options.concurrency, {
      entries: () => this.registry.entries(),
      start: (entry) => this.tracked(entry.runtime.mailbox.post(() => this.queued.start(entry))),
      // (a task for a remote waits for a slot of that remote: its own limit)
      limit: (task) => {
        const name = task.remote?.name ?? task.remoteWait?.name;
        const remote = name === undefined ? undefined : this.options.remotes[name];
        return remote && { limit: remote.concurrency, option: `remotes.${name}.concurrency` };
      },
    });
    this.spendHost = {
      client: this.client,
      options: this.options,
      oneShotRun: this.oneShotRun,
      holds: this.holds,
      now: () => this.now(),
      dispatch: (entry, input, options) => this.dispatch(entry, input, options),
      tasksOf: (parent) => this.tasksOf(parent),
      entriesOf: (parent) => this.entriesOf(parent),
      ofChild: (sessionID) => this.registry.ofChild(sessionID),
      stop: (entry, reason) => void this.tracked(this.stopChild(entry, reason)),
      stopChild: (entry, reason) => this.stopChild(entry, reason),
      usageChanged: (entry, step) => void this.tracked(this.budget.usageChanged(entry, step)),
      stepFinished: (entry, info) => this.watchdog.assistantMessage(entry, info),
      counted: (entry, info) => this.watchdog.counted(entry, info),
      holdRequests: (sessionID, work) => this.holdRequests(sessionID, work),
      toast: (toast) => this.toasts.show(toast),
      tellParent: (parent, text) => void this.notices.input(parent, { kind: "budget-reached", text }),
      save: () => this.save(),
    };
    this.watchdog = new Watchdog(this.options, this.spendHost);
    this.remotes = new RemoteTasks(this, options.remoteTransport);
    this.toasts = new ToastThrottle(this.client, this.now);
    this.ledger = new BudgetLedger(this.spendHost);
    this.budget = new SessionBudget(this.spendHost, this.ledger);
    this.notices = new ParentNotices({
      client: this.client,
      now: () => this.now(),
      tasksOf: (parent) => this.entriesOf(parent),
      parents: () => this.registry.parents(),
      dispatch: (entry, input) => this.dispatch(entry, input),
      outstandingChanged: () => this.updateReconcileTimer(),
      budgetLine: (parent) => this.budget.line(parent),
    });
    this.runnerHost = {
      now: () => this.now(),
      warn: (message) => log(this.client, "warn", message),
      parentBusy: (parent) => void this.notices.input(parent, { kind: "heard", busy: true }),
      watchdog: this.watchdog,
      wrapUpRun: (task) => wrapUpRun(this, task),
      abortChild: (task) => this.abortChild(task),
      checkCompletion: (entry, stalled) => checkRun(this, entry, stalled),
      answerForNobody: (task, requestID, answers) => answerForNobody(this.client, task, requestID, answers),
      toast: (toast) => this.toasts.show(toast),
      publish: (entry) => publishTaskState(this.client, entry),
      updateReconcileTimer: () => this.updateReconcileTimer(),
      fillQueue: () => void this.queue.fill(),
      save: () => this.save(),
      // (a task a remote parent launched: its parent here is a relay session, whose turns nobody reads: never woken)
      noticeEnded: (entry, options) =>
        this.notices.input(entry.task.parentSessionID, { kind: "task-ended", entry, ...options, wake: options.wake && !entry.task.relay }),
      indexChild: (entry) => this.registry.indexChild(entry),
      ledgerNote: (task) => this.ledger.note(task),
      // a settled, taken or discarded task's changed paths may overlap another's: their flags follow
      refreshOverlaps: (task) => refreshOverlaps(this, this.entriesOf(task.parentSessionID), task),
      unhost: (task) => unhostTask(task),
    };
  }

  /**
   * THE way a task changes: task/step.ts decides what `input` writes and which effects follow,
   * task/runner.ts writes it and carries them out in order. A refused edge is logged and changes nothing (false).
   */
  dispatch(entry: TaskEntry, input: TaskInput, options?: DispatchOptions): Promise<boolean> {
    return runStep(this.runnerHost, entry, input, options);
  }

  get isDisposed(): boolean {
    return this.disposed;
  }

  /** What the requests room asks of a task that runs on a remote (remote/actions.ts). */
  get remote(): RemoteActions {
    return this.remotes.actions;
  }

  /** A child's loop aborted; its requests wait until that is done. A remote task's child is asked to cancel there instead. */
  private async abortChild(task: BackgroundTask): Promise<void> {
    const entry = this.entryOf(task);
    if (task.remote) {
      if (entry) await this.remote.requestCancel(entry, "its child session here was deleted").catch(() => {});
      return;
    }
    await this.holdRequests(task.sessionID, abortQuietly(this.client, task.sessionID, sessionDirectory(task.sessionID)));
  }

  // ─── start-up ───

  /** Loads the task file and recovers tasks a stopped process left running; runs once, on first use. */
  ready(): Promise<void> {
    // (then this process's remote tasks are read again there: reattached, or ended if they ended meanwhile)
    this.startUpDone ??= startUp(this)
      .then(() => void this.remotes.checkAll())
      .catch((error) => {
        log(this.client, "error", `offshoot start-up failed: ${(error as Error).message}`);
      });
    return this.startUpDone;
  }

  /** The store's rewrite, queued after the saves (keeping.ts). */
  storeUpkeep(): void {
    this.keeping.upkeep();
  }

  // ─── queries (for the tools) ───

  get(id: string): BackgroundTask | undefined {
    const entry = this.registry.get(id);
    if (entry) return entry.task;
    const parent = this.store.parentOf(id);
    if (parent) this.keeping.hydrate(parent);
    return this.registry.get(id)?.task;
  }

  /** The parent's committed tasks, in launch order (its settled ones read from the history once). */
  tasksOf(parent: string): BackgroundTask[] {
    return this.entriesOf(parent).map((e) => e.task);
  }

  /** The same, as registry entries. */
  entriesOf(parent: string): TaskEntry[] {
    this.keeping.hydrate(parent);
    return this.registry.ofParent(parent);
  }

  isChildSession(sessionID: string): boolean {
    return this.registry.ofChild(sessionID) !== undefined || this.store.isHistoryChild(sessionID);
  }

  findByCallID(parent: string, callID: string): BackgroundTask | undefined {
    return this.tasksOf(parent).find((t) => t.callID === callID);
  }

  /** A task of this parent that retention dropped (for the "past the history limit" answer). */
  droppedTask(query: string, parent: string): { id: string; session: string } | undefined {
    return this.store.droppedTask(query, parent);
  }

  /** Child sessions of the tasks retention dropped at this start (their fork files can go). */
  droppedSessions: string[] = [];
  /** Told the child sessions of tasks retention dropped later, while OpenCode runs (their fork files can go). */
  onHistoryDropped: ((sessions: string[]) => void) | undefined;

  /** The permission the task's child waits for ("bash rm -rf build"), while it waits. */
  waitingFor(task: BackgroundTask): string | undefined {
    const permission = this.entryOf(task)?.runtime.permission;
    return permission ? permissionText(permission) : undefined;
  }

  /** The question the task's child waits to have answered, while it waits (questions.ts). */
  questionOf(task: BackgroundTask): QuestionWait | undefined {
    return this.entryOf(task)?.runtime.question;
  }

  /** The entry of this very record (a stale copy finds none). */
  entryOf(task: BackgroundTask): TaskEntry | undefined {
    const entry = this.registry.get(task.id);
    return entry?.task === task ? entry : undefined;
  }

  // ─── launch and resume ───

  /** Registers a task whose launch is in flight: events can already end it, the file does not see it yet. */
  beginLaunch(task: BackgroundTask, childPlan?: ChildPlan): TaskEntry {
    const entry = this.registry.add(task, { launching: true, childPlan });
    void this.dispatch(entry, { kind: "launch-begun" }); // (its parent is busy: nothing of it waits)
    return entry;
  }

  /** The launch returned: the task is saved and shown; a child that ended meanwhile is told, a queued one may start (task/step.ts). */
  async commitLaunch(task: BackgroundTask): Promise<void> {
    const entry = this.entryOf(task);
    if (entry) await this.dispatch(entry, { kind: "launch-committed" });
  }

  abandonLaunch(task: BackgroundTask): void {
    const entry = this.entryOf(task);
    if (!entry) return;
    this.registry.remove(entry);
    void this.dispatch(entry, { kind: "launch-abandoned" }); // (its waiters released: nothing of it waits)
  }

  /** Marks a finished task as running again for a follow-up prompt. */
  async beginResume(task: BackgroundTask, fields: Pick<BackgroundTask, "callID" | "agent" | "model">): Promise<void> {
    const entry = this.entryOf(task);
    if (!entry) return;
    await this.dispatch(entry, edge("resume", fields));
  }

  /** The resumed run (already begun) starts now, or waits in the queue with its prompt (published and saved as `queued`). */
  async runOrQueue(task: BackgroundTask, prompt: string): Promise<"run" | "wait"> {
    const entry = this.entryOf(task);
    const wait = this.queue.mustWait(task);
    if (!entry || !wait) {
      if (entry) await this.dispatch(entry, { kind: "resume-runs" });
      return "run";
    }
    // beginResume published `resumed`: the TUI must see that the new run waits
    return (await this.dispatch(entry, edge("queue", { queuedPrompt: prompt, queuedBecause: wait }))) ? "wait" : "run";
  }

  /** The follow-up prompt of a resume could not be sent: the task is restored as it was before (`previous`). */
  async rollbackResume(task: BackgroundTask, previous: BackgroundTask): Promise<void> {
    const entry = this.entryOf(task);
    if (entry) await this.dispatch(entry, edge("rollback", { previous }));
  }

  /** A resume made the task's freed worktree directory again (launch/launcher.ts): recorded and saved before its prompt goes. */
  async recordWorktree(task: BackgroundTask, worktree: WorktreeInfo): Promise<void> {
    const entry = this.entryOf(task);
    if (entry) await this.dispatch(entry, { kind: "worktree-recreated", worktree });
  }

  /** Creates the child of a queued task after its launch returned, after those launched before it (launch/queued.ts). */
  createChildLater(entry: TaskEntry): void {
    this.queued.createChildLater(entry);
  }

  /** The child's model requests wait at the gate (step-gate.ts) until `work`, an abort of it, is done; returns `work`. */
  holdRequests<T>(sessionID: string, work: Promise<T>): Promise<T> {
    return this.holds.until(sessionID, work);
  }

  /** The gate before each model request of a child (step-gate.ts): the transform hook waits for it. Never rejects. */
  beforeModelRequest(messages: readonly SessionMessage[]): Promise<void> {
    if (this.disposed) return Promise.resolve();
    return gateStep(this.spendHost, messages, (message) => log(this.client, "warn", message));
  }

  /** The plugin stops a runaway child itself: abort, then the task ends as `error` with the reason. */
  async stopChild(entry: TaskEntry, reason: string): Promise<void> {
    const { task } = entry;
    if (!isWorking(task.status) || entry.runtime.stopReason) return;
    // a remote task is cancelled there (its caps there stop it too); its run ends here once the remote says so
    if (task.remote) {
      await this.dispatch(entry, { kind: "stop-asked", reason });
      await this.remote.requestCancel(entry, reason).catch((error) => log(this.client, "warn", `offshoot: ${(error as Error).message}`));
      return;
    }
    // (its requests held from now until the abort is done: step-gate.ts; no child yet: nothing to abort)
    const asked = this.dispatch(entry, { kind: "stop-asked", reason });
    await this.holdRequests(
      task.sessionID,
      asked.then(() => abortQuietly(this.client, task.sessionID, sessionDirectory(task.sessionID))),
    );
    await this.finish(task, { status: "error", error: reason });
  }

  /** A paused remote task's turn: it goes on there (remote/actions.ts); undefined, or why not. */
  continueRemote(entry: TaskEntry, prompt: string): Promise<string | undefined> {
    return this.remote.continueThere(entry, prompt);
  }

  /** A task that waited for a slot of its remote: its turn came, it is launched there (remote/launch.ts); undefined, or why not. */
  startRemote(entry: TaskEntry): Promise<string | undefined> {
    return this.remotes.startQueued(entry);
  }

  /** What a remote task spent there was read (remote/follow.ts): this process's caps first, then its parent's budget. */
  async spendSeen(entry: TaskEntry, seen: { toolCallsBefore: number; spent: boolean; runEnded: boolean }): Promise<void> {
    if (!seen.runEnded && this.watchdog.remoteSeen(entry, seen.toolCallsBefore)) return;
    // (a run that ended there has nothing left to pause: its spend still counts, and may reach the budget)
    if (seen.spent) await this.budget.usageChanged(entry, { stepEnded: true, lastStep: seen.runEnded });
  }

  // ─── ending ───

  /**
   * Ends a task's run once: later calls for the same run are ignored. `deliver: false` queues the
   * notice for a later flush (recovery ends every task first); `wake: false` never wakes the parent.
   */
  async finish(task: BackgroundTask, ending: Ending, options: DispatchOptions = {}): Promise<void> {
    const entry = this.entryOf(task);
    if (!entry || !isOpen(task.status)) return; // (a paused task is ended too: cancelled, its child deleted)
    // The effects, in order (transitions.ts `finish`): the watchdog disarmed; a worktree task's run
    // committed on its branch before anybody is told (src/worktree); waiters released; toast; published;
    // then (unless commitLaunch takes it from here) the timer, the queue (a slot may have freed), the notice.
    await this.dispatch(entry, edge("finish", { ending }), options);
  }

  /** Reads the child's messages and ends the task if its run is over (task/check.ts): a job of its mailbox. */
  checkCompletion(task: BackgroundTask, context: Partial<EndingContext> = {}, options: DispatchOptions = {}): Promise<void> {
    // a remote task's run is over when its state there says so and its branch is here (remote/follow.ts)
    if (task.remote) {
      const entry = this.entryOf(task);
      return entry ? this.remotes.check(entry) : Promise.resolve();
    }
    return checkCompletion(this, task, context, options);
  }

  /**
   * The parent read the result of the task's ended run itself (background_output): no wake for it.
   * `asNotice`: the result went out in place of the notice (background_task under `opencode run`).
   */
  async resultRead(task: BackgroundTask, options: { asNotice?: boolean } = {}): Promise<void> {
    const entry = this.entryOf(task);
    if (!entry || isMoving(task.status)) return;
    if (task.reportedRun >= task.run && (!options.asNotice || task.notifiedRun >= task.run)) return;
    await this.dispatch(entry, { kind: "result-read", asNotice: Boolean(options.asNotice) });
  }

  /**
   * Resolves when the task is no longer running, after `timeoutMs`, or when `signal` aborts; with
   * `orPersonWait`, also when its child starts waiting for a person (a question, a permission).
   */
  waitForEnd(task: BackgroundTask, timeoutMs: number, signal?: AbortSignal, options: { orPersonWait?: boolean } = {}): Promise<void> {
    const entry = this.entryOf(task);
    if (!entry || !isMoving(task.status) || signal?.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", done);
        void this.dispatch(entry, { kind: "waiter-gone", done });
        resolve();
      };
      const timer = setTimeout(done, timeoutMs);
      signal?.addEventListener("abort", done, { once: true });
      void this.dispatch(entry, { kind: "waiter-added", done, orPersonWait: Boolean(options.orPersonWait) });
    });
  }

  /**
   * The plugin's event hook (event-hook.ts): what the event means to each audience (event-decide.ts),
   * done in order. Resolves when the work the event set off is done (tests wait on it). Never throws.
   */
  handleEvent(event: Event): Promise<void> {
    return this.tracked(onEvent(this, event));
  }

  // ─── persistence and timers ───

  /** Writes the task file (keeping.ts): every save asked for before the waiting one shares it. */
  save(): Promise<void> {
    return this.keeping.save();
  }

  /** The reconcile runs only while something is outstanding: a running task or an undelivered notice. */
  updateReconcileTimer(): void {
    const outstanding = !this.disposed && (this.registry.entries().some((e) => isMoving(e.task.status)) || this.notices.hasOutstanding());
    // (a paused task waits for a person, not for an event: nothing to reconcile for it)
    if (outstanding && !this.reconcileTimer) {
      this.reconcileTimer = setInterval(() => void this.reconcile(), this.reconcileIntervalMs);
      this.reconcileTimer.unref?.();
    } else if (!outstanding && this.reconcileTimer) {
      clearInterval(this.reconcileTimer);
      this.reconcileTimer = undefined;
    }
  }

  /** Recovers a missed idle event: any running task whose child the server reports idle is checked. */
  async reconcile(): Promise<void> {
    if (this.disposed) return;
    try {
      const snapshot = await this.notices.readBusySessions();
      // (a remote task's child works there: its state there is read, and what it left there cleaned up when due)
      await this.remotes.checkAll();
      for (const { task, runtime } of this.registry.entries()) {
        if (isWorking(task.status) && !runtime.launching && !task.remote && !snapshot.busy.has(task.sessionID)) {
          await this.checkCompletion(task, { stalledReason: stalledReason(this, task) });
        }
      }
      await Promise.all(this.notices.parentsWithOutstanding().map((parent) => this.notices.input(parent, { kind: "snapshot", snapshot })));
    } catch (error) {
      log(this.client, "warn", `reconcile failed: ${(error as Error).message}`);
    } finally {
      this.updateReconcileTimer();
    }
  }

  /**
   * OpenCode is stopping (a quit, the end of `opencode run`, a reload): it aborts the running
   * children itself. Their tasks are interrupted, not cancelled; the next start delivers their
   * notices without waking anybody. Events that arrive after this are ignored.
   */
  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    if (this.reconcileTimer) clearInterval(this.reconcileTimer);
    this.reconcileTimer = undefined;
    this.toasts.dispose();
    this.remotes.dispose();
    for (const entry of this.registry.entries()) {
      // (its watchdog disarmed, its waiters released; a running task's also interrupted and saved, nothing
      // published: the interrupts' saves, asked for in this turn, are one write)
      // (a remote task runs on there: the next start follows it again)
      const interrupted = isWorking(entry.task.status) && !entry.runtime.launching && !entry.task.remote;
      void this.dispatch(entry, interrupted ? edge("interrupt", { reason: INTERRUPTED_REASON }) : { kind: "disposing" });
    }
    // The last write of this process, for the whole file rather than one task's step: it holds what
    // rode on the next save (task/step.ts `saveWithNext`: usage, tool counts, a queued task's child)
    // and the budgets, also when no task was running; with interrupts above, it is their same write.
    await this.save();
    await releaseWorktrees(this.registry.entries().map((e) => e.task));
    // a graceful stop: no orphan of ours for the next start to look for (store/processes.ts)
    if (this.startUpDone) await this.startUpDone.then(() => forgetProcesses(this.store.dir, [process.pid]));
  }

  // ─── idle (for tests: they wait for this instead of polling) ───

  /** event handlings and queue starts in flight (the other work in flight is in the fields read below) */
  private readonly inFlight = new Set<Promise<unknown>>();

  /** Work a call started and did not wait for (a native fork's file): whenIdle waits for it too. */
  background(work: Promise<unknown>): void {
    this.tracked(work);
  }

  private tracked<T>(work: Promise<T>): Promise<T> {
    this.inFlight.add(work);
    work.then(
      () => this.inFlight.delete(work),
      () => this.inFlight.delete(work),
    );
    return work;
  }

  /** Resolves when no event handling, job of a task (check, steer, child creation, start), save or child creation is in flight. */
  async whenIdle(): Promise<void> {
    let seen: Promise<unknown>[] = [];
    for (;;) {
      const jobs = this.registry.entries().map((e) => e.runtime.mailbox.idle);
      const busy = [...this.inFlight, this.keeping.idle, this.queued.idle, ...jobs];
      if (busy.length === seen.length && busy.every((p, i) => p === seen[i])) return;
      seen = busy;
      await Promise.allSettled(busy);
    }
  }
}
