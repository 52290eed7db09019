// Texts the manager's rooms write: the launch, resume and steer replies, refusals of an agent or a
// model, answers to a child's question, the child's title, toasts; and the pieces the tools' texts
// share with them (a task's line, model, duration; a question's line). Pure strings and string
// builders only. Each tool's description, argument texts and own replies are beside the tool
// (src/tools/<tool>.txt.ts); the notice format is beside the notices (src/manager/notices.txt.ts).

import type { BackgroundTask } from "./task-record.js";
import { type QuestionWait, meaningOf } from "./task-state.js";
import { forkLine } from "./native/describe.js";
import { worktreeLines } from "./worktree/describe.js";
import { formatDuration } from "./format.js";
import { oneLine } from "./text.js";

// ─── Background task tools: the manager's replies ───

export function childTitle(description: string, forked: boolean): string {
  return `${forked ? "Background (forked)" : "Background"}: ${description}`;
}

export function taskDuration(task: BackgroundTask, now: number): string {
  return formatDuration((task.completedAt ?? now) - task.startedAt);
}

/** "mock/other-model" (with "#variant" when one was chosen), or undefined when the model is unknown. */
export function taskModel(task: Pick<BackgroundTask, "model" | "variant">): string | undefined {
  return task.model ? `${task.model.providerID}/${task.model.modelID}${task.variant ? `#${task.variant}` : ""}` : undefined;
}

function onModel(task: Pick<BackgroundTask, "model" | "variant">): string {
  return task.model ? ` on ${taskModel(task)}` : "";
}

/** `bg_… "description" (status, agent …)`: a task in a list of tasks. */
export function taskLine(task: BackgroundTask): string {
  return `${task.id} "${task.description}" (${task.status}, agent ${task.agent})`;
}

export const MESSAGES = {
  unknownAgent: (agent: string, names: string[]) =>
    `Error: there is no agent named "${agent}". Agents available: ${names.join(", ") || "(none)"}. Call background_task again with one of them.`,
  launched: (task: BackgroundTask) =>
    [
      meaningOf(task.status).queued
        ? `Background task ${task.id} created${task.isForked ? " (forked)" : ""} and queued: "${task.description}" with agent ${task.agent}${onModel(task)}. It starts when a slot frees: ${task.queuedBecause ?? "too many tasks are running"}.`
        : `Background task ${task.id} started${task.isForked ? " (forked)" : ""}: "${task.description}" with agent ${task.agent}${onModel(task)}.`,
      task.fork ? `Fork: ${forkLine(task.fork)}.` : "",
      task.sessionID ? `Child session: ${task.sessionID}.` : "Its child session is being created; it gets the prompt when a slot frees.",
      ...worktreeLines(task.id, task.worktree, "active", [], task.remote),
      "You will get a notification in this session when it finishes; keep working meanwhile.",
      `Result: background_output({ task_id: "${task.id}" }) (add block: true to wait for it).`,
    ]
      .filter(Boolean)
      .join("\n"),
  resumed: (task: BackgroundTask) =>
    [
      meaningOf(task.status).queued
        ? `Background task ${task.id} resumed and queued: the follow-up goes to its child session ${task.sessionID} when a slot frees (${task.queuedBecause ?? "too many tasks are running"}).`
        : `Background task ${task.id} resumed: the follow-up went to its child session ${task.sessionID}.`,
      "You will get a notification in this session when it finishes.",
      `Result: background_output({ task_id: "${task.id}" }).`,
    ].join("\n"),
  continued: (task: BackgroundTask) =>
    [
      `Background task ${task.id} continues in place (its child session ${task.sessionID}, its history kept) when a slot of its model is free.`,
      "You will get a notification in this session when it finishes.",
      `Result: background_output({ task_id: "${task.id}" }).`,
    ].join("\n"),
  badModelArg: (value: string) =>
    `Error: background_task argument "model" must be "provider/model" (or "provider/model#variant"), not ${JSON.stringify(oneLine(value, 60).text)}. Nothing was started. Call background_task again with model: "<provider>/<model>", or without model to use yours.`,
  unknownModel: (name: string, names: string[], more: number) =>
    `Error: there is no model "${oneLine(name, 120).text}" among the configured ones. Nothing was started. Models available: ${names.join(", ") || "(none)"}${more > 0 ? ` (and ${more} more)` : ""}. Call background_task again with one of them, or without model to use yours.`,
  unknownVariant: (name: string, variant: string, variants: string[]) =>
    `Error: model ${name} has no variant "${oneLine(variant, 60).text}". Nothing was started. ${variants.length ? `Its variants: ${variants.join(", ")}.` : "It has no variants."} Call background_task again with model: "${name}"${variants.length ? ` or "${name}#<variant>"` : ""}.`,
  worktreeWithoutConfig: (directory: string) =>
    `the OpenCode instance of the worktree ${directory} did not load this plugin, so its OpenCode config (model, plugins) is not there and the child would silently do nothing. Put the plugin in a config OpenCode finds from that directory (the global ~/.config/opencode, or a committed opencode.json)`,
  resumeWorktreeGone: (task: BackgroundTask) =>
    `Error: task ${task.id} cannot be resumed: its worktree and branch were removed (${task.worktree?.removed ?? "gone"}). Start a new task with isolation: "worktree" instead.`,
  resumeWorktreeNotRemade: (task: BackgroundTask, why: string) =>
    `Error: task ${task.id} was not resumed: its worktree directory (freed once its run was committed) could not be made again from its branch ${task.worktree?.branch ?? ""}: ${why}. The task is as it was; its branch still holds its work (git log ${task.worktree?.base.slice(0, 12) ?? ""}..${task.worktree?.branch ?? ""}).`,
  steered: (task: BackgroundTask) =>
    [
      `Message sent to background task ${task.id} "${task.description}": its child session ${task.sessionID} has stored it, and the child reads it at its next step (after the tool calls it is running now).`,
      `It stays the same task and run (run ${task.run}); you get one notification when it ends. Messages sent to it so far: ${task.steers ?? 1}.`,
    ].join("\n"),
  steerQueued: (task: BackgroundTask) =>
    `Background task ${task.id} "${task.description}" is queued (${task.queuedBecause ?? "waiting for a free slot"}): your message was added to its prompt, and its child gets both when it starts.`,
  steerNotDelivered: (task: BackgroundTask, reason: string) =>
    `Error: the message was NOT delivered to background task ${task.id} "${task.description}": ${reason}. Check the task with background_output({ task_id: "${task.id}" }).`,
  steerUnconfirmed: (task: BackgroundTask, reason: string) =>
    `Warning: the message to background task ${task.id} "${task.description}" was handed to the server, but ${reason}, so it may not have reached the child. Check the task with background_output({ task_id: "${task.id}" }) before sending it again.`,
  steerAgentChange: (task: BackgroundTask, agent: string) =>
    `Error: task ${task.id} is ${task.status} with agent ${task.agent}; a message to a task that has not ended cannot change its agent to ${agent}. Leave agent out to send the message, or resume the task with another agent once it has ended. Nothing was sent.`,
  /** A queued task's prompt with a message the parent sent while it waited. */
  queuedWithMessage: (queuedPrompt: string, message: string) =>
    `${queuedPrompt}\n\nA later message from the parent session (sent while this task waited to start):\n${message}`,
} as const;

