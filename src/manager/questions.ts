// A child's question (OpenCode's `question` tool) waits for a person, like a permission: recorded on
// the task while it waits (list, output, TUI, the watchdog's pause), answered through
// background_output({ answer }) or by anyone through the API. Where nobody can answer (the option
// `questions: "deny"`, by default under `opencode run`) the child is answered at once with a fixed
// text that says so: a reply, not a rejection, since a rejected question ends the child's turn.

import { sessionDirectory } from "../worktree/hub.js";
import { ANSWER_MAX_CHARS } from "../constants.js";
import type { PluginOptions, QuestionPolicy } from "../options.js";
import { QUESTION_MESSAGES } from "../prompts.js";
import type { QuestionWait } from "../task-state.js";
import { answerOfText } from "../child-question.js";
import { type Client, log } from "../host/client.js";
import { replyToQuestion } from "../host/question.js";
import { publishTaskState } from "./publish.js";
import type { TaskEntry } from "./registry.js";
import { type BackgroundTask, isRunning } from "./types.js";
import type { Watchdog } from "./watchdog.js";

/** What a person's wait changes of the manager: the watchdog's deadline, the published state. */
export interface PersonWaitHost {
  readonly client: Client;
  readonly watchdog: Pick<Watchdog, "personWaitChanged">;
}

/** What answering a question needs of the manager. */
export interface QuestionHost extends PersonWaitHost {
  /** the permission the task's child waits for, while it waits */
  waitingFor(task: BackgroundTask): string | undefined;
}

/** What a child's question waits on in this process: "deny" under `opencode run` unless set. */
export function questionPolicy(manager: { readonly options: PluginOptions; readonly oneShotRun: boolean }): QuestionPolicy {
  return manager.options.questions ?? (manager.oneShotRun ? "deny" : "ask");
}

/**
 * The child started (`what` given) or stopped waiting for a person, a permission or a question: the
 * deadline stands still meanwhile, the published state follows, and a block waiting on the task returns.
 */
export function personWaitChanged(manager: PersonWaitHost, entry: TaskEntry, what?: string): void {
  if (isRunning(entry.task.status)) manager.watchdog.personWaitChanged(entry, what);
  publishTaskState(manager.client, entry.task, entry.runtime.permission, entry.runtime.question);
  if (what) for (const done of [...(entry.runtime.waitWaiters ?? [])]) done();
}

/** Nobody can answer (policy "deny"): the child's question is answered at once with the text that says so. */
export async function answerForNobody(client: Client, taskId: string, sessionID: string, requestID: string, answers: string[][]): Promise<void> {
  await replyToQuestion(client, requestID, answers, sessionDirectory(sessionID)).catch((error) =>
    log(client, "warn", `answering the question of task ${taskId} for nobody failed: ${(error as Error).message}`),
  );
}

/**
 * The answers for the waiting question from what the parent agent passed: one string per question.
 * Each answer is read by the rule the TUI uses too (../child-question.ts). Returns the answers or a
 * plain error.
 */
export function matchAnswers(wait: QuestionWait, given: string[]): { answers: string[][] } | { error: string } {
  if (given.length !== wait.questions.length) {
    return {
      error: `the child asked ${wait.questions.length} question${wait.questions.length === 1 ? "" : "s"}; give one answer per question (got ${given.length})`,
    };
  }
  const answers: string[][] = [];
  for (const [i, q] of wait.questions.entries()) {
    const text = given[i]!.trim();
    if (!text) return { error: `answer ${i + 1} is empty` };
    if (text.length > ANSWER_MAX_CHARS) return { error: `answer ${i + 1} is ${text.length} characters long; at most ${ANSWER_MAX_CHARS} are accepted` };
    const typed = answerOfText(q, text);
    if ("onlyOptions" in typed) {
      const which = q.multiple ? 'its options (several as "A, B")' : "one of its options";
      return { error: `question ${i + 1} ("${q.question}") takes only ${which}: ${q.options.map((o) => JSON.stringify(o.label)).join(", ")}` };
    }
    answers.push(typed.answer);
  }
  return { answers };
}

/**
 * The parent agent answers the question its task's child waits on (background_output's `answer`).
 * Refused, with nothing sent, when no question waits or the answer does not fit it.
 */
export async function answerQuestion(manager: QuestionHost, entry: TaskEntry, given: string[]): Promise<{ ok: string } | { error: string }> {
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
