// Where the model sees a parent's notices next to the user's own words. Pure: it reorders the array
// OpenCode hands `experimental.chat.messages.transform` for one model request, in place, in linear
// time; the stored session is never changed.
//
// The plugin's messages to a parent (a task's notice, the budget's notice, and the prompt that wakes
// it) go out only while the parent is idle (notices.ts, parent/busy.ts). Two races are out of the
// plugin's reach. OpenCode stamps a user message's time when its prompt arrives, then spends 15–25 ms
// (on a fresh server) resolving its parts before it stores or announces anything, and it orders a
// conversation by that time: a notice stored in that gap sorts after the user's words, inside the
// turn that just began. And a person may type the moment the parent went idle, as the wake is sent:
// OpenCode answers both in one turn, whose newest user message may be the wake. Either way the model
// would answer the plugin instead of the person.
//
// THE RULE: within every run of consecutive user messages, the plugin's messages come first, in their
// own order, then the other messages in theirs. The same history gives the same order in every
// request, so the prompt cache's prefix stays the same from one step to the next, and a native fork
// (whose requests start with its parent's) sees the parent's order.

import type { SessionMessage } from "../../fork/types.js";
import { BUDGET_NOTICE_PREFIX } from "../spend/budget.txt.js";
import { TASK_ID_PREFIX } from "../task/ids.js";
import { WAKE_START } from "./notices.txt.js";

/** What the plugin's messages to a parent start with: a task's notice (notices.txt.ts `noticePrefix`, without a particular id), the budget's notice, the wake. */
const PLUGIN_STARTS = [`[background task ${TASK_ID_PREFIX}`, BUDGET_NOTICE_PREFIX, WAKE_START] as const;

/** A user message the plugin stored (a notice or the wake): one text part, in the plugin's own words. */
export function isNoticeMessage(message: SessionMessage): boolean {
  if (message?.info?.role !== "user") return false;
  const parts = Array.isArray(message.parts) ? message.parts : [];
  if (parts.length !== 1) return false;
  const part = parts[0] as { type?: unknown; text?: unknown } | undefined;
  if (part?.type !== "text" || typeof part.text !== "string") return false;
  const text = part.text;
  return PLUGIN_STARTS.some((start) => text.startsWith(start));
}

/**
 * Moves the notices of every run of user messages before the run's other messages (stable).
 * Returns how many notices moved (0: the array was left as it was).
 */
export function noticesBeforeUserWords(messages: SessionMessage[]): number {
  let moved = 0;
  let start = 0;
  while (start < messages.length) {
    if (messages[start]?.info?.role !== "user") {
      start += 1;
      continue;
    }
    let end = start;
    while (end < messages.length && messages[end]?.info?.role === "user") end += 1;
    moved += partitionRun(messages, start, end);
    start = end;
  }
  return moved;
}

/** Stable partition of messages[start, end): notices first. Touches the array only when needed. */
function partitionRun(messages: SessionMessage[], start: number, end: number): number {
  let firstOther = -1;
  let late = 0;
  for (let i = start; i < end; i++) {
    if (!isNoticeMessage(messages[i]!)) {
      if (firstOther < 0) firstOther = i;
    } else if (firstOther >= 0) late += 1;
  }
  if (late === 0) return 0;
  const run = messages.slice(start, end);
  let at = start;
  for (const m of run) if (isNoticeMessage(m)) messages[at++] = m;
  for (const m of run) if (!isNoticeMessage(m)) messages[at++] = m;
  return late;
}