export function taskStartedToast(task: BackgroundTask) {
  return { title: "Background task started", message: `${task.id}: ${task.description}`, variant: "info" as const };
}

export function taskEndedToast(task: BackgroundTask) {
  const end = meaningOf(task.status).end;
  const variant = end === "success" ? ("success" as const) : end === "failure" ? ("error" as const) : ("warning" as const);
  return { title: `Background task ${task.status}`, message: `${task.id}: ${task.description}`, variant };
}

// ─── A child's question (src/manager/questions.ts) ───

/**
 * The answer a child gets where nobody can answer (option `questions: "deny"`, by default under
 * `opencode run`). It reads, in the child's tool result: User has answered your questions:
 * "<question>"="<this>". You can now continue with the user's answers in mind.
 */
export const NO_ONE_CAN_ANSWER =
  "Nobody can answer: you run as a background task where no person sees questions. Do not ask again; decide yourself, carry on, and state in your final answer what you assumed and why";

/** The question(s) on one line: `"Which database?" (options: PostgreSQL | SQLite; typed answers allowed)`. */
export function questionLine(wait: QuestionWait): string {
  const one = (q: QuestionWait["questions"][number]) => {
    const options = q.options.map((o) => o.label).join(" | ");
    const how = [
      options ? `options: ${options}` : "",
      q.multiple ? "several may be picked" : "",
      q.custom === false ? "only these options" : options ? "typed answers allowed" : "",
    ];
    return `"${q.question}"${how.some(Boolean) ? ` (${how.filter(Boolean).join("; ")})` : ""}`;
  };
  return oneLine(wait.questions.map(one).join("; "), QUESTION_LINE_MAX_CHARS).text;
}

const QUESTION_LINE_MAX_CHARS = 800;

/** The background_output call that answers the question. */
export function answerCall(task: BackgroundTask, wait: QuestionWait): string {
  const answer = wait.questions.length === 1 ? '"<answer>"' : `[${wait.questions.map((_, i) => `"<answer ${i + 1}>"`).join(", ")}]`;
  return `background_output({ task_id: "${task.id}", answer: ${answer} })`;
}

export const QUESTION_MESSAGES = {
  answered: (task: BackgroundTask, wait: QuestionWait, answers: string[][]) =>
    `Answer sent to task ${task.id}: ${wait.questions.map((q, i) => `"${q.question}"="${answers[i]!.join(", ")}"`).join(", ")}. The child continues with it.`,
  notWaiting: (task: BackgroundTask, permission: string | undefined) =>
    `Error: task ${task.id} is not waiting for an answer (it is ${task.status}${permission ? `, waiting for a permission (${permission}) that only the user can answer` : ""}); answer is only for a task whose child asked a question (background_list marks it). Nothing was sent.`,
  badAnswer: (task: BackgroundTask, wait: QuestionWait, why: string) =>
    `Error: the answer was not sent: ${why}. The question of task ${task.id}: ${questionLine(wait)}. Call ${answerCall(task, wait)} again.`,
  sendFailed: (task: BackgroundTask, why: string) =>
    `Error: the answer could not be sent to task ${task.id}: ${why}. It may have been answered meanwhile; check with background_output({ task_id: "${task.id}" }).`,
} as const;
