// A child's question (OpenCode's `question` tool), the whole way: here, event-decide.ts `onQuestion` and the step's rows:
//
// 1. Asked. The child's `question.asked` event comes to the event hook (event-decide.ts `onQuestion`
//    reads it, by the rule of ../child-waits.ts, the TUI's too). Where a person can answer (the option `questions`, "ask" by default,
//    "deny" under `opencode run`), it becomes the step's input `question` (task/step.ts): the wait is
//    kept in the task's runtime, and the effects follow: the watchdog's deadline stands still, a
//    `background_output({ block })` waiting for a person returns, and the state is published in the
//    child's metadata. From there the question is surfaced: background_list and background_output
//    name it (the manager's questionOf), the parent's notice and wake do not (it has not ended), and
//    the TUI marks the task and offers "Answer question" in /tasks (tui/meta.ts reads the metadata).
//    Where nobody can answer ("deny"), it is answered at once with a text that says so (the step's
//    input `unanswerable`): a reply, not a rejection, since a rejected question ends the child's turn.
// 2. Answered. By the parent agent: `background_output({ task_id, answer })` comes to
//    `answerQuestion` below, which checks the answers against the question (one rule for typed text,
//    ../child-waits.ts, the TUI's too), replies through the server (../host/question.ts) and clears
//    the wait at once. By a person: the TUI's dialog (tui/question-dialog.ts) replies through the
//    server itself. Either way the server's `question.replied` (or `question.rejected`) event clears
//    the wait if it still stands (`onQuestion`), and the child goes on.

import { sessionDirectory } from "../../worktree/hub.js";
import { ANSWER_MAX_CHARS } from "../../constants.js";
import type { PluginOptions, QuestionPolicy } from "../../options.js";
import { QUESTION_MESSAGES } from "../../prompts.js";
import type { QuestionWait } from "../../task-state.js";
import { answerOfText } from "../../child-waits.js";
import { type Client, log } from "../../host/client.js";
import { replyToQuestion } from "../../host/question.js";
import type { TaskEntry } from "../task/registry.js";
import { type BackgroundTask, isWorking } from "../../task-record.js";
import type { RequestsHost } from "./host.js";

/** What a child's question waits on in this process: "deny" under `opencode run` unless set. */
export function questionPolicy(manager: { readonly options: PluginOptions; readonly oneShotRun: boolean }): QuestionPolicy {
  return manager.options.questions ?? (manager.oneShotRun ? "deny" : "ask");
}

/** Nobody can answer (policy "deny"): the child's question is answered at once with the text that says so. */
export async function answerForNobody(client: Client, task: BackgroundTask, requestID: string, answers: string[][]): Promise<void> {
  await replyToQuestion(client, requestID, answers, sessionDirectory(task.sessionID)).catch((error) =>
    log(client, "warn", `answering the question of task ${task.id} for nobody failed: ${(error as Error).message}`),
  );
}

/**
 * The answers for the waiting question from what the parent agent passed: one string per question.
 * Each answer is read by the rule the TUI uses too (../child-waits.ts). Returns the answers or a
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
export async function answerQuestion(manager: RequestsHost, entry: TaskEntry, given: string[]): Promise<{ ok: string } | { error: string }> {
  const { task } = entry;
  const wait = entry.runtime.question;
  if (!wait || !isWorking(task.status)) return { error: QUESTION_MESSAGES.notWaiting(task, manager.waitingFor(task)) };
  const matched = matchAnswers(wait, given);
  if ("error" in matched) return { error: QUESTION_MESSAGES.badAnswer(task, wait, matched.error) };
  try {
    // (a remote task's child waits there: answered in its instance there)
    if (task.remote) await manager.remote.answerQuestion(entry, wait.id, matched.answers);
    else await replyToQuestion(manager.client, wait.id, matched.answers, sessionDirectory(task.sessionID));
  } catch (error) {
    return { error: QUESTION_MESSAGES.sendFailed(task, (error as Error).message) };
  }
  // Answered: no longer waiting, without waiting for the server's question.replied (which then finds nothing).
  if (entry.runtime.question === wait) await manager.dispatch(entry, { kind: "question", question: undefined });
  return { ok: QUESTION_MESSAGES.answered(task, wait, matched.answers) };
}
