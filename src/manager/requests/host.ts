// What the requests room takes from the manager (task-manager.ts): one host for a steer, a question
// answered, a take, a cancel and the TUI's /tasks requests. Each task changes through `dispatch`.

import type { Client } from "../../host/client.js";
import type { BackgroundTask } from "../../task-record.js";
import type { SessionBudget } from "../spend/session-budget.js";
import type { Ending } from "../task/completion.js";
import type { TaskEntry } from "../task/registry.js";
import type { Dispatch } from "../task/runner.js";
import type { ToolReply } from "../launch/launcher.js";
import type { Outcome } from "../../task-state.js";

/** A task that runs on a remote: what the requests room asks of it there (../remote/actions.ts). */
export interface RemoteRequests {
  /** a cancel sent there, or kept until the remote answers again; the reply's words (the run ends here once the remote says so) */
  requestCancel(entry: TaskEntry, reason: string): Promise<string>;
  steer(entry: TaskEntry, prompt: string): Promise<ToolReply | string>;
  resume(entry: TaskEntry, input: { prompt: string; agent: string; callID: string }): Promise<ToolReply>;
  answerQuestion(entry: TaskEntry, requestID: string, answers: string[][]): Promise<void>;
  replyPermission(entry: TaskEntry, requestID: string, reply: "once" | "always" | "reject"): Promise<Outcome>;
  discard(entry: TaskEntry): Promise<Outcome>;
  /** what an ended task left there and on the shared git remote removed; undefined once done, else what is left and why */
  cleanUp(entry: TaskEntry): Promise<string | undefined>;
}

export interface RequestsHost extends Dispatch {
  /** the client (an abort, a reply, a message), and the logger */
  readonly client: Client;
  readonly registry: { get(id: string): TaskEntry | undefined; ofChild(sessionID: string): TaskEntry | undefined };
  /** the parent's budget: a /tasks request raises it or continues a paused task; a remote parent's relay pauses one */
  readonly budget: Pick<SessionBudget, "raise" | "continueTask" | "pauseAsked">;
  /** the entry of this very record (a stale copy finds none) */
  entryOf(task: BackgroundTask): TaskEntry | undefined;
  /** the parent's tasks, in launch order */
  tasksOf(parent: string): BackgroundTask[];
  /** the permission the task's child waits for, while it waits */
  waitingFor(task: BackgroundTask): string | undefined;
  /** ends the task's run once (a child found gone, a cancel that must end it itself) */
  finish(task: BackgroundTask, ending: Ending): Promise<void>;
  /** the child's model requests wait at the gate (step-gate.ts) until `work`, an abort of it, is done */
  holdRequests<T>(sessionID: string, work: Promise<T>): Promise<T>;
  /** a task that runs on a remote: what is asked of it goes there */
  readonly remote: RemoteRequests;
}
