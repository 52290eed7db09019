// The task's status edges, as data: which edge may leave which status, where it goes, which fields
// of the record it sets and clears, and which effects it needs (in their order). Pure: no I/O,
// types only. An edge is one kind of input of a task's step (task/step.ts, input `edge`);
// task/runner.ts writes what it decides and runs its effects.
//
// Saved before told: in every edge that tells anyone (publish, a toast, a released waiter), "save"
// comes first, so nothing shows a state the task file does not hold yet (a crash between the two
// would leave the TUI, or the agent, believing what a restart does not).
//
// A new record is CREATED with its first status, never transitioned into it: a launch's record
// (launch/launcher.ts: the draft, then `launchedFields` once the queue decided) and a child adopted at start-up
// (recovery.ts adoptOrphans: `interrupted`). Everything after that goes through an edge here.

import type { Ending } from "./completion.js";
import { type BackgroundTask, STATUS_MEANINGS, TASK_STATUSES, type TaskStatus, statusesWhere } from "../../task-record.js";

export type Edge = "start" | "queue" | "requeue" | "resume" | "rollback" | "finish" | "interrupt" | "pause" | "continue";

/**
 * An effect, run by task/runner.ts in the order its edge lists them:
 * - endRunState    the run's runtime waits cleared (last error, permission, question) and its
 *                  bookkeeping released (usage per message, judged messages), its answer kept for the
 *                  notice (all written by the step)
 * - freshRunState  a new run's runtime counters reset (last error, answer, notice failures, stop reason: the step)
 * - parentBusy     the parent is recorded busy (it is the one asking)
 * - watchdogStart / watchdogEnd   the run's guard rails armed / disarmed (watchdog.ts)
 * - wrapUpRun      a worktree task's run committed on its branch (src/worktree)
 * - releaseWaiters background_output({ block }) callers released
 * - toastStarted / toastEnded     the TUI's toast
 * - publish        the state in the child's metadata (publish.ts; for the TUI)
 * - stopIfLaunching  the rest is commitLaunch's while the launch is still in flight
 * - timer          the reconcile timer (runs only while something is outstanding)
 * - queueFill      a slot may have freed: queued tasks start
 * - save           the task file written
 * - noticeEnded    the parent told (notices.ts), with the caller's wake/deliver options
 */
export type Effect =
  | "endRunState"
  | "freshRunState"
  | "parentBusy"
  | "watchdogStart"
  | "watchdogEnd"
  | "wrapUpRun"
  | "releaseWaiters"
  | "toastStarted"
  | "toastEnded"
  | "publish"
  | "stopIfLaunching"
  | "timer"
  | "queueFill"
  | "save"
  | "noticeEnded";

export type Field = keyof BackgroundTask;

export interface EdgeRule {
  /** the statuses it may leave */
  readonly from: readonly TaskStatus[];
  /** where it may go (which one: see `transition`) */
  readonly to: readonly TaskStatus[];
  /** the fields it writes with a value; "*" restores every field of a snapshot */
  readonly sets: readonly (Field | "*")[];
  /** the fields it clears (written undefined) */
  readonly clears: readonly Field[];
  readonly effects: readonly Effect[];
}

// The groups an edge leaves from or goes to are the status table's (task-state.ts STATUS_MEANINGS).
export const ENDED_STATUSES: readonly TaskStatus[] = TASK_STATUSES.filter((s) => !STATUS_MEANINGS[s].open);
/** it goes on without anyone: queued, or its child works */
const ACTIVE: readonly TaskStatus[] = statusesWhere("moving");
/** a run that has not ended: moving, or waiting for a person (paused by its parent's budget) */
const OPEN_RUN: readonly TaskStatus[] = statusesWhere("open");
const RUNNING: readonly TaskStatus[] = statusesWhere("working");
/** stopped in place, to go on with the same child: a person's Continue */
const CONTINUABLE: readonly TaskStatus[] = statusesWhere("continuable");

