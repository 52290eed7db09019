/**
 * "Answer question" of the /tasks dialog: the child's question(s), one after the other. Each offers
 * its options, a typed answer (a prompt dialog) when the question allows one or takes several
 * options, and Reject; the answers go out together with `question.reply` (a rejection with
 * `question.reject`). Typed text is read by the rule background_output uses too
 * (../child-waits.ts): an option's name is that option, "A, B" picks several.
 */
import { rejectQuestion, replyQuestion } from "../host/tui-client.js";
import { safeAsync, type Api, type SdkResult } from "./host.js";
import { instanceOf, type TaskStore } from "./model.js";
import { clip } from "./format.js";
import { answerOfText } from "../child-waits.js";
import { oneLine } from "../text.js";

type Option = { title: string; value: string; description?: string; onSelect?: () => void };

export interface QuestionDialogDeps {
  api: Pick<Api, "client" | "ui">;
  store: TaskStore;
  select(props: { title: string; options: () => Option[] }): void;
  show(render: () => unknown): void;
  toast(variant: "info" | "success" | "warning" | "error", message: string): void;
  /** back to the task's actions */
  back(sessionID: string): void;
  /** after the answer went out (or failed): the list */
  done(): void;
}

export function createQuestionDialog(deps: QuestionDialogDeps) {
  const { api, store, toast } = deps;

  function open(sessionID: string) {
    const t = store.task(sessionID);
    const wait = t?.question;
    if (!t || !wait || wait.questions.length === 0) return deps.back(sessionID);
    const total = wait.questions.length;
    const description = t.meta.description;

    const ask = (i: number, answers: string[][]) => {
      const item = wait.questions[i]!;
      const next = (answer: string[]) => {
        const all = [...answers, answer];
        if (all.length < total) ask(i + 1, all);
        else void send(all);
      };
      const typeAnswer = () =>
        deps.show(() =>
          api.ui.DialogPrompt({
            title: clip(item.question, 70),
            placeholder: item.custom === false ? "A, B" : "Your answer",
            onConfirm: (value: string) => {
              const text = value.trim();
              const typed = text ? answerOfText(item, text) : undefined;
              if (typed && "answer" in typed) return next(typed.answer);
              if (typed) toast("warning", `This question takes only its options: ${clip(item.options.map((o) => o.label).join(", "), 60)}.`);
              ask(i, answers);
            },
            onCancel: () => ask(i, answers),
          }),
        );
      deps.select({
        title: clip(`"${description}" asks${total > 1 ? ` (${i + 1}/${total})` : ""}: ${item.question}`, 70),
        options: () => [
          // shown on one line, cut; sent as the child wrote it
          ...item.options.map((o) => ({
            title: clip(oneLine(o.label, 200).text, 80),
            value: `option:${o.label}`,
            description: o.description,
            onSelect: () => next([o.label]),
          })),
          ...(item.custom !== false
            ? [{ title: "Type your own answer…", value: "custom", description: item.multiple ? 'or several options: "A, B"' : undefined, onSelect: typeAnswer }]
            : item.multiple
              ? [{ title: "Type several options…", value: "custom", description: '"A, B"', onSelect: typeAnswer }]
              : []),
          { title: "Reject", value: "reject", description: "the child gets no answer and its turn ends", onSelect: () => void reject() },
          { title: "← Back", value: "back", onSelect: () => deps.back(sessionID) },
        ],
      });
    };

    const send = async (answers: string[][]) => {
      const res = await safeAsync(async () => (await replyQuestion(api.client, wait.id, answers, instanceOf(t))) as SdkResult<unknown>, {
        error: "threw",
      } as SdkResult<unknown>);
      if (res.error) toast("error", `Could not answer the question of "${description}".`);
      else {
        store.questionAnswered({ requestID: wait.id, sessionID });
        toast("success", `Answered for "${description}": ${clip(answers.map((a) => a.join(", ")).join("; "), 60)}`);
      }
      deps.done();
    };

    const reject = async () => {
      const res = await safeAsync(async () => (await rejectQuestion(api.client, wait.id, instanceOf(t))) as SdkResult<unknown>, {
        error: "threw",
      } as SdkResult<unknown>);
      if (res.error) toast("error", `Could not reject the question of "${description}".`);
      else {
        store.questionAnswered({ requestID: wait.id, sessionID });
        toast("info", `Rejected the question of "${description}".`);
      }
      deps.done();
    };

    ask(0, []);
  }

  return { open };
}
