// The task manager: the one place that owns this process's tasks and applies the rules the other
// rooms decide. Where things are:
//
//   registry.ts    one entry per task (the saved record + its runtime state), looked up by id, child, parent
//   transitions.ts THE status edges as data: from → to, the fields each sets, the follow-ups it needs (pure)
//   apply.ts       the one writer of a task's status: records an edge, then runs its follow-ups once, in order
//   launch.ts      launching and resuming a task (child session, fork context, prompt; a queued
//                  task's child is created right after its launch: createChildLater below); its host
//                  is LaunchHost, not this class
//   prompt.ts      the one sender of a message to a task's child (launch, queued start, resume, steer;
//                  a text fork's context before its first prompt)
//   cancel.ts      cancelling tasks of the caller
//   completion.ts  THE rule that decides a child has finished, and how (pure)
//   steer.ts       a message into a task that has not ended (resume on a running task, the TUI's
//                  "Send a message"): sent, confirmed by the server's event, counted
//   progress.ts    how a running task is going, read from its child's messages (background_output)
//   notices.ts     telling the parent: one notice per run, at most one wake, exactly once (its
//                  format: notices.txt.ts)
//   parent-busy.ts whether a parent is busy: the newest information wins (an event over an older snapshot)
//   turn-order.ts  what the model sees: a notice that sorted into the user's turn goes before the user's words
//   event-decide.ts  what each OpenCode event means for the tasks: a list of actions (pure)
//   event-apply.ts   the event hook: carries those actions out, in order
//   recovery.ts    start-up: tasks a stopped process left running are ended, their notices queued (RecoveryHost)
//   queue.ts       at most `concurrency` running tasks per provider/model; the rest wait in order
//   watchdog.ts    runaway children stopped: deadline, tool-call cap, repeat breaker, spend caps (spend.ts)
//   session-budget.ts  the budget of a parent session's background work: checked before each start and
//                  after each step; at 100% tasks pause (the rule: budget.ts; the running totals and
//                  what a restart keeps: budget-ledger.ts, ../store/budget-file.ts; the words: budget.txt.ts)
//   model-choice.ts  the `model` a task runs on: parsed and checked against the configured models
//   questions.ts   a child's question: recorded while it waits, answered, or answered for nobody
//   requests.ts    the TUI's requests (discard, take, continue, raise the budget), read from a child's
//                  metadata, acted on once (one row of ACTIONS each)
//   take.ts        an ended worktree task's changes taken into the parent's working tree (TakeHost)
//   overlaps.ts    which ended worktree tasks changed the same files: flags kept and republished
//                  (overlap-notes.ts holds each task's published line)
//   usage.ts       tokens and cost per task
//   receipt.ts     a fork's receipt: what its child's first request read from the cache, and why a
//                  native fork likely missed it (recorded once, from the event: event-apply.ts)
//   publish.ts     the task's state in its child session's metadata (for the TUI)
//   task-service.ts  what the tools see of the manager (launch, resume/steer, cancel, read, wait);
//                  service.ts builds it from the manager: the tools never hold the manager
//
// Where tasks are kept (open.json, the history and its index, tombstones, retention, the move from
// the old task file, runs.json) is ../store/ (its README says the layout); the manager holds its
// TaskFiles as `store`, and the store never imports the manager.
// A worktree task's git side (create, commit a run, discard, take, sweep, the worktree's own plugin
// instance) lives in ../worktree/ (lifecycle.ts is where the manager calls it); it never imports the
// manager: a discard gets its cancel and record from cancel.ts discardHost. Shared below the
// manager: ../task-record.ts (the task record; types.ts re-exports it), ../guard.ts (no delegation
// from a background child, checked when a tool is called).
//
// Where to look: a task's status changes in apply.ts only (the edges: transitions.ts); a run is
// decided over in completion.ts; a parent is told in notices.ts, and its answer cut to the notice's
// first lines in notices.txt.ts (background_output gives it whole: ../tools/result.ts). Nothing
// outside the manager holds this class: the tools get task-service.ts; launch, recovery, cancel, the
// event hook and the worktree lifecycle get narrow hosts (LaunchHost, RecoveryHost, CancelHost,
// EventHost, WorktreeHost). "Start-up" is this process starting (startUp, recordStartUp); a task
// "starts" when its run begins (the edge `start`: a queued task's turn, startQueued).
// Every call to OpenCode goes through ../host/, which imports nothing of ours.