export const EDGES: { readonly [E in Edge]: EdgeRule } = {
  /** a queued task's turn (queue.ts): `running` on its first run, `resumed` after */
  start: {
    from: ["queued"],
    to: ["running", "resumed"],
    sets: ["status", "startedAt"],
    clears: ["queuedBecause"],
    effects: ["watchdogStart", "timer", "save", "publish"],
  },
  /** a resumed run must wait for a slot: it keeps its prompt until it starts */
  queue: {
    from: ["resumed"],
    to: ["queued"],
    sets: ["status", "queuedPrompt", "queuedBecause"],
    clears: [],
    effects: ["save", "publish"],
  },
  /** start-up: started from the queue but OpenCode stopped before its child existed; it keeps its prompt and place */
  requeue: {
    from: RUNNING,
    to: ["queued"],
    sets: ["status", "queuedBecause"],
    clears: [],
    // (start-up's requeues are written at once: their saves, asked for in one turn, are one write)
    effects: ["save"],
  },
  /** a follow-up prompt to an ended task: a new run */
  resume: {
    from: ENDED_STATUSES,
    to: ["resumed"],
    sets: ["status", "callID", "agent", "model", "run", "startedAt"],
    clears: ["completedAt", "error", "cancelledByParent"],
    effects: ["freshRunState", "parentBusy", "save", "timer", "publish", "toastStarted"],
  },
  /**
   * The follow-up prompt could not be sent: the task is restored as it was before `resume` (the
   * snapshot taken then). From `resumed`, or from the end the new run reached while the prompt was
   * being refused (today's behaviour: the snapshot wins).
   */
  rollback: {
    from: ["resumed", ...ENDED_STATUSES],
    to: ENDED_STATUSES,
    sets: ["*"],
    clears: [],
    effects: ["save", "publish"],
  },
  /** the run ended (completion.ts decided how, or the plugin ended it; a paused task is cancelled) */
  finish: {
    from: OPEN_RUN,
    to: ENDED_STATUSES,
    sets: ["status", "completedAt", "error"],
    clears: ["queuedPrompt", "queuedBecause"],
    effects: [
      "endRunState",
      "watchdogEnd",
      "wrapUpRun",
      "save",
      "releaseWaiters",
      "toastEnded",
      "publish",
      "stopIfLaunching",
      "timer",
      "queueFill",
      "noticeEnded",
    ],
  },
  /**
   * OpenCode is stopping (dispose): a running task is interrupted. Its watchdog disarmed, saved, its
   * waiters released, and nothing else: nothing is published (the next start delivers the notice).
   * The interrupts of one dispose are written in one turn: their saves are one write.
   */
  interrupt: {
    from: RUNNING,
    to: ["interrupted"],
    sets: ["status", "completedAt", "error"],
    clears: [],
    effects: ["watchdogEnd", "save", "releaseWaiters"],
  },
  /**
   * The parent's budget is reached (budget.ts): a running child stopped after its step (aborted by
   * the manager first), or a queued task held before it starts. Its run has not ended: no notice,
   * no toast of an end; the reason is kept in `error` until it continues.
   */
  pause: {
    from: ACTIVE,
    to: ["paused"],
    sets: ["status", "error"],
    clears: [],
    effects: ["watchdogEnd", "save", "releaseWaiters", "publish", "timer", "queueFill"],
  },
  /**
   * A person's "Continue" (/tasks), or the agent's resume once the budget allows: the task goes on in
   * place, through the queue (its slot, its model), with `prompt`. A paused task keeps its run (one
   * notice at its end); an interrupted one (OpenCode stopped) starts a new run.
   */
  continue: {
    from: CONTINUABLE,
    to: ["queued"],
    sets: ["status", "queuedPrompt", "queuedBecause", "run", "callID", "agent"],
    clears: ["error", "completedAt", "cancelledByParent"],
    effects: ["freshRunState", "save", "publish", "timer", "queueFill"],
  },
};

export interface EdgeInput {
  start: Record<string, never>;
  queue: { queuedPrompt: string; queuedBecause: string };
  requeue: { queuedBecause: string };
  resume: Pick<BackgroundTask, "callID" | "agent" | "model">;
  rollback: { previous: Readonly<BackgroundTask> };
  finish: { ending: Ending };
  interrupt: { reason: string };
  pause: { reason: string };
  /** the prompt the task goes on with; a new callID/agent when the agent resumed it */
  continue: { prompt: string; callID?: string; agent?: string };
}

