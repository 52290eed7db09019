// The fork-context pipeline: the parent's `session.messages()` history → the text a forked child
// inherits. Pure and deterministic (no I/O, no clock): the same history always gives the same text.
//
//   Stage 1  compaction.ts  keep the window the parent model sees after its latest completed compaction
//   Stage 2  process.ts     one backward pass: dedup (dedup.ts), tiers and cuts (tools.ts, truncation.ts),
//                           files read/modified (files.ts)
//   Stage 3  context.ts     fit the block into FORK_CHAR_BUDGET, oldest turns first (budget.ts), then
//                           format what is kept (format.ts)

import { buildForkPreamble } from "../prompts.js";
import { formatMessagesAsContext } from "./context.js";
import { processMessagesForFork } from "./process.js";
import type { ForkContext, ForkOptions, SessionMessage } from "./types.js";

/** Everything at once: the context block, the preamble describing it, and the stats. */
export function buildForkContext(messages: readonly SessionMessage[], options: ForkOptions = {}): ForkContext {
  const processed = processMessagesForFork(messages, options);
  const { text, stats } = formatMessagesAsContext(processed.messages, processed.stats);
  return { text, preamble: buildForkPreamble(stats), stats };
}

export { buildForkPreamble } from "../prompts.js";
export { processMessagesForFork, describeFilePart, COMPACTION_REQUEST_TEXT, STRAY_COMPACTION_TEXT } from "./process.js";
export { formatMessagesAsContext } from "./context.js";
export { findCompactionBoundary, selectContextWindow, historyBeforeWindow, isCompletedSummary, type WindowMessage } from "./compaction.js";
export {
  getToolResultTier,
  shouldUseHeadTail,
  truncateWithStrategy,
  toolNameWantsHeadTail,
  containsErrorPattern,
  resultLimitForTier,
  paramsLimitForTier,
  headTailSeparator,
  headOnlySeparator,
} from "./truncation.js";
export { canonicalJson, canonicalInput, hasSortedKeys, CallRegistry, SUPERSEDED_RESULT } from "./dedup.js";
export { ToolCallDecider, isClearedResult, resultTextOf, INTERRUPTED_RESULT, type ToolDecision } from "./tools.js";
export { FileActivityCollector, pathsFromPatchText, type FileActivity } from "./files.js";
export { formatForkMessage, measureForkMessage, neutraliseContextTags, CONTEXT_OPEN, CONTEXT_CLOSE } from "./format.js";
export {
  planBudget,
  cutLongestBodies,
  cutLongestEntries,
  waterFillCap,
  turnStarts,
  pinnedFlags,
  findTaskMessageIndex,
  type BudgetPlan,
} from "./budget.js";
export { createEmptyStats } from "./stats.js";
export type * from "./types.js";
