// What the tools see of the manager: the caller's tasks, and what a tool may do with them (launch,
// resume, steer, cancel, discard, take, answer a question, read a result, wait). Nothing else: no
// registry, queue, watchdog or OpenCode client. Built from the manager by service.ts; the tools
// (src/tools/) depend on this interface and on the task's types only.

import type { ToolContext } from "../host/types.js";
import type { QuestionWait } from "../task-state.js";
import type { LaunchInput, ToolReply } from "./launch/launcher.js";
import type { ModelChoice } from "./launch/model-choice.js";
import type { RunProgress } from "./task/progress.js";
import type { BackgroundTask, ModelRef } from "../task-record.js";

export type { LaunchInput, ModelChoice, RunProgress, ToolReply };

export interface TaskService {
  // ─── the process ───
  /** Resolves once the task file is read and recovery ran (every tool call waits for it first). */
  ready(): Promise<void>;
  now(): number;
  /** this process is a one-shot `opencode run`: it exits when the parent goes idle */
  readonly oneShotRun: boolean;

  // ─── the caller's tasks ───
  get(id: string): BackgroundTask | undefined;
  /** The parent's tasks, in launch order. */
  tasksOf(parent: string): BackgroundTask[];
  isChildSession(sessionID: string): boolean;
  /** The task a call with this id launched already (a repeated call). */
  findByCallID(parent: string, callID: string): BackgroundTask | undefined;
  /** A task of this parent that retention dropped (for the "past the history limit" answer). */
  droppedTask(query: string, parent: string): { id: string; session: string } | undefined;
  /** The permission the task's child waits for ("bash rm -rf build"), while it waits. */
  waitingFor(task: BackgroundTask): string | undefined;
  /** The question the task's child waits to have answered, while it waits. */
  questionOf(task: BackgroundTask): QuestionWait | undefined;
  /** How the task's current run is going, read from its child's messages (throws when they cannot be read). */
  progressOf(task: BackgroundTask): Promise<RunProgress>;
  /** The child's final text answer (throws when its messages cannot be read). */
  answerOf(task: BackgroundTask): Promise<string | undefined>;
  /** A remote task whose remote does not answer now: the line that says so (background_list), else undefined. */
  remoteNote(task: BackgroundTask): string | undefined;
  /** The parent read the ended run's result itself: no wake for it (`asNotice`: it went out in place of the notice). */
  resultRead(task: BackgroundTask, options?: { asNotice?: boolean }): Promise<void>;
  /** Resolves when the task is no longer running, after `timeoutMs`, when `signal` aborts, or (`orPersonWait`) when its child waits for a person. */
  waitForEnd(task: BackgroundTask, timeoutMs: number, signal?: AbortSignal, options?: { orPersonWait?: boolean }): Promise<void>;

  // ─── checks before a launch ───
  /** Undefined when the agent exists, else the reply that lists the agents there are. */
  checkAgent(agent: string, ctx: Pick<ToolContext, "sessionID" | "messageID">): Promise<string | undefined>;
  /** The model the `model` argument names, or the reply saying why it cannot be used. */
  resolveModel(value: string): Promise<ModelChoice | { error: string }>;
  /** The model the agent's config names (known once checkAgent read the agent list), if any. */
  agentModel(agent: string): ModelRef | undefined;
  /** Why a native fork cannot run on the chosen model (not exactly the caller's), or undefined. */
  nativeForkBlockedBy(choice: ModelChoice | undefined, ctx: ToolContext): string | undefined;
  /** The reply refusing a new start (launch, resume, continue) while the parent's budget is reached, or undefined. */
  budgetRefusal(parent: string): string | undefined;
  /** The budget's line for background_list from 80% on, or undefined. */
  budgetLine(parent: string): string | undefined;

  // ─── acting ───
  launch(input: LaunchInput, ctx: ToolContext): Promise<ToolReply>;
  /** A follow-up prompt to an ended task's child. */
  resume(task: BackgroundTask, input: { prompt: string; agent: string }, ctx: ToolContext): Promise<ToolReply>;
  /** A paused task goes on in place with the prompt (same child session, its history kept); refused while the budget is reached. */
  continueTask(task: BackgroundTask, input: { prompt: string; agent: string }, ctx: ToolContext): Promise<ToolReply | string>;
  /** A message into a task that has not ended; undefined when it ended meanwhile (then it is resumed). */
  steer(task: BackgroundTask, prompt: string, agent: string | undefined): Promise<ToolReply | string | undefined>;
  /** `notes`: what happened to each remote task's cancel (`task <id>: …`): sent there, or kept until the remote answers */
  cancel(tasks: BackgroundTask[]): Promise<{ cancelled: BackgroundTask[]; failed: string[]; notes: string[] }>;
  /** Removes an ended worktree task's worktree and branch (cancelling it first if it runs); the reply. */
  discard(task: BackgroundTask): Promise<string>;
  /** Applies an ended worktree task's changes to the parent's working tree (then removes its worktree and branch unless `keep`); the reply. */
  take(task: BackgroundTask, options: { keep?: boolean }): Promise<string>;
  /** Sends the parent's answer (one per question) to the question the task's child waits on. */
  answer(task: BackgroundTask, answers: string[]): Promise<{ ok: string } | { error: string }>;
}
