// A queued task: its child created right after its launch returned, and its start when its turn in
// the queue comes (queue.ts). Children are created one at a time, in launch order, across tasks: a
// turn's other launches and the running children go first at the server. The creation and the start
// are jobs of the task's mailbox (a start posted before its child's creation creates the child itself).

import { log } from "../../host/client.js";
import { childTitle } from "../../prompts.js";
import { isMoving, isWorking, meaningOf } from "../../task-record.js";
import { CHILD_NEVER_CREATED } from "../task/completion.js";
import type { TaskEntry } from "../task/registry.js";
import { edge } from "../task/step.js";
import { type LaunchHost, createChild, persistNativeFork } from "./launcher.js";
import { sendTaskPrompt } from "./prompt.js";

export class QueuedTasks {
  /** the children being created, in launch order (one chain across tasks) */
  private creations: Promise<void> = Promise.resolve();

  constructor(private readonly host: LaunchHost) {}

  /** Resolves when no child creation is in flight (the manager's whenIdle). */
  get idle(): Promise<void> {
    return this.creations;
  }

  /** Creates the child of a queued task after its launch returned, after those launched before it. */
  createChildLater(entry: TaskEntry): void {
    // (a failure is the task's, never the chain's: the next creation still runs)
    this.creations = this.creations
      .then(() => entry.runtime.mailbox.post(() => this.createMissingChild(entry)))
      .catch((error) => log(this.host.client, "warn", `creating the child of task ${entry.task.id} failed: ${(error as Error).message}`));
  }

  /** A queued task's turn (a job of its mailbox): its prompt goes to its child now. A prompt that cannot be sent ends it. */
  async start(entry: TaskEntry): Promise<void> {
    const { task } = entry;
    if (!meaningOf(task.status).queued) return;
    const prompt = task.queuedPrompt ?? "";
    if (!(await this.host.budget.mayStart(entry))) return; // the parent's budget is reached: paused (stopped under opencode run)
    // a task that waited here for a slot of its remote is launched there now; one that cannot be ends, with the reason
    if (task.remoteWait) {
      const refused = await this.host.startRemote(entry);
      if (refused)
        return this.host.finish(task, {
          status: "error",
          error: `could not be launched on remote "${task.remoteWait.name}" after waiting in the queue: ${refused}`,
        });
      await this.host.dispatch(entry, edge("start", {}));
      return;
    }
    // a paused task that runs on a remote goes on there (its prompt sent there); it stays paused when it cannot
    if (task.remote) {
      const refused = await this.host.continueRemote(entry, prompt);
      await this.host.dispatch(entry, refused ? edge("pause", { reason: refused }) : edge("start", {}));
      return;
    }
    // (published here when it has its child; a child being created is published once created: createMissingChild)
    if (!(await this.host.dispatch(entry, edge("start", {})))) return;
    await this.createMissingChild(entry);
    if (!isWorking(task.status) || !task.sessionID) return; // ended meanwhile: cancelled, or no child could be created
    try {
      await sendTaskPrompt(this.host.client, task, prompt, { what: `starting queued task ${task.id}` });
      await this.host.dispatch(entry, { kind: "prompt-sent" });
    } catch (error) {
      await this.host.finish(task, { status: "error", error: `could not start after waiting in the queue: ${(error as Error).message}` });
    }
  }

  /**
   * The task's child, created now if it has none yet (run inside one of the task's jobs). A child that
   * cannot be created ends the task as `error` with the reason; its notice tells the parent.
   */
  private async createMissingChild(entry: TaskEntry): Promise<void> {
    const { task } = entry;
    if (task.sessionID || !isMoving(task.status) || this.host.isDisposed) return; // it has one, or was cancelled before it got one
    // After a restart the plan is gone: a plain task's is its title; a fork's context cannot be rebuilt as it was.
    const plan = entry.runtime.childPlan ?? (task.isForked ? undefined : { title: childTitle(task.description, false) });
    if (!plan) return this.host.finish(task, { status: "error", error: CHILD_NEVER_CREATED });
    try {
      await createChild(this.host, entry, plan);
      persistNativeFork(this.host, task, plan);
    } catch (error) {
      if (isMoving(task.status))
        await this.host.finish(task, { status: "error", error: `its child session could not be created: ${(error as Error).message}` });
      return;
    }
    // (a task that started or ended while its child was being created was saved and published anew
    // by the child's step, task/step.ts `child-created`; otherwise the next save records the child)
  }
}
