// Where a task waits for its turn. At most `concurrency` tasks run at once per provider/model;
// more wait in launch order (FIFO per provider/model) with status `queued`, their child created and
// their prompt kept, and start as others end. The queue survives a restart (queued tasks are saved).

import type { TaskEntry } from "../task/registry.js";
import { type BackgroundTask, isWorking, meaningOf } from "../../task-record.js";

export interface QueueHost {
  entries(): TaskEntry[];
  /** the limit of a slot other than a model's, and the option that sets it (a remote's own: remotes.<name>.concurrency); undefined: `concurrency` */
  limit?(task: BackgroundTask): { limit: number; option: string } | undefined;
  /** sends the queued prompt of `entry`; the task is running when it resolves, ended when it fails */
  start(entry: TaskEntry): Promise<void>;
}

/** The provider/model a task's child runs on: the unit of concurrency. */
export function slotOf(task: Pick<BackgroundTask, "model" | "remote" | "remoteWait">): string {
  // (a remote task takes no slot of a model here: it runs there, within its remote's own limit)
  const remote = task.remote?.name ?? task.remoteWait?.name;
  if (remote !== undefined) return `remote "${remote}"`;
  return task.model ? `${task.model.providerID}/${task.model.modelID}` : "the default model";
}

export class TaskQueue {
  private filling: Promise<void> | undefined;
  private again = false;
  /** slots taken by launches whose task is not registered yet (claim → release) */
  private readonly claimed = new Map<string, number>();

  constructor(
    private readonly concurrency: number,
    private readonly host: QueueHost,
  ) {}

  /** the limit of the task's slot (every task of a slot has the same) */
  private limitOf(task: BackgroundTask): { limit: number; option: string } {
    return this.host.limit?.(task) ?? { limit: this.concurrency, option: "concurrency" };
  }

  private runningOn(slot: string): number {
    let n = this.claimed.get(slot) ?? 0;
    for (const { task } of this.host.entries()) if (isWorking(task.status) && slotOf(task) === slot) n++;
    return n;
  }

  /** Undefined when a new run of `task` may start now; otherwise why it must wait. */
  mustWait(task: BackgroundTask): string | undefined {
    const slot = slotOf(task);
    // (a resumed task is marked running before it asks: it does not wait for itself)
    const running = this.runningOn(slot) - (isWorking(task.status) ? 1 : 0);
    // Launches still in flight are not in line yet (they decide when they get here, in order).
    const waiting = this.host.entries().some((e) => meaningOf(e.task.status).queued && !e.runtime.launching && slotOf(e.task) === slot && e.task !== task);
    const { limit, option } = this.limitOf(task);
    if (running < limit && !waiting) return undefined;
    return `${running} task${running === 1 ? "" : "s"} on ${slot} ${running === 1 ? "is" : "are"} running (${option} ${limit})`;
  }

  /**
   * A new launch decides at once, before anything is created, whether it runs or waits: a free slot
   * is claimed for it (so the launches of one turn take slots in the order they arrive). The claim
   * is released when the task is registered as running, or when the launch fails before that.
   */
  claim(task: BackgroundTask): string | undefined {
    const wait = this.mustWait(task);
    if (!wait) this.claimed.set(slotOf(task), (this.claimed.get(slotOf(task)) ?? 0) + 1);
    return wait;
  }

  release(task: BackgroundTask): void {
    const slot = slotOf(task);
    const n = (this.claimed.get(slot) ?? 0) - 1;
    if (n > 0) this.claimed.set(slot, n);
    else this.claimed.delete(slot);
  }

  /** Starts queued tasks while their model has free slots, oldest first. One fill at a time. */
  fill(): Promise<void> {
    if (this.filling) {
      this.again = true;
      return this.filling;
    }
    this.filling = (async () => {
      do {
        this.again = false;
        const queued = this.host
          .entries()
          .filter((e) => meaningOf(e.task.status).queued && !e.runtime.launching)
          .sort((a, b) => a.task.startedAt - b.task.startedAt);
        const free = new Map<string, number>();
        const starts: Promise<void>[] = [];
        for (const entry of queued) {
          const slot = slotOf(entry.task);
          const left = free.get(slot) ?? this.limitOf(entry.task).limit - this.runningOn(slot);
          if (left <= 0) continue;
          free.set(slot, left - 1);
          starts.push(this.host.start(entry));
        }
        await Promise.all(starts);
      } while (this.again);
    })().finally(() => {
      this.filling = undefined;
    });
    return this.filling;
  }
}
