// Where a runaway child is stopped. Per run of a task: a deadline (taskTimeoutSeconds), a cap on
// tool calls (maxToolCalls), and a repeat breaker (the same tool call with the same input, or an
// empty answer from the model, repeatLimit times in a row). Over every run: the spend caps
// (maxTaskTokens, maxTaskCost; spend/caps.ts). Time the child spends waiting for a person (a permission,
// a question) is not counted by the deadline. Each rule only decides: its counters (the task's
// runtime `guard`) are written by the task's step (input `guard`, `usage-step`), and the manager
// stops the child (abort) and ends the task as `error` with the reason.

import type { AssistantMessage } from "../../host/types.js";
import type { PluginOptions } from "../../options.js";
import { type RunGuard, type TaskEntry, freshGuard } from "../task/registry.js";
import { usageOfMessage } from "../task/usage.js";
import { type SpendLimits, spendOverCap } from "./caps.js";
import { isWorking, meaningOf } from "../../task-record.js";
import { formatDuration } from "../../format.js";
import type { SpendHost } from "./host.js";

/** The child waits for a person: a permission or the answer to a question. */
function waitsForPerson(entry: TaskEntry): boolean {
  return Boolean(entry.runtime.permission || entry.runtime.question);
}

export type Limits = Pick<PluginOptions, "taskTimeoutSeconds" | "maxToolCalls" | "repeatLimit"> & SpendLimits;

/** What the watchdog uses of the room's host. */
export type WatchdogHost = Pick<SpendHost, "now" | "stop" | "usageChanged" | "dispatch">;

export class Watchdog {
  constructor(
    private readonly limits: Limits,
    private readonly host: WatchdogHost,
  ) {}

  /** A run started (or was adopted): fresh counters and a deadline from the run's start. */
  runStarted(entry: TaskEntry): void {
    this.runEnded(entry);
    if (waitsForPerson(entry)) this.write(entry, { ...freshGuard(), waitingSince: this.host.now() });
    else this.arm(entry, freshGuard());
  }

  /** The guard's new counters, through the task's step (task/step.ts `guard`): written at once. */
  private write(entry: TaskEntry, guard: RunGuard): void {
    void this.host.dispatch(entry, { kind: "guard", guard });
  }

  /** The spend caps (spend/caps.ts), over every run of the task: checked on each update of its child's usage (a task resumed past a cap stops at its first step). */
  private checkSpend(entry: TaskEntry): boolean {
    const over = spendOverCap(entry.task.usage, this.limits);
    if (over) this.host.stop(entry, over);
    return Boolean(over);
  }

  runEnded(entry: TaskEntry): void {
    const { deadline } = entry.runtime.guard;
    if (!deadline) return;
    clearTimeout(deadline);
    this.write(entry, { ...entry.runtime.guard, deadline: undefined });
  }

  /**
   * The child started or stopped waiting for a person (a permission or a question, `what`): the
   * deadline stands still meanwhile, so time spent waiting for the user is not counted.
   */
  personWaitChanged(entry: TaskEntry, what?: string): void {
    const guard = entry.runtime.guard;
    if (waitsForPerson(entry)) {
      if (guard.deadline) clearTimeout(guard.deadline);
      const waitingSince = guard.waitingSince ?? this.host.now();
      this.write(entry, { ...guard, ...(what ? { waitedFor: what } : {}), waitingSince, deadline: undefined });
    } else if (guard.waitingSince !== undefined) {
      this.arm(entry, { ...guard, waitedMs: guard.waitedMs + Math.max(0, this.host.now() - guard.waitingSince), waitingSince: undefined });
    }
  }

  /** The deadline from the run's start, moved on by the time spent waiting for a person; `guard` is written with it. */
  private arm(entry: TaskEntry, guard: RunGuard): void {
    if (guard.deadline) clearTimeout(guard.deadline);
    const left = entry.task.startedAt + guard.waitedMs + this.limits.taskTimeoutSeconds * 1000 - this.host.now();
    const deadline = setTimeout(() => this.host.stop(entry, this.timeoutReason(entry)), Math.max(0, left));
    deadline.unref?.();
    this.write(entry, { ...guard, deadline });
  }

  private timeoutReason(entry: TaskEntry): string {
    const limit = `taskTimeoutSeconds: ${this.limits.taskTimeoutSeconds}`;
    const { waitedMs, waitedFor } = entry.runtime.guard;
    if (waitedMs > 0) {
      return `stopped: still running after ${this.limits.taskTimeoutSeconds}s of work (${limit}), not counting ${formatDuration(waitedMs)} spent waiting for the user${waitedFor ? ` (last: ${waitedFor})` : ""}`;
    }
    return `stopped: still running after ${this.limits.taskTimeoutSeconds}s (${limit})`;
  }

