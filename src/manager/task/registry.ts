// The task registry: ONE entry per task, holding the persisted record and the runtime state that
// goes with it (nothing here is written to the file but `task`). Lookups by task id, child session
// and parent session all lead to the same entry. No I/O. Every piece of a task's state in this
// process is here: the record and its runtime (steer, question, request and overlap state included);
// task/step.ts decides how they change and task/runner.ts writes them.

import type { NativeLaunch } from "../../native/launch.js";
import type { BackgroundTask, Frozen, Usage } from "../../task-record.js";
import type { PermissionWait, QuestionWait, RequestAnswer } from "../../task-state.js";
import { Mailbox } from "./mailbox.js";

/**
 * What creating a task's child takes (launch/launcher.ts). A queued task keeps it (in memory) until its child
 * is created, right after its launch returned; what a fork inherits is fixed at launch.
 */
export interface ChildPlan {
  title: string;
  /** the parent's permission rules, for a native child (its tool list depends on them) */
  permission?: unknown;
  /** a text fork: the preamble and context block, built from the parent's history at launch */
  forkText?: string;
  /** a native fork: the child's requests start with the parent's request */
  native?: NativeLaunch;
}

/**
 * What a task needs while this process runs it; gone on restart by design. Every field is written
 * by the task's step (task/step.ts decides, task/runner.ts writes): the plain ones are StepRuntime's,
 * the collections are changed by the runner's effects (a counted call, a waiter, a steer's wait); the
 * mailbox runs the task's jobs.
 */
export interface TaskRuntime {
  /** the launch is still in flight: events may end the task, the file does not see it yet */
  launching: boolean;
  /** loaded from the task file at start-up (its notice may already sit in the parent's messages) */
  fromFile: boolean;
  /** its jobs (a completion check, a steer, its child's creation, its start), one at a time (mailbox.ts) */
  readonly mailbox: Mailbox;
  /** its ended run is being committed on its worktree branch: for the parent's notices it has not ended yet */
  wrappingUp?: boolean;
  /** background_output({ block }) callers waiting for the task to end (task-manager.ts waitForEnd) */
  readonly endWaiters: Set<() => void>;
  /** background_output({ block }) callers that also return when the child starts waiting for a person */
  waitWaiters?: Set<() => void>;
  /** tool calls of the child already counted (added by the runner: task/step.ts `markCall`) */
  readonly seenCalls: Set<string>;
  /** the latest session.error of the running child, used when its messages carry no error */
  lastError?: string;
  /** the answer read when the run ended, so its notice does not read the child's messages again */
  answer?: string;
  /** failed attempts to deliver this run's notice (bounded: never retried forever) */
  noticeFailures: number;
  /** the guard rails of the current run (watchdog.ts decides them; the step's input `guard` writes them) */
  guard: RunGuard;
  /** usage of each assistant message of the child seen in events (so updates replace, not add: the step's `usage-step`) */
  usageByMessage: ReadonlyMap<string, Usage>;
  /** the permission the child waits for, while it waits */
  permission?: PermissionWait;
  /** the question the child asked (its `question` tool), while it waits for the answer (questions.ts) */
  question?: QuestionWait;
  /** set when the plugin stops the child itself: the abort that follows ends the task with this reason */
  stopReason?: string;
  /** a queued task whose child is not created yet: what creating it takes (launch/launcher.ts; dropped once created) */
  childPlan?: ChildPlan;
  /** steers of the child already counted, by mark (the runner: `markSteer`), and when the latest was stored */
  readonly steersCounted: Set<string>;
  lastSteerAt?: number;
  /** steers sent and waiting for the server to store them, by mark (steer.ts sets them; task/runner.ts resolveSteer tells them) */
  readonly steerWaits: Map<string, (outcome: SteerOutcome) => void>;
  /** the answer to the task's last TUI request (requests/tui.ts), published with its state */
  requestAnswer?: RequestAnswer;
  /** its overlap line as last published ("bg_x on src/a.ts"; overlaps.ts) */
  overlapNote: string;
}

/** How a steer ended: stored by the server, or not (why; `unconfirmed`: no word in time). */
export type SteerOutcome = { delivered: true } | { delivered: false; reason: string; unconfirmed?: boolean };

/** Per-run counters and the deadline of the watchdog. */
export interface RunGuard {
  deadline?: ReturnType<typeof setTimeout>;
  toolCalls: number;
  lastCall?: string;
  sameCallsInARow: number;
  emptyAnswersInARow: number;
  /** assistant messages already judged empty or not */
  judged: ReadonlySet<string>;
  /** since when the child waits for a person (a permission or a question): the deadline is paused */
  waitingSince?: number;
  /** time this run spent waiting for a person, not counted by the deadline */
  waitedMs: number;
  /** what it waited for last ("question \"Which database?\""), for the timeout's reason */
  waitedFor?: string;
}