import type { Event } from "../host/types.js";
import { RECONCILE_INTERVAL_MS } from "../constants.js";
import { childTitle, permissionText, taskStartedToast } from "../prompts.js";
import { DEFAULT_OPTIONS, type PluginOptions } from "../options.js";
import { type ApplyHost, type ApplyOptions, applyEdge, releaseWaiters } from "./apply.js";
import { type Client, abortQuietly, getMessages, isSessionGone, log } from "../host/client.js";
import { CHILD_NEVER_CREATED, type Ending, type EndingContext, INTERRUPTED_REASON, decideEnding, readChildOutcome } from "./completion.js";
import { applyEvent } from "./event-apply.js";
import { createChild, persistNativeFork } from "./launch.js";
import { ParentNotices } from "./notices.js";
import { sendTaskPrompt } from "./prompt.js";
import { publishTaskState } from "./publish.js";
import { adoptOrphans, recoverAfterRestart } from "./recovery.js";
import { TaskQueue } from "./queue.js";
import { type TaskEntry, TaskRegistry } from "./registry.js";
import { lastSteerAt, steerInFlight } from "./steer.js";
import { TaskFiles } from "../store/task-files.js";
import { isSettled } from "../store/retention.js";
import { forgetRuns, recordStartUp } from "../store/runs.js";
import { fingerprint } from "../store/history.js";
import { ToastThrottle } from "./toasts.js";
import type { Edge, EdgeInput } from "./transitions.js";
import { type BackgroundTask, hasOpenRun, isActive, isRunning } from "./types.js";
import { usageOfSession } from "./usage.js";
import { Watchdog } from "./watchdog.js";
import { BudgetLedger } from "./budget-ledger.js";
import { readBudgets, writeBudgets } from "../store/budget-file.js";
import { SessionBudget } from "./session-budget.js";
import { sessionDirectory } from "../worktree/hub.js";
import { hostTask, settleRun, worktreesAtStartUp } from "../worktree/lifecycle.js";
import { refreshOverlaps } from "./overlaps.js";
import type { QuestionWait } from "../task-state.js";

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
}

