// Stage 3 + formatting: ForkMessages → the <inherited_context> block, within FORK_CHAR_BUDGET.

import { FORK_CHAR_BUDGET } from "../constants.js";
import { cutLongestBodies, cutLongestEntries, planBudget } from "./budget.js";
import { assembleContext, contextLength, formatForkMessage, measureForkMessage } from "./format.js";
import { cloneStats, createEmptyStats } from "./stats.js";
import type { ForkMessage, FormatResult, ProcessingStats } from "./types.js";

/**
 * Measures every message, plans what the budget removes (budget.ts), then formats each message kept,
 * once, and joins them once. Measuring instead of formatting everything first matters on long
 * histories: most messages are removed, and building megabytes of strings only to drop them cost
 * more (allocation, GC) than the rest of the pipeline.
 * Returns the block and a copy of `stats` with finalCount, totalChars, removedMessages, removedTurns
 * and clampedMessages set. Neither argument is modified.
 */
export function formatMessagesAsContext(messages: readonly ForkMessage[], stats?: ProcessingStats): FormatResult {
  const out = stats ? cloneStats(stats) : createEmptyStats(messages.length);
  const plan = planBudget(messages, messages.map(measureForkMessage), FORK_CHAR_BUDGET);
  const clamped = new Set<number>();

  let kept = messages;
  if (plan.total > FORK_CHAR_BUDGET) {
    const bodies = cutLongestBodies(messages, plan.removed, plan.total - FORK_CHAR_BUDGET);
    kept = bodies.messages;
    for (const i of bodies.cut) clamped.add(i);
  }

  const formatted = kept.map((message, i) => (plan.removed[i] ? "" : formatForkMessage(message)));
  // The guarantee rests on the real strings, not on the plan: whatever is still over is cut here.
  const markerChars = plan.markers.reduce((sum, marker) => sum + marker.text.length, 0);
  let chars = markerChars;
  formatted.forEach((text, i) => {
    if (!plan.removed[i]) chars += text.length;
  });
  const total = contextLength(chars, messages.length - plan.removedMessages + plan.markers.length);
  if (total > FORK_CHAR_BUDGET) for (const i of cutLongestEntries(formatted, plan.removed, total - FORK_CHAR_BUDGET)) clamped.add(i);

  const entries: string[] = [];
  let marker = 0;
  formatted.forEach((text, i) => {
    if (!plan.removed[i]) entries.push(text);
    while (plan.markers[marker]?.afterIndex === i) entries.push(plan.markers[marker++]!.text);
  });
  const text = assembleContext(entries);

  out.finalCount = messages.length - plan.removedMessages;
  out.removedMessages = plan.removedMessages;
  out.removedTurns = plan.removedTurns;
  out.clampedMessages = clamped.size;
  out.totalChars = text.length;
  return { text, stats: out };
}
