// Texts the plugin sends to models. Pure strings and string builders only.

import { DESCRIPTION_MAX_CHARS, NOTIFICATION_ANSWER_LINES, PROGRESS_TEXT_LINES, OUTPUT_BLOCK_DEFAULT_S, OUTPUT_BLOCK_MAX_S } from "./constants.js";
import type { BackgroundTask } from "./manager/types.js";
import type { QuestionWait } from "./task-state.js";
import { forkLine } from "./native/describe.js";
import { worktreeLines } from "./worktree/describe.js";
import { formatDuration, formatUsage } from "./format.js";
import type { RunProgress } from "./manager/progress.js";
import { afterLabel, cleanLines, oneLine, quoteLines } from "./text.js";

// ─── Background task tools: descriptions, messages, notifications ───

export const TOOL_DESCRIPTIONS = {
  background_task: [
    "Run a sub-agent task in the background, in a child session of its own, while you keep working.",
    "Returns at once with a task id; you get a notification in this session when the task ends.",
    "With fork: true the child starts knowing what you know. Without agent (or with your own agent) it is a native fork: a copy of you that sees this whole conversation and reuses your prompt cache. With another agent it gets a processed copy of this conversation (recent tool results whole, older ones shortened). Without fork, the child sees only the prompt.",
    "With model: \"provider/model\" the child runs on that model (e.g. a cheap one for a search, a strong one for a review); without it, on the agent's own model if its config names one, else on yours.",
    'With isolation: "worktree" the child works in its own git worktree and branch (parallel writers never collide); its changes are committed there when it ends.',
    "With resume: <task id> you send a follow-up prompt to a finished task's child session (it keeps its own history). On a task that is still running, resume sends the prompt into it as a message: the child reads it at its next step, and the task stays the same task (use it to redirect a child going the wrong way). fork and resume cannot be combined.",
    "Read results with background_output, stop tasks with background_cancel, see them all with background_list.",
  ].join("\n"),
  background_output:
    "Get a background task's status and, when it has finished, its final answer. With block: true, wait for the task to finish (up to timeout seconds) instead of returning at once; it returns at once when the task waits for the user. With answer, send the user's answer to the question the task's child asked.",
  background_cancel: "Cancel background tasks of this session: one by task_id, or every running one with all: true. The child sessions are aborted. With task_id and discard: true, a worktree task's worktree and branch are removed (cancelled first if it still runs).",
  background_list: "List this session's background tasks: id, status (and what a task waits for), running time, tool calls, tokens and cost, description; then totals.",
} as const;

export const ARG_DESCRIPTIONS = {
  description: "A short (3-8 words) description of the task; it names the child session.",
  prompt: "The full instructions for the sub-agent (or, with resume, the follow-up message).",
  agent: "The agent that runs the task, e.g. general or explore. With fork: true leave it out (or name your own agent) for a native fork: the child is a copy of you that shares your prompt cache.",
  fork: "Give the child a processed copy of this conversation so it starts knowing what you know.",
  model: 'The model the child runs on, as "provider/model" (or "provider/model#variant"); leave it out to use yours. A native fork needs your model: another one makes it a text fork.',
  resume: "Task id of a task of this session: a finished one continues with the prompt (same child session); a running or queued one gets the prompt as a message (read at its next step, or with its prompt when it starts).",
  isolation:
    'Where the child edits files: "shared" (default) works in this checkout; "worktree" gives it its own git worktree and branch offshoot/<task id>, made from what you see now (HEAD plus uncommitted changes); when it ends, its changes are committed there and you get the diff summary and the commands to take them.',
  discard: "With task_id of an ENDED worktree task: remove its worktree and branch (after you took or rejected its changes).",
  task_id: "The task id from background_task (a unique prefix is enough).",
  block: "Wait until the task finishes (or timeout passes) before answering.",
  timeout: `Seconds to wait with block (default ${OUTPUT_BLOCK_DEFAULT_S}, at most ${OUTPUT_BLOCK_MAX_S}).`,
  all: "Cancel every running task of this session.",
  answer:
    "Only when the task waits for the user's answer to its question (background_list and background_output say so) and the user gave you the answer or told you to answer: the answer to send (a list of strings, one per question, when it asked several).",
  status: "Only list tasks with this status (running includes resumed tasks).",
} as const;

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