function isProcessAlive(pid: number | undefined): boolean {
  if (!pid) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
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

  private readonly legacyTaskFile: string;
  readonly store: TaskFiles;
  /** parents whose settled tasks were read from the history into the registry */
  private readonly hydrated = new Set<string>();
  private reconcileTimer: ReturnType<typeof setInterval> | undefined;
  private startUpDone: Promise<void> | undefined;
  private saveChain: Promise<void> = Promise.resolve();
  private childCreations: Promise<void> = Promise.resolve();
  private queuedSave: Promise<void> | undefined;
  private upkeepQueued = false;
  private disposed = false;
  /** what apply.ts's follow-ups call */
  private readonly applyHost: ApplyHost;

  constructor(options: ManagerOptions) {
    this.client = options.client;
    this.legacyTaskFile = options.legacyTaskFile;
    this.now = options.now ?? Date.now;
    this.reconcileIntervalMs = options.reconcileIntervalMs ?? RECONCILE_INTERVAL_MS;
    this.oneShotRun = options.oneShotRun ?? false;
    this.project = options.project;
    this.options = options.options ?? { ...DEFAULT_OPTIONS };
    this.store = new TaskFiles(this.legacyTaskFile, this.options, () => this.now());
    this.queue = new TaskQueue(this.options.concurrency, { entries: () => this.registry.entries(), start: (entry) => this.tracked(this.startQueued(entry)) });
    this.watchdog = new Watchdog(this.options, {
      now: () => this.now(),
      stop: (entry, reason) => void this.stopChild(entry, reason),
      usageChanged: (entry, step) => void this.tracked(this.budget.usageChanged(entry, step)),
    });
    this.toasts = new ToastThrottle(this.client, this.now);
    this.ledger = new BudgetLedger({ options: this.options, now: () => this.now(), tasksOf: (parent) => this.tasksOf(parent) });
    this.budget = new SessionBudget({
      client: this.client,
      oneShotRun: this.oneShotRun,
      ledger: this.ledger,
      apply: (entry, edge, input, options) => this.apply(entry, edge, input, options),
      stopChild: (entry, reason) => this.stopChild(entry, reason),
      toast: (toast) => this.toasts.show(toast),
      tellParent: (parent, text) => this.notices.budgetReached(parent, text),
      entriesOf: (parent) => (this.hydrate(parent), this.registry.ofParent(parent)),
      save: () => this.save(),
    });
    this.notices = new ParentNotices({
      client: this.client,
      now: () => this.now(),
      tasksOf: (parent) => (this.hydrate(parent), this.registry.ofParent(parent)),
      parents: () => this.registry.parents(),
      save: () => this.save(),
      outstandingChanged: () => this.updateReconcileTimer(),
      budgetLine: (parent) => this.budget.line(parent),
    });
    this.applyHost = {
      now: () => this.now(),
      warn: (message) => log(this.client, "warn", message),
      parentBusy: (parent) => this.notices.recordParentState(parent, true),
      watchdog: this.watchdog,
      // a settled run's changed paths may overlap another task's: their flags are updated (overlaps.ts)
      settleRun: async (task) => {
        await settleRun(this, task);
        if (task.worktree) refreshOverlaps(this, this.tasksOf(task.parentSessionID), task);
      },
      toast: (toast) => this.toasts.show(toast),
      publish: (task) => publishTaskState(this.client, task),
      updateReconcileTimer: () => this.updateReconcileTimer(),
      fillQueue: () => void this.queue.fill(),
      save: () => this.save(),
      noticeEnded: (entry, options) => this.notices.taskEnded(entry, options),
    };
  }

  /**
   * THE writer of a task's status (apply.ts): records the edge (transitions.ts says what it writes),
   * then runs its follow-ups once, in order. A refused edge is logged and changes nothing (false).
   */
  apply<E extends Edge>(entry: TaskEntry, edge: E, input: EdgeInput[E], options?: ApplyOptions): Promise<boolean> {
    return applyEdge(this.applyHost, entry, edge, input, options);
  }

  get isDisposed(): boolean {
    return this.disposed;
  }

  // ─── start-up ───

  /** Loads the task file and recovers tasks a stopped process left running; runs once, on first use. */
  ready(): Promise<void> {
    this.startUpDone ??= this.startUp().catch((error) => {
      log(this.client, "error", `offshoot start-up failed: ${(error as Error).message}`);
    });
    return this.startUpDone;
  }

  private async startUp(): Promise<void> {
    const { tasks, warnings, droppedSessions } = await this.store.open();
    for (const warning of warnings) log(this.client, "warn", warning);
    const budgets = await readBudgets(this.store.dir);
    for (const warning of budgets.warnings) log(this.client, "warn", warning);
    this.ledger.load(budgets.parents);
    this.droppedSessions = droppedSessions;
    // Another live OpenCode process on this project runs its own tasks; the file keeps them for it.
    for (const task of tasks) {
      if (task.ownerPid !== process.pid && isProcessAlive(task.ownerPid)) continue;
      task.ownerPid = process.pid;
      this.registry.add(task, { fromFile: true });
    }
    await worktreesAtStartUp(this, tasks);
    const openChildren = new Set(tasks.map((t) => t.sessionID));
    const known = { has: (id: string) => openChildren.has(id) || this.store.isKnownSession(id) };
    const search = await recordStartUp(this.store.dir, process.pid, this.now(), isProcessAlive);
    await adoptOrphans(this, known, (pid) => pid === process.pid || isProcessAlive(pid), search).then(
      () => forgetRuns(this.store.dir, search.kind === "since" ? search.pids : []),
      (error) => log(this.client, "warn", `looking for children of stopped launches failed: ${(error as Error).message}`),
    );
    await recoverAfterRestart(this);
    this.updateReconcileTimer();
    // Queued tasks whose child was not created before the stop get it now (or end, for a fork).
    for (const entry of this.registry.entries()) if (entry.task.status === "queued" && !entry.task.sessionID) this.createChildLater(entry);
    await this.queue.fill();
    this.storeUpkeep();
  }

  /** The store's rewrite (retention, compaction: ../store/task-files.ts maintain), queued after the saves, never on a save's path. */
  private storeUpkeep(): void {
    if (this.upkeepQueued || this.disposed || !this.store.needsUpkeep()) return;
    this.upkeepQueued = true;
    this.saveChain = this.saveChain.then(async () => {
      this.upkeepQueued = false;
      const { warnings, dropped, droppedSessions } = await this.store
        .maintain()
        .catch((error: Error) => ({ warnings: [`tidying the task store failed: ${error.message}`], dropped: [], droppedSessions: [] }));
      for (const warning of warnings) log(this.client, "warn", warning);
      if (droppedSessions.length > 0) this.onHistoryDropped?.(droppedSessions);
      // What retention dropped leaves memory too (unless it changed meanwhile: then the next save keeps it).
      for (const line of dropped) {
        const entry = this.registry.get(line.id);
        if (entry && isSettled(entry.task) && fingerprint(entry.task) === fingerprint(line)) this.registry.remove(entry);
      }
    });
  }

  // ─── queries (for the tools) ───

  get(id: string): BackgroundTask | undefined {
    const entry = this.registry.get(id);
    if (entry) return entry.task;
    const parent = this.store.parentOf(id);
    if (parent) this.hydrate(parent);
    return this.registry.get(id)?.task;
  }

  /** The parent's committed tasks, in launch order (its settled ones read from the history once). */
  tasksOf(parent: string): BackgroundTask[] {
    this.hydrate(parent);
    return this.registry.ofParent(parent).map((e) => e.task);
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

  /** Reads the parent's settled tasks from the history into the registry, once per parent. */
  private hydrate(parent: string): void {
    if (!this.store.isOpen || this.hydrated.has(parent)) return;
    this.hydrated.add(parent);
    const { tasks, warnings } = this.store.historyOf(parent);
    for (const warning of warnings) log(this.client, "warn", warning);
    let added = false;
    for (const task of tasks) {
      if (this.registry.get(task.id)) continue;
      task.ownerPid = process.pid;
      this.registry.add(task, { fromFile: true });
      hostTask(this, task); // a worktree task read from the history still works (and resumes) in its worktree
      added = true;
    }
    if (added) this.registry.sortParent(parent);
  }

  /** The permission the task's child waits for ("bash rm -rf build"), while it waits. */
  waitingFor(task: BackgroundTask): string | undefined {
    const permission = this.entry(task)?.runtime.permission;
    return permission ? permissionText(permission) : undefined;
  }

  /** The question the task's child waits to have answered, while it waits (questions.ts). */
  questionOf(task: BackgroundTask): QuestionWait | undefined {
    return this.entry(task)?.runtime.question;
  }

  private entry(task: BackgroundTask): TaskEntry | undefined {
    const entry = this.registry.get(task.id);
    return entry?.task === task ? entry : undefined;
  }

  // ─── launch and resume ───

  /** Registers a task whose launch is in flight: events can already end it, the file does not see it yet. */
  beginLaunch(task: BackgroundTask): TaskEntry {
    const entry = this.registry.add(task, { launching: true });
    this.notices.recordParentState(task.parentSessionID, true);
    return entry;
  }

  async commitLaunch(task: BackgroundTask): Promise<void> {
    const entry = this.entry(task);
    if (!entry) return;
    entry.runtime.launching = false;
    if (isRunning(task.status)) this.watchdog.runStarted(entry);
    await this.save();
    this.updateReconcileTimer();
    this.toasts.show(taskStartedToast(task));
    // The child may have ended before the launch was committed; a queued one may start already.
    if (!isActive(task.status)) await this.notices.taskEnded(entry, { wake: true, deliver: true });
    else if (task.status === "queued") void this.queue.fill();
  }

  abandonLaunch(task: BackgroundTask): void {
    const entry = this.entry(task);
    if (!entry) return;
    this.registry.remove(entry);
    releaseWaiters(entry);
  }

  /** Marks a finished task as running again for a follow-up prompt. */
  async beginResume(task: BackgroundTask, fields: Pick<BackgroundTask, "callID" | "agent" | "model">): Promise<void> {
    const entry = this.entry(task);
    if (!entry) return;
    await this.apply(entry, "resume", fields);
  }

  /** The resumed run (already begun) starts now, or waits in the queue with its prompt (published and saved as `queued`). */
  async runOrQueue(task: BackgroundTask, prompt: string): Promise<"run" | "queued"> {
    const entry = this.entry(task);
    const wait = this.queue.mustWait(task);
    if (!entry || !wait) {
      if (entry) this.watchdog.runStarted(entry);
      return "run";
    }
    // beginResume published `resumed`: the TUI must see that the new run waits
    return (await this.apply(entry, "queue", { queuedPrompt: prompt, queuedBecause: wait })) ? "queued" : "run";
  }

  /** The follow-up prompt of a resume could not be sent: the task is restored as it was before (`previous`). */
  async rollbackResume(task: BackgroundTask, previous: BackgroundTask): Promise<void> {
    const entry = this.entry(task);
    if (entry) await this.apply(entry, "rollback", { previous });
  }

  /**
   * Creates the child of a queued task after its launch returned. Children are created one at a
   * time, in launch order: a turn's other launches and the running children go first at the server.
   */
  createChildLater(entry: TaskEntry): void {
    // (a failure is the task's, never the chain's: the next creation still runs)
    this.childCreations = this.childCreations
      .then(() => this.ensureChild(entry))
      .catch((error) => log(this.client, "warn", `creating the child of task ${entry.task.id} failed: ${(error as Error).message}`));
  }

  /**
   * The task's child, created now if it has none yet (one creation per task, shared). A child that
   * cannot be created ends the task as `error` with the reason; its notice tells the parent.
   */
  private ensureChild(entry: TaskEntry): Promise<void> {
    if (entry.task.sessionID) return Promise.resolve();
    entry.runtime.creatingChild ??= this.createMissingChild(entry).finally(() => {
      entry.runtime.creatingChild = undefined;
    });
    return entry.runtime.creatingChild;
  }

  private async createMissingChild(entry: TaskEntry): Promise<void> {
    const { task } = entry;
    if (!isActive(task.status) || this.disposed) return; // cancelled before it got one: nothing to create
    const createdAs = task.status; // the state the child is created with (its metadata)
    // After a restart the plan is gone: a plain task's is its title; a fork's context cannot be rebuilt as it was.
    const plan = entry.runtime.childPlan ?? (task.isForked ? undefined : { title: childTitle(task.description, false) });
    if (!plan) return this.finish(task, { status: "error", error: CHILD_NEVER_CREATED });
    try {
      await createChild(this, entry, plan);
      persistNativeFork(this, task, plan);
      entry.runtime.childPlan = undefined;
    } catch (error) {
      if (isActive(task.status)) await this.finish(task, { status: "error", error: `its child session could not be created: ${(error as Error).message}` });
      return;
    }
    // It started or ended while its child was being created: the state that went out with it is old.
    // The new one is published once saved (the edge that changed it may still be saving).
    if (task.status !== createdAs) {
      await this.save();
      publishTaskState(this.client, task);
    }
    // Otherwise not saved now: the next save records the child (at the latest when the task starts),
    // and after a stop before that, start-up links the child by its metadata (recovery.ts
    // adoptOrphans). Saving here would put one more file write per queued task among the turn's launches.
  }

  /** A queued task's turn: its prompt goes to its child now. A prompt that cannot be sent ends it. */
  private async startQueued(entry: TaskEntry): Promise<void> {
    const { task } = entry;
    if (task.status !== "queued") return;
    const prompt = task.queuedPrompt ?? "";
    if (!(await this.budget.mayStart(entry))) return; // the parent's budget is reached: paused (stopped under opencode run)
    // (published here when it has its child; a child being created is published once created: createMissingChild)
    if (!(await this.apply(entry, "start", {}))) return;
    await this.ensureChild(entry);
    if (!isRunning(task.status) || !task.sessionID) return; // ended meanwhile: cancelled, or no child could be created
    try {
      await sendTaskPrompt(this.client, task, prompt, { what: `starting queued task ${task.id}` });
      task.queuedPrompt = undefined;
      await this.save();
    } catch (error) {
      await this.finish(task, { status: "error", error: `could not start after waiting in the queue: ${(error as Error).message}` });
    }
  }

  /** The plugin stops a runaway child itself: abort, then the task ends as `error` with the reason. */
  async stopChild(entry: TaskEntry, reason: string): Promise<void> {
    const { task } = entry;
    if (!isRunning(task.status) || entry.runtime.stopReason) return;
    entry.runtime.stopReason = reason;
    await abortQuietly(this.client, task.sessionID, sessionDirectory(task.sessionID)); // (no child yet: nothing to abort)
    await this.finish(task, { status: "error", error: reason });
  }

  // ─── ending ───

  /**
   * Ends a task's run once: later calls for the same run are ignored. `deliver: false` queues the
   * notice for a later flush (recovery ends every task first); `wake: false` never wakes the parent.
   */
  async finish(task: BackgroundTask, ending: Ending, options: { wake?: boolean; deliver?: boolean } = {}): Promise<void> {
    const entry = this.entry(task);
    if (!entry || !hasOpenRun(task.status)) return; // (a paused task is ended too: cancelled, its child deleted)
    // The follow-ups, in order (transitions.ts `finish`): the watchdog disarmed; a worktree task's run
    // committed on its branch before anybody is told (src/worktree); waiters released; toast; published;
    // then (unless commitLaunch takes it from here) the timer, the queue (a slot may have freed), the notice.
    await this.apply(entry, "finish", { ending }, options);
  }

  /**
   * Reads the child's messages and ends the task if completion.ts says its run is over. One check
   * per task at a time; idle and status events for the same moment share it.
   */
  checkCompletion(task: BackgroundTask, context: Partial<EndingContext> = {}, options: { wake?: boolean; deliver?: boolean } = {}): Promise<void> {
    const entry = this.entry(task);
    if (!entry) return Promise.resolve();
    if (entry.runtime.checking) return entry.runtime.checking;
    const check = (async () => {
      if (!isRunning(task.status) || !task.sessionID) return; // no child yet: nothing has run
      await steerInFlight(entry); // a message being sent into the run is stored before the run is judged
      if (!isRunning(task.status)) return;
      let messages;
      try {
        messages = await getMessages(this.client, task.sessionID);
      } catch (error) {
        if (!isSessionGone(error)) throw error;
        return this.finish(task, { status: "error", error: "its child session no longer exists" }, options);
      }
      if (!isRunning(task.status)) return;
      const ending = decideEnding(readChildOutcome(messages, task.startedAt), {
        cancelledByParent: Boolean(task.cancelledByParent),
        processStopped: context.processStopped ?? false,
        stalledReason: context.stalledReason,
        stopReason: entry.runtime.stopReason,
      });
      if (!ending) return;
      task.usage = usageOfSession(messages); // the authoritative sum, every run of the child
      this.ledger.note(task);
      await this.finish(task, ending, options);
    })()
      .catch((error) => log(this.client, "warn", `checking task ${task.id} failed: ${(error as Error).message}`))
      .finally(() => {
        entry.runtime.checking = undefined;
      });
    entry.runtime.checking = check;
    return check;
  }

  /**
   * Why an idle child without an answer should end now, if it should: a run the server rejected
   * (a session.error and no idle follows) or a run that never started. Otherwise it is still starting.
   */
  stalledReason(task: BackgroundTask): string | undefined {
    const error = this.entry(task)?.runtime.lastError;
    if (error) return error;
    const entry = this.entry(task);
    const since = Math.max(task.startedAt, (entry && lastSteerAt(entry)) || 0); // a message sent into the run restarts the wait
    if (this.now() - since > 2 * this.reconcileIntervalMs) return "the child session stopped without answering";
    return undefined;
  }

  /**
   * The parent read the result of the task's ended run itself (background_output): no wake for it.
   * `asNotice`: the result went out in place of the notice (background_task under `opencode run`).
   */
  async resultRead(task: BackgroundTask, options: { asNotice?: boolean } = {}): Promise<void> {
    const entry = this.entry(task);
    if (!entry || isActive(task.status)) return;
    if (task.reportedRun >= task.run && (!options.asNotice || task.notifiedRun >= task.run)) return;
    this.notices.resultRead(entry);
    if (options.asNotice) task.notifiedRun = task.run;
    await this.save();
  }

  /**
   * Resolves when the task is no longer running, after `timeoutMs`, or when `signal` aborts; with
   * `orPersonWait`, also when its child starts waiting for a person (a question, a permission).
   */
  waitForEnd(task: BackgroundTask, timeoutMs: number, signal?: AbortSignal, options: { orPersonWait?: boolean } = {}): Promise<void> {
    const entry = this.entry(task);
    if (!entry || !isActive(task.status) || signal?.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", done);
        entry.runtime.endWaiters.delete(done);
        entry.runtime.waitWaiters?.delete(done);
        resolve();
      };
      const timer = setTimeout(done, timeoutMs);
      signal?.addEventListener("abort", done, { once: true });
      entry.runtime.endWaiters.add(done);
      if (options.orPersonWait) (entry.runtime.waitWaiters ??= new Set()).add(done);
    });
  }

  /** The plugin's event hook (event-decide.ts says what each event means, event-apply.ts does it). Never throws. */
  handleEvent(event: Event): Promise<void> {
    return this.tracked(applyEvent(this, event));
  }

  // ─── persistence and timers ───

  /**
   * Writes the file. Writes are serialised, and every save asked for before the waiting one takes
   * its snapshot (in the store, holding the lock) shares that one: it holds all their changes.
   */
  save(): Promise<void> {
    if (this.queuedSave) return this.queuedSave;
    const queued: Promise<void> = this.saveChain.then(() =>
      this.store
        .save(() => {
          if (this.queuedSave === queued) this.queuedSave = undefined; // a change from now on needs the next save
          return this.registry.committed();
        })
        .then(
          // the budgets' state a restart must keep (budget-file.ts), written only when it changed
          () => (this.ledger.dirty && this.store.isOpen ? writeBudgets(this.store.dir, this.ledger.forSave()) : undefined),
        )
        .then(
          () => this.storeUpkeep(),
          (error) => log(this.client, "error", `saving tasks failed: ${(error as Error).message}`),
        )
        .finally(() => {
          if (this.queuedSave === queued) this.queuedSave = undefined; // failed before its snapshot
        }),
    );
    this.queuedSave = this.saveChain = queued;
    return queued;
  }

  /** The reconcile runs only while something is outstanding: a running task or an undelivered notice. */
  updateReconcileTimer(): void {
    const outstanding = !this.disposed && (this.registry.entries().some((e) => isActive(e.task.status)) || this.notices.hasOutstanding());
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
      for (const { task, runtime } of this.registry.entries()) {
        if (isRunning(task.status) && !runtime.launching && !snapshot.busy.has(task.sessionID)) {
          await this.checkCompletion(task, { stalledReason: this.stalledReason(task) });
        }
      }
      await Promise.all(this.notices.parentsWithOutstanding().map((parent) => this.notices.fillFromSnapshot(parent, snapshot)));
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
    for (const entry of this.registry.entries()) {
      this.watchdog.runEnded(entry);
      // (no follow-up of its own: nothing is published; the one save below records them all)
      if (isRunning(entry.task.status) && !entry.runtime.launching) void this.apply(entry, "interrupt", { reason: INTERRUPTED_REASON });
      releaseWaiters(entry);
    }
    await this.save();
    // a graceful stop: no orphan of ours for the next start to look for (runs.ts)
    if (this.startUpDone) await this.startUpDone.then(() => forgetRuns(this.store.dir, [process.pid]));
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

  /** Resolves when no event handling, completion check, save, child creation or queue start is in flight. */
  async whenIdle(): Promise<void> {
    let seen: Promise<unknown>[] = [];
    for (;;) {
      const checks = this.registry.entries().flatMap((e) => [e.runtime.checking, e.runtime.creatingChild]);
      const busy = [...this.inFlight, this.saveChain, this.childCreations, ...checks].filter((p) => p !== undefined);
      if (busy.length === seen.length && busy.every((p, i) => p === seen[i])) return;
      seen = busy;
      await Promise.allSettled(busy);
    }
  }
}
