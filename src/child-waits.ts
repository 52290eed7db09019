// What a child waits on, a permission or a question (OpenCode's `question` tool), as both halves read
// it, and how a question is answered. Pure.
//
// Reading: `permission.asked` and `question.asked` properties (or the server half's published copy of
// them) become a PermissionWait or a bounded, cleaned QuestionWait: the server half records it on the
// task (manager/event-decide.ts), the TUI half marks the task with it (tui/model.ts, tui/meta.ts).
//
// Answering: the one rule for a typed answer, used by the parent agent's `background_output({
// answer })` (manager/questions.ts) and the TUI's /tasks "Answer question" (tui/question-dialog.ts):
// - Text naming an option (in any case) is that option's label.
// - On a question that takes several options, "A, B" (each part naming an option) picks those options.
// - Other text is a typed answer, refused for a question that takes only its options.

import { QUESTION_HEADER_MAX_CHARS, QUESTION_LABEL_MAX_CHARS, QUESTION_MAX_CHARS, QUESTION_MAX_OPTIONS, QUESTION_MAX_QUESTIONS } from "./constants.js";
import type { AskedQuestion, PermissionWait, QuestionWait } from "./task-state.js";
import { oneLine } from "./text.js";

export type TypedAnswer = { answer: string[] } | { onlyOptions: true };

/** The answer `text` gives to `question` (text already trimmed and non-empty). */
export function answerOfText(question: AskedQuestion, text: string): TypedAnswer {
  const named = (part: string) => question.options.find((o) => o.label.toLowerCase() === part.trim().toLowerCase());
  const option = named(text);
  if (option) return { answer: [option.label] };
  if (question.multiple) {
    const picked = pickSeveral(text.split(","), named);
    if (picked && picked.length > 1) return { answer: [...new Set(picked)] };
  }
  if (question.custom === false) return { onlyOptions: true };
  return { answer: [text] };
}

/**
 * "A, B" as options' labels, left to right, the longest label first at each place (a label may hold
 * a comma itself); undefined when some part names no option.
 */
function pickSeveral(parts: string[], named: (part: string) => { label: string } | undefined): string[] | undefined {
  const labels: string[] = [];
  for (let i = 0; i < parts.length;) {
    let j = parts.length;
    while (j > i && !named(parts.slice(i, j).join(","))) j--;
    if (j === i) return undefined;
    labels.push(named(parts.slice(i, j).join(","))!.label);
    i = j;
  }
  return labels;
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
      // (verbatim: the answer sends the label back, and the child reads its own words; shown cleaned, tui/question-dialog.ts)
      const label = typeof option.label === "string" && option.label.trim() ? Array.from(option.label).slice(0, QUESTION_LABEL_MAX_CHARS).join("") : "";
      if (!label) return [];
      const description = typeof option.description === "string" ? oneLine(option.description, QUESTION_MAX_CHARS).text : "";
      return [description ? { label, description } : { label }];
    });
    const header = typeof q.header === "string" ? oneLine(q.header, QUESTION_HEADER_MAX_CHARS).text : "";
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

/**
 * A permission request as a PermissionWait: OpenCode's `permission.asked` properties (the server half)
 * or the published wait (the TUI) are read by this one rule. Undefined without an id (it could not be
 * answered) or a permission; patterns that are not strings are left out.
 */
export function parsePermission(v: unknown): PermissionWait | undefined {
  if (!v || typeof v !== "object") return undefined;
  const o = v as Record<string, unknown>;
  const id = typeof o.id === "string" && o.id.length > 0 ? o.id : undefined;
  const permission = typeof o.permission === "string" && o.permission.length > 0 ? o.permission : undefined;
  if (!id || !permission) return undefined;
  const patterns = Array.isArray(o.patterns) ? o.patterns.filter((p): p is string => typeof p === "string") : [];
  return { id, permission, patterns };
}