  /**
   * A task that runs on a remote: what it spent there was read (../remote/follow.ts, a step late). The
   * spend caps over its usage, and maxToolCalls over the calls its run made there since the last
   * read. Its stop is a cancel sent there (the remote's own caps and repeat breaker stop it there
   * too). True when it is stopped.
   */
  remoteSeen(entry: TaskEntry, toolCallsBefore: number): boolean {
    if (!isWorking(entry.task.status) || entry.runtime.stopReason) return false;
    if (this.checkSpend(entry)) return true;
    const more = entry.task.toolCalls - toolCallsBefore;
    if (more <= 0) return false;
    const guard = { ...entry.runtime.guard, toolCalls: entry.runtime.guard.toolCalls + more };
    this.write(entry, guard);
    if (guard.toolCalls <= this.limits.maxToolCalls) return false;
    this.host.stop(entry, tooManyCalls(this.limits.maxToolCalls));
    return true;
  }

  /** A tool call of the child, first seen in a working state: counts it and checks the repeat breaker. */
  toolCall(entry: TaskEntry, part: { tool: string; args?: unknown }): void {
    const before = entry.runtime.guard;
    const call = `${part.tool}\u0000${stableInput(part.args)}`;
    const guard = {
      ...before,
      toolCalls: before.toolCalls + 1,
      emptyAnswersInARow: 0,
      ...(before.toolCalls + 1 > this.limits.maxToolCalls
        ? {}
        : { sameCallsInARow: call === before.lastCall ? before.sameCallsInARow + 1 : 1, lastCall: call }),
    };
    this.write(entry, guard);
    if (guard.toolCalls > this.limits.maxToolCalls) {
      return this.host.stop(entry, tooManyCalls(this.limits.maxToolCalls));
    }
    if (guard.sameCallsInARow >= this.limits.repeatLimit) {
      this.host.stop(
        entry,
        `stopped: called ${part.tool} with the same input ${guard.sameCallsInARow} times in a row (repeatLimit: ${this.limits.repeatLimit})`,
      );
    }
  }

  /** Whether this message's usage, as it reads now, is already counted (its event or the step gate came first). */
  counted(entry: TaskEntry, info: AssistantMessage): boolean {
    const before = entry.runtime.usageByMessage.get(info.id);
    if (!before) return false;
    const now = usageOfMessage(info);
    return (Object.keys(now) as (keyof typeof now)[]).every((key) => now[key] === before[key]);
  }

  /** An assistant message of the child was updated: its usage, and the empty-answer breaker once it is finished. */
  assistantMessage(entry: TaskEntry, info: AssistantMessage): void {
    const { task } = entry;
    // (an update decided while the run went on, applied after it ended: its bookkeeping is gone, task/runner.ts;
    // a paused task's still counts: the step its pause cut short was charged)
    if (!meaningOf(task.status).countsUsage) return;
    const now = usageOfMessage(info);
    void this.host.dispatch(entry, { kind: "usage-step", messageID: info.id, now }); // (written at once: no effect waits)
    if (this.checkSpend(entry)) return;
    const finished = Boolean(info.time?.completed || info.finish || info.error);
    this.host.usageChanged?.(entry, { stepEnded: finished && !info.error, lastStep: Boolean(info.finish) && info.finish !== "tool-calls" });
    if (meaningOf(entry.task.status).waitsForPerson) return;
    const before = entry.runtime.guard;
    if (!finished || before.judged.has(info.id) || info.error) return;
    const empty = now.output === 0 && now.reasoning === 0 && info.finish !== "tool-calls";
    const guard = { ...before, judged: new Set([...before.judged, info.id]), emptyAnswersInARow: empty ? before.emptyAnswersInARow + 1 : 0 };
    this.write(entry, guard);
    if (guard.emptyAnswersInARow >= this.limits.repeatLimit) {
      this.host.stop(entry, `stopped: the model gave ${guard.emptyAnswersInARow} empty answers in a row (repeatLimit: ${this.limits.repeatLimit})`);
    }
  }
}

const tooManyCalls = (max: number) => `stopped: more than ${max} tool calls in one run (maxToolCalls: ${max})`;

/** The input as canonical JSON (sorted keys) so the same call is recognised however it is spelled. */
function stableInput(input: unknown): string {
  try {
    return JSON.stringify(input ?? {}, (_key, value) =>
      value && typeof value === "object" && !Array.isArray(value)
        ? Object.fromEntries(Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
        : value,
    );
  } catch {
    return String(input);
  }
}