export function freshGuard(): RunGuard {
  return { toolCalls: 0, sameCallsInARow: 0, emptyAnswersInARow: 0, judged: new Set(), waitedMs: 0 };
}

/**
 * A task's entry as the plugin holds it: its record and runtime, readonly all the way down (a write
 * does not compile). Both change only through the task's step: task/step.ts decides, and
 * task/runner.ts, the one writer, writes them.
 */
export interface TaskEntry {
  readonly task: BackgroundTask;
  readonly runtime: ReadonlyRuntime;
}

/** The runtime, readonly all the way down but for its handles (the mailbox, a child's plan: what creating it takes). */
export type ReadonlyRuntime = Frozen<Omit<TaskRuntime, "mailbox" | "childPlan">> & {
  readonly mailbox: Mailbox;
  readonly childPlan?: Readonly<ChildPlan>;
};

export class TaskRegistry {
  private readonly byId = new Map<string, TaskEntry>();
  private readonly bySession = new Map<string, TaskEntry>();
  private readonly byParent = new Map<string, Set<TaskEntry>>();

  /** A task's entry, created (a record launched, or read from the file); `childPlan`: a queued launch's, until its child exists. */
  add(task: BackgroundTask, origin: { launching?: boolean; fromFile?: boolean; childPlan?: ChildPlan } = {}): TaskEntry {
    const entry: TaskEntry = {
      task,
      runtime: {
        launching: Boolean(origin.launching),
        fromFile: Boolean(origin.fromFile),
        mailbox: new Mailbox(),
        endWaiters: new Set(),
        seenCalls: new Set(),
        noticeFailures: 0,
        guard: freshGuard(),
        usageByMessage: new Map(),
        steersCounted: new Set(),
        steerWaits: new Map(),
        overlapNote: "",
        ...(origin.childPlan ? { childPlan: origin.childPlan } : {}),
      },
    };
    this.byId.set(task.id, entry);
    if (task.sessionID) this.bySession.set(task.sessionID, entry);
    let siblings = this.byParent.get(task.parentSessionID);
    if (!siblings) this.byParent.set(task.parentSessionID, (siblings = new Set()));
    siblings.add(entry);
    return entry;
  }

  /** The task's child now exists (task/step.ts `child-created` set it): found by its session from now on. */
  indexChild(entry: TaskEntry): void {
    if (entry.task.sessionID) this.bySession.set(entry.task.sessionID, entry);
  }

  remove(entry: TaskEntry): void {
    this.byId.delete(entry.task.id);
    if (entry.task.sessionID) this.bySession.delete(entry.task.sessionID);
    const siblings = this.byParent.get(entry.task.parentSessionID);
    siblings?.delete(entry);
    if (siblings?.size === 0) this.byParent.delete(entry.task.parentSessionID);
  }

  get(id: string): TaskEntry | undefined {
    return this.byId.get(id);
  }

  /** The entry whose child session this is. */
  ofChild(sessionID: string): TaskEntry | undefined {
    return sessionID ? this.bySession.get(sessionID) : undefined;
  }

  isParent(sessionID: string): boolean {
    return this.byParent.has(sessionID);
  }

  /** The parent's tasks in launch order; tasks still launching are left out unless asked for. */
  ofParent(parent: string, options: { withLaunching?: boolean } = {}): TaskEntry[] {
    const siblings = this.byParent.get(parent);
    if (!siblings) return [];
    return [...siblings].filter((e) => options.withLaunching || !e.runtime.launching);
  }

  /** Puts the parent's tasks back in launch order (after settled ones were read from the history). */
  sortParent(parent: string): void {
    const siblings = this.byParent.get(parent);
    if (!siblings) return;
    const sorted = [...siblings].sort((a, b) => a.task.createdAt - b.task.createdAt);
    siblings.clear();
    for (const entry of sorted) siblings.add(entry);
  }

  parents(): string[] {
    return [...this.byParent.keys()];
  }

  entries(): TaskEntry[] {
    return [...this.byId.values()];
  }

  /** Every committed task (what the task file holds for this process). */
  committed(): BackgroundTask[] {
    const tasks: BackgroundTask[] = [];
    for (const entry of this.byId.values()) if (!entry.runtime.launching) tasks.push(entry.task);
    return tasks;
  }
}
