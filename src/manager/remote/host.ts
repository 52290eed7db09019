// What the remote room takes from the manager (task-manager.ts): one host for a remote task's launch,
// its following, and what agents and people ask of it. Each task changes through `dispatch`.

import type { Client } from "../../host/client.js";
import type { PluginOptions } from "../../options.js";
import type { BackgroundTask } from "../../task-record.js";
import type { ChildPlan } from "../launch/launcher.js";
import type { Ending } from "../task/completion.js";
import type { TaskEntry } from "../task/registry.js";
import type { Dispatch, DispatchOptions } from "../task/runner.js";

export interface RemoteHost extends Dispatch {
  readonly client: Client;
  now(): number;
  readonly options: PluginOptions;
  readonly project: { directory: string; id: string } | undefined;
  readonly isDisposed: boolean;
  readonly registry: { get(id: string): TaskEntry | undefined; entries(): TaskEntry[] };
  get(id: string): BackgroundTask | undefined;
  /** the entry of this very record (a stale copy finds none) */
  entryOf(task: BackgroundTask): TaskEntry | undefined;
  /** a launch registered (in flight), then committed (saved, shown, followed) or abandoned */
  beginLaunch(task: BackgroundTask, childPlan?: ChildPlan): TaskEntry;
  /** the queue: a launch past its remote's limit waits here (launch/queue.ts) */
  readonly queue: { claim(task: BackgroundTask): string | undefined; release(task: BackgroundTask): void };
  commitLaunch(task: BackgroundTask): Promise<void>;
  abandonLaunch(task: BackgroundTask): void;
  /** an ended task's new run (the edge `resume`), or its return to how it was when the remote refused it */
  beginResume(task: BackgroundTask, fields: Pick<BackgroundTask, "callID" | "agent" | "model">): Promise<void>;
  rollbackResume(task: BackgroundTask, previous: BackgroundTask): Promise<void>;
  /** the run's end, once (the edge `finish`) */
  finish(task: BackgroundTask, ending: Ending, options?: DispatchOptions): Promise<void>;
  /**
   * What the task spent there was read (follow.ts): this process's caps (the watchdog: its stop is a
   * cancel sent there) and its parent's budget (a pause, sent there by the next check) applied to it.
   * `spent`: its usage changed; `runEnded`: its run there has ended (nothing is left to stop).
   */
  spendSeen(entry: TaskEntry, seen: { toolCallsBefore: number; spent: boolean; runEnded: boolean }): Promise<void>;
  /** work that goes on after the call that started it returned (whenIdle waits for it) */
  background(work: Promise<unknown>): void;
}
