// A child's question (OpenCode's `question` tool) waits for a person, like a permission: recorded on
// the task while it waits (list, output, TUI, the watchdog's pause), answered through
// background_output({ answer }) or by anyone through the API. Where nobody can answer (the option
// `questions: "deny"`, by default under `opencode run`) the child is answered at once with a fixed
// text that says so: a reply, not a rejection, since a rejected question ends the child's turn.

import { sessionDirectory } from "../worktree/hub.js";
import type { Event } from "../host/types.js";
import { ANSWER_MAX_CHARS, QUESTION_LABEL_MAX_CHARS, QUESTION_MAX_CHARS, QUESTION_MAX_OPTIONS, QUESTION_MAX_QUESTIONS } from "../constants.js";
import type { QuestionPolicy } from "../options.js";
import { NO_ONE_CAN_ANSWER, QUESTION_MESSAGES } from "../prompts.js";
import type { AskedQuestion, QuestionWait } from "../task-state.js";
import { oneLine } from "../text.js";
import { log } from "../host/client.js";
import { replyToQuestion } from "../host/question.js";
import { publishTaskState } from "./publish.js";
import type { TaskEntry } from "./registry.js";
import type { TaskManager } from "./task-manager.js";
import { isActive, isRunning } from "./types.js";

type QuestionEvent = Extract<Event, { type: "question.asked" | "question.replied" | "question.rejected" }>;

/** What a child's question waits on in this process: "deny" under `opencode run` unless set. */
export function questionPolicy(manager: Pick<TaskManager, "options" | "oneShotRun">): QuestionPolicy {
  return manager.options.questions ?? (manager.oneShotRun ? "deny" : "ask");
}

/** `question.asked` properties as a bounded, cleaned wait (undefined when malformed). */
export function parseQuestionAsked(props: unknown): QuestionWait | undefined {
  if (!props || typeof props !== "object") return undefined;
  const p = props as Record<string, unknown>;
  if (typeof p.id !== "string" || !p.id || !Array.isArray(p.questions) || p.questions.length === 0) return undefined;
  const questions: AskedQuestion[] = [];
  for (const raw of p.questions.slice(0, QUESTION_MAX_QUESTIONS)) {
    const q = (raw && typeof raw === "object" ? raw : {}) as Record<string, unknown>;
    const options = (Array.isArray(q.options) ? q.options : []).slice(0, QUESTION_MAX_OPTIONS).flatMap((o) => {
      const option = (o && typeof o === "object" ? o : {}) as Record<string, unknown>;
      const label = typeof option.label === "string" ? oneLine(option.label, QUESTION_LABEL_MAX_CHARS).text : "";
      if (!label) return [];
      const description = typeof option.description === "string" ? oneLine(option.description, QUESTION_MAX_CHARS).text : "";
      return [description ? { label, description } : { label }];
    });
    const header = typeof q.header === "string" ? oneLine(q.header, QUESTION_LABEL_MAX_CHARS).text : "";
    questions.push({
      question: oneLine(typeof q.question === "string" ? q.question : "", QUESTION_MAX_CHARS).text || header || "(no question text)",
      ...(header ? { header } : {}),
      options,
      ...(q.multiple === true ? { multiple: true } : {}),
      ...(q.custom === false ? { custom: false } : {}),
    });
  }
  return { id: p.id, questions };
}

/** The question's event for a task's child: recorded (policy "ask") or answered at once (policy "deny"). */
export async function onQuestion(manager: TaskManager, event: QuestionEvent): Promise<void> {
  const entry = manager.registry.ofChild(event.properties.sessionID);
  if (!entry || !isActive(entry.task.status)) return;
  if (event.type === "question.asked") {
    const wait = parseQuestionAsked(event.properties);
    if (!wait) return;
    if (questionPolicy(manager) === "deny") {
      // (the reply's own question.replied event finds no recorded wait: nothing else changes)
      await replyToQuestion(manager.client, wait.id, wait.questions.map(() => [NO_ONE_CAN_ANSWER]), sessionDirectory(entry.task.sessionID)).catch((error) =>
        log(manager.client, "warn", `answering the question of task ${entry.task.id} for nobody failed: ${(error as Error).message}`),
      );
      return;
    }
    entry.runtime.question = wait;
    personWaitChanged(manager, entry, `question ${JSON.stringify(wait.questions[0]!.question)}`);
    return;
  }
  if (entry.runtime.question?.id !== event.properties.requestID) return;
  entry.runtime.question = undefined;
  personWaitChanged(manager, entry);
}