export type Transition = { next: Partial<BackgroundTask> & { status: TaskStatus }; effects: readonly Effect[] } | { refused: string };

/** What `edge` does to `task` now: the fields to write and the effects, or why it is refused. Never mutates, never throws. */
export function transition<E extends Edge>(task: Readonly<BackgroundTask>, edge: E, input: EdgeInput[E], now: number, edges: typeof EDGES = EDGES): Transition {
  const rule = Object.prototype.hasOwnProperty.call(edges, edge) ? edges[edge] : undefined;
  if (!rule) return { refused: `there is no edge "${String(edge)}"` };
  if (!task || !rule.from.includes(task.status)) return { refused: `${edge} is not allowed from ${task?.status ?? "no task"}` };
  const next = fieldsOf(task, edge, (input ?? {}) as EdgeInput[Edge], now);
  if (typeof next === "string") return { refused: `${edge} from ${task.status}: ${next}` };
  if (!rule.to.includes(next.status)) return { refused: `${edge} may not go from ${task.status} to ${next.status}` };
  return { next, effects: rule.effects };
}

function fieldsOf(
  task: Readonly<BackgroundTask>,
  edge: Edge,
  input: EdgeInput[Edge],
  now: number,
): (Partial<BackgroundTask> & { status: TaskStatus }) | string {
  switch (edge) {
    case "start":
      return { status: task.run > 1 ? "resumed" : "running", startedAt: now, queuedBecause: undefined };
    case "queue": {
      const { queuedPrompt, queuedBecause } = input as EdgeInput["queue"];
      if (typeof queuedPrompt !== "string" || typeof queuedBecause !== "string") return "it needs the prompt and why it waits";
      return { status: "queued", queuedPrompt, queuedBecause };
    }
    case "requeue": {
      const { queuedBecause } = input as EdgeInput["requeue"];
      if (typeof queuedBecause !== "string") return "it needs why it waits";
      return { status: "queued", queuedBecause };
    }
    case "resume": {
      const { callID, agent, model } = input as EdgeInput["resume"];
      if (!callID || !agent) return "it needs the call and the agent";
      return {
        callID,
        agent,
        model,
        status: "resumed",
        run: task.run + 1,
        startedAt: now,
        completedAt: undefined,
        error: undefined,
        cancelledByParent: undefined,
      };
    }
    case "rollback": {
      const { previous } = input as EdgeInput["rollback"];
      if (!previous || previous.id !== task.id) return "it needs the task's own snapshot";
      return { ...previous };
    }
    case "finish": {
      const { ending } = input as EdgeInput["finish"];
      if (!ending) return "it needs the ending";
      return {
        status: ending.status,
        completedAt: Math.min(now, Math.max(ending.endedAt ?? now, task.startedAt)),
        error: ending.error,
        queuedPrompt: undefined,
        queuedBecause: undefined,
      };
    }
    case "interrupt":
      return { status: "interrupted", completedAt: now, error: (input as EdgeInput["interrupt"]).reason };
    case "pause": {
      const { reason } = input as EdgeInput["pause"];
      if (typeof reason !== "string" || !reason) return "it needs the reason";
      return { status: "paused", error: reason };
    }
    case "continue": {
      const { prompt, callID, agent } = input as EdgeInput["continue"];
      if (typeof prompt !== "string" || !prompt.trim()) return "it needs the prompt it goes on with";
      return {
        status: "queued",
        queuedPrompt: prompt,
        queuedBecause: "continued: waiting for a free slot",
        run: task.status === "interrupted" ? task.run + 1 : task.run,
        callID: callID || task.callID,
        agent: agent || task.agent,
        error: undefined,
        completedAt: undefined,
        cancelledByParent: undefined,
      };
    }
  }
}

/** The fields a launched record starts with, once the queue decided (a new record: created, not transitioned). */
export function launchedFields(wait: string | undefined, queuedPrompt: string): Pick<BackgroundTask, "status" | "queuedPrompt" | "queuedBecause"> {
  return wait ? { status: "queued", queuedPrompt, queuedBecause: wait } : { status: "running" };
}