function taskLine(task: BackgroundTask): string {
  return `${task.id} "${task.description}" (${task.status}, agent ${task.agent})`;
}

export const MESSAGES = {
  forkWithResume: "Cannot use fork and resume together. Use fork for new tasks with context, resume for continuing existing tasks.",
  blank: (fields: string[]) =>
    `Error: ${fields.join(", ")} ${fields.length === 1 ? "is" : "are"} empty. Give background_task a non-empty ${fields.join(" and ")}.`,
  unknownAgent: (agent: string, names: string[]) =>
    `Error: there is no agent named "${agent}". Agents available: ${names.join(", ") || "(none)"}. Call background_task again with one of them.`,
  oneShotRunWaited:
    "This is a one-shot `opencode run`: it would end (and stop the child) as soon as this session is idle, so this call waited for the task. Its result:",
  oneShotRunStillRunning: (task: BackgroundTask, seconds: number) =>
    `This is a one-shot \`opencode run\`; the task did not end within ${seconds}s or the wait was interrupted. It stops when this run ends; read what it did with background_output({ task_id: "${task.id}" }).`,
  childCannotDelegate: (tool: string) =>
    `Refused: this session is a background task; it cannot hand its work to another agent (the ${tool} tool). Do the work directly in this session with your other tools.`,
  childCannotLaunch:
    "Error: this session is itself a background task; it cannot start background tasks of its own. Do the work directly in this session.",
  launchFailed: (what: string) => `Error: the background task was not started: ${what}. Nothing was left behind; you can call background_task again.`,
  launched: (task: BackgroundTask, fallback?: string) =>
    [
      task.status === "queued"
        ? `Background task ${task.id} created${task.isForked ? " (forked)" : ""} and queued: "${task.description}" with agent ${task.agent}${onModel(task)}. It starts when a slot frees: ${task.queuedBecause ?? "too many tasks are running"}.`
        : `Background task ${task.id} started${task.isForked ? " (forked)" : ""}: "${task.description}" with agent ${task.agent}${onModel(task)}.`,
      task.fork ? `Fork: ${forkLine(task.fork)}${fallback ? ` (not native: ${fallback})` : ""}.` : "",
      task.sessionID ? `Child session: ${task.sessionID}.` : "Its child session is being created; it gets the prompt when a slot frees.",
      ...worktreeLines(task.id, task.worktree, "active"),
      "You will get a notification in this session when it finishes; keep working meanwhile.",
      `Result: background_output({ task_id: "${task.id}" }) (add block: true to wait for it).`,
    ]
      .filter(Boolean)
      .join("\n"),
  resumed: (task: BackgroundTask) =>
    [
      task.status === "queued"
        ? `Background task ${task.id} resumed and queued: the follow-up goes to its child session ${task.sessionID} when a slot frees (${task.queuedBecause ?? "too many tasks are running"}).`
        : `Background task ${task.id} resumed: the follow-up went to its child session ${task.sessionID}.`,
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
  isolationWithResume: "Error: isolation cannot be given with resume: a resumed task continues where it ran (a worktree task in its own worktree).",
  worktreeForkNotNative:
    "a worktree child's system prompt names its own working directory, so its requests cannot start with yours",
  modelWithResume:
    "Error: model cannot be given with resume: a resumed task keeps the model it ran on. Start a new task with background_task({ description, prompt, agent, model }) to use another model.",
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
  unknownTask: (query: string, tasks: BackgroundTask[]) =>
    tasks.length === 0
      ? `Error: no task "${query}": this session has no background tasks.`
      : `Error: no task "${query}" in this session. Its tasks:\n${tasks.map((t) => `- ${taskLine(t)}`).join("\n")}`,
  pastHistory: (id: string, childSession: string) =>
    `Error: task ${id} is past the history limit (plugin options historyDays / historyMax): the plugin no longer keeps it, so it cannot be resumed or read here.${childSession ? ` Its child session ${childSession} is still in OpenCode: open it to see what it did.` : ""}`,
  ambiguousTask: (query: string, candidates: BackgroundTask[]) =>
    `Error: "${query}" matches ${candidates.length} tasks; give more of the id:\n${candidates.map((t) => `- ${taskLine(t)}`).join("\n")}`,
  cancelNeedsTarget: "Error: give task_id to cancel one task, or all: true to cancel every running task of this session.",
} as const;

/**
 * What background_output says about a running task before "Still running": how long it has run,
 * its last activity and how long ago, tool calls and tokens so far, the first lines of its latest text.
 */
export function runningProgress(task: BackgroundTask, progress: RunProgress, now: number): string {
  const ago = (at: number) => `${formatDuration(now - at)} ago`;
  const tool = progress.lastTool;
  const toolText = tool ? `tool ${oneLine(tool.tool, 60).text}${tool.title ? ` "${oneLine(tool.title, 120).text}"` : ""} (${tool.status})` : "";
  const activity = progress.lastActivityAt
    ? `Last activity: ${ago(progress.lastActivityAt)}${toolText ? `; latest tool call: ${toolText}` : ""}.`
    : "Last activity: none yet (its model has not answered so far).";
  const lines = progress.latestText ? cleanLines(progress.latestText) : [];
  const shown = quoteLines(lines.slice(0, PROGRESS_TEXT_LINES));
  const more = lines.length - shown.length;
  const usage = formatUsage(task.usage);
  return [
    `Running for ${formatDuration(now - task.startedAt)}${task.run > 1 ? ` (run ${task.run})` : ""}.`,
    activity,
    `Tool calls so far: ${progress.toolCalls} in this run${task.toolCalls !== progress.toolCalls ? `, ${task.toolCalls} in all` : ""}.`,
    `Tokens so far: ${usage || "none reported yet"}.`,
    shown.length ? `Latest text (first lines):\n${shown.join("\n")}${more > 0 ? `\n… (${more} more lines)` : ""}` : "Latest text: none yet.",
  ].join("\n");
}

const STATUS_WORD: Record<BackgroundTask["status"], string> = {
  queued: "is queued",
  running: "is running",
  resumed: "is running (resumed)",
  completed: "completed",
  error: "failed",
  cancelled: "was cancelled",
  interrupted: "was interrupted",
};

/** Every notice of a task starts with this; one found in the parent's messages was already delivered. */
export function noticePrefix(task: Pick<BackgroundTask, "id">): string {
  return `[background task ${task.id} `;
}

export function isNoticeOf(text: string, task: Pick<BackgroundTask, "id">): boolean {
  return text.startsWith(noticePrefix(task));
}

/** The noReply message a parent receives once per ended run of a task. */
export function buildTaskNotification(task: BackgroundTask, answer: string, now: number): string {
  // Model-written text is neutralised (src/text.ts): the description is one line, the answer's lines
  // are indented and the error's lines after its first too, so none of them can start a line of ours.
  const lines = cleanLines(answer);
  const shown = quoteLines(lines.slice(0, NOTIFICATION_ANSWER_LINES));
  const more = lines.length - shown.length;
  return [
    `${noticePrefix(task)}${STATUS_WORD[task.status]}] "${oneLine(task.description, DESCRIPTION_MAX_CHARS).text}"`,
    `status: ${task.status} · agent: ${oneLine(task.agent, DESCRIPTION_MAX_CHARS).text}${task.model ? ` · model: ${taskModel(task)}` : ""} · duration: ${taskDuration(task, now)} · tool calls: ${task.toolCalls}${task.isForked ? ` · forked (${forkLine(task.fork) ?? "context copy"})` : ""}`,
    task.usage && formatUsage(task.usage) ? `usage: ${formatUsage(task.usage)}` : "",
    task.error ? afterLabel("error:", task.error) : "",
    ...worktreeLines(task.id, task.worktree, "ended"),
    shown.length ? `answer (first lines):\n${shown.join("\n")}${more > 0 ? `\n… (${more} more lines)` : ""}` : "",
    `Full result: background_output({ task_id: "${task.id}" })`,
  ]
    .filter(Boolean)
    .join("\n");
}

/** The prompt that wakes an idle parent when its last task ended or one failed. */
export function buildWakePrompt(ended: BackgroundTask[], running: BackgroundTask[]): string {
  return [
    "Background tasks you started have ended:",
    ...ended.map((t) => `- ${taskLine({ ...t, description: oneLine(t.description, DESCRIPTION_MAX_CHARS).text, agent: oneLine(t.agent, DESCRIPTION_MAX_CHARS).text })}`),
    running.length ? `Still running: ${running.map((t) => t.id).join(", ")}.` : "No background tasks are running now.",
    "Read each result with background_output and continue your work.",
  ].join("\n");
}

export function taskStartedToast(task: BackgroundTask) {
  return { title: "Background task started", message: `${task.id}: ${task.description}`, variant: "info" as const };
}

export function taskEndedToast(task: BackgroundTask) {
  const variant = task.status === "completed" ? ("success" as const) : task.status === "error" ? ("error" as const) : ("warning" as const);
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
    const how = [options ? `options: ${options}` : "", q.multiple ? "several may be picked" : "", q.custom === false ? "only these options" : options ? "typed answers allowed" : ""];
    return `"${q.question}"${how.some(Boolean) ? ` (${how.filter(Boolean).join("; ")})` : ""}`;
  };
  return oneLine(wait.questions.map(one).join("; "), QUESTION_LINE_MAX_CHARS).text;
}