/**
 * The child started (`what` given) or stopped waiting for a person, a permission or a question: the
 * deadline stands still meanwhile, the published state follows, and a block waiting on the task returns.
 */
export function personWaitChanged(manager: TaskManager, entry: TaskEntry, what?: string): void {
  if (isRunning(entry.task.status)) manager.watchdog.personWaitChanged(entry, what);
  publishTaskState(manager.client, entry.task, entry.runtime.permission, entry.runtime.question);
  if (what) for (const done of [...(entry.runtime.waitWaiters ?? [])]) done();
}

/**
 * The answers for the waiting question from what the parent agent passed: one string per question.
 * An answer that names an option (any case) becomes that option's label; a question that allows no
 * typed answer takes only its options. Returns the answers or a plain error.
 */
export function matchAnswers(wait: QuestionWait, given: string[]): { answers: string[][] } | { error: string } {
  if (given.length !== wait.questions.length) {
    return { error: `the child asked ${wait.questions.length} question${wait.questions.length === 1 ? "" : "s"}; give one answer per question (got ${given.length})` };
  }
  const answers: string[][] = [];
  for (const [i, q] of wait.questions.entries()) {
    const text = given[i]!.trim();
    if (!text) return { error: `answer ${i + 1} is empty` };
    if (text.length > ANSWER_MAX_CHARS) return { error: `answer ${i + 1} is ${text.length} characters long; at most ${ANSWER_MAX_CHARS} are accepted` };
    const option = q.options.find((o) => o.label.toLowerCase() === text.toLowerCase());
    // several options of a multiple-choice question, as "A, B"
    const picked = !option && q.multiple ? text.split(",").map((part) => q.options.find((o) => o.label.toLowerCase() === part.trim().toLowerCase())) : [];
    if (picked.length > 1 && picked.every(Boolean)) {
      answers.push(picked.map((o) => o!.label));
      continue;
    }
    if (!option && q.custom === false) {
      return { error: `question ${i + 1} ("${q.question}") takes only one of its options: ${q.options.map((o) => JSON.stringify(o.label)).join(", ")}` };
    }
    answers.push([option ? option.label : text]);
  }
  return { answers };
}

/**
 * The parent agent answers the question its task's child waits on (background_output's `answer`).
 * Refused, with nothing sent, when no question waits or the answer does not fit it.
 */
export async function answerQuestion(manager: TaskManager, entry: TaskEntry, given: string[]): Promise<{ ok: string } | { error: string }> {
  const { task } = entry;
  const wait = entry.runtime.question;
  if (!wait || !isRunning(task.status)) return { error: QUESTION_MESSAGES.notWaiting(task, manager.waitingFor(task)) };
  const matched = matchAnswers(wait, given);
  if ("error" in matched) return { error: QUESTION_MESSAGES.badAnswer(task, wait, matched.error) };
  try {
    await replyToQuestion(manager.client, wait.id, matched.answers, sessionDirectory(task.sessionID));
  } catch (error) {
    return { error: QUESTION_MESSAGES.sendFailed(task, (error as Error).message) };
  }
  // Answered: no longer waiting, without waiting for the server's question.replied (which then finds nothing).
  if (entry.runtime.question === wait) {
    entry.runtime.question = undefined;
    personWaitChanged(manager, entry);
  }
  return { ok: QUESTION_MESSAGES.answered(task, wait, matched.answers) };
}
