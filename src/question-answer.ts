// The one rule for a typed answer to a child's question, used by both halves: the parent agent's
// `background_output({ answer })` (manager/questions.ts) and the TUI's /tasks "Answer question"
// (tui/question-dialog.ts). Pure and import-free but for the contract's types.
//
// - Text naming an option (in any case) is that option's label.
// - On a question that takes several options, "A, B" (each part naming an option) picks those options.
// - Other text is a typed answer, refused for a question that takes only its options.

import type { AskedQuestion } from "./task-state.js";

export type TypedAnswer = { answer: string[] } | { onlyOptions: true };

/** The answer `text` gives to `question` (text already trimmed and non-empty). */
export function answerOfText(question: AskedQuestion, text: string): TypedAnswer {
  const named = (part: string) => question.options.find((o) => o.label.toLowerCase() === part.trim().toLowerCase());
  const option = named(text);
  if (option) return { answer: [option.label] };
  if (question.multiple) {
    const picked = text.split(",").map(named);
    if (picked.length > 1 && picked.every(Boolean)) return { answer: [...new Set(picked.map((o) => o!.label))] };
  }
  if (question.custom === false) return { onlyOptions: true };
  return { answer: [text] };
}