const QUESTION_LINE_MAX_CHARS = 800;

function answerCall(task: BackgroundTask, wait: QuestionWait): string {
  const answer = wait.questions.length === 1 ? '"<answer>"' : `[${wait.questions.map((_, i) => `"<answer ${i + 1}>"`).join(", ")}]`;
  return `background_output({ task_id: "${task.id}", answer: ${answer} })`;
}

export const QUESTION_MESSAGES = {
  /** The line under the task in background_list. */
  listDetail: (task: BackgroundTask, wait: QuestionWait) =>
    `⚠ waiting for the user's answer: ${questionLine(wait)} (the user answers in OpenCode; if they tell you the answer: ${answerCall(task, wait)})`,
  /** background_output of a task whose child waits for an answer (block: true returns at once with it). */
  waiting: (task: BackgroundTask, wait: QuestionWait) =>
    [
      `Waiting for the user's answer to its question: ${questionLine(wait)}`,
      "It does nothing until someone answers; waiting for it here would not help. The user can answer it in OpenCode (it shows in this session's view).",
      `If the user gives you the answer, or tells you to answer for them, pass it on: ${answerCall(task, wait)}. You will be notified when the task ends.`,
    ].join("\n"),
  /** background_output of a task whose child waits for a permission. */
  waitingForPermission: (what: string) =>
    `Waiting for the user to answer its permission request: ${what}. It does nothing until the user answers it in OpenCode (you cannot answer it). You will be notified when the task ends.`,
  answered: (task: BackgroundTask, wait: QuestionWait, answers: string[][]) =>
    `Answer sent to task ${task.id}: ${wait.questions.map((q, i) => `"${q.question}"="${answers[i]!.join(", ")}"`).join(", ")}. The child continues with it.`,
  notWaiting: (task: BackgroundTask, permission: string | undefined) =>
    `Error: task ${task.id} is not waiting for an answer (it is ${task.status}${permission ? `, waiting for a permission (${permission}) that only the user can answer` : ""}); answer is only for a task whose child asked a question (background_list marks it). Nothing was sent.`,
  badAnswer: (task: BackgroundTask, wait: QuestionWait, why: string) =>
    `Error: the answer was not sent: ${why}. The question of task ${task.id}: ${questionLine(wait)}. Call ${answerCall(task, wait)} again.`,
  sendFailed: (task: BackgroundTask, why: string) =>
    `Error: the answer could not be sent to task ${task.id}: ${why}. It may have been answered meanwhile; check with background_output({ task_id: "${task.id}" }).`,
} as const;
