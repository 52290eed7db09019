// The fork-context pipeline: the parent's `session.messages()` history → the text a forked child
// inherits. Pure and deterministic (no I/O, no clock): the same history always gives the same text.
//
//   Stage 1  compaction.ts  keep the window the parent model sees after its latest completed compaction
//   Stage 2  process.ts     one backward pass: dedup (dedup.ts; nested inputs walked once, input.ts),
//                           tiers and cuts (tools.ts, truncation.ts), files read/modified (files.ts),
//                           and each message's formatted length (format.ts) while its strings are hot
//   Stage 3  context.ts     fit the block into FORK_CHAR_BUDGET (budget.ts) from those lengths, then
//                           format what is kept (format.ts)
//   preamble.ts             what was done, for the child, bounded
//
// This is the public `opencode-offshoot/fork` entry: the pipeline and its types only. Internals are
// imported from their own modules.

import { formatCounted, formatMeasured } from "./context.js";
import { buildForkPreamble } from "./preamble.js";
import { processAndMeasure } from "./process.js";
import type { ForkContext, ForkOptions, SessionMessage } from "./types.js";

/**
 * Everything at once: the context block (at most FORK_CHAR_BUDGET chars, whatever the history), the
 * preamble describing it, and the stats. Malformed parts are shown as markers and counted, never
 * thrown; only a `messages` that is not an array is refused, with a TypeError saying so.
 */
export function buildForkContext(messages: readonly SessionMessage[], options: ForkOptions = {}): ForkContext {
  // Read from the newest end: past a budget's worth of turns, messages are only counted (process.ts).
  const newest = processAndMeasure(messages, options, true);
  let formatted =
    newest.suffixFrom === undefined
      ? formatMeasured(newest.result.messages, newest.result.stats, newest.lengths)
      : formatCounted(newest.result.messages, newest.result.stats, newest.lengths, newest.suffixFrom);
  if (!formatted) {
    // The premise failed (step 0 would cut differently, or cut the turns kept below the budget): read it all.
    const full = processAndMeasure(messages, options);
    formatted = formatMeasured(full.result.messages, full.result.stats, full.lengths);
  }
  return { text: formatted.text, preamble: buildForkPreamble(formatted.stats), stats: formatted.stats };
}

export { buildForkPreamble } from "./preamble.js";
export { processMessagesForFork } from "./process.js";
export { formatMessagesAsContext } from "./context.js";
export type * from "./types.js";
