// The preamble sent before the <inherited_context> block (fork-context spec, "Preamble"). Part of the pure pipeline:
// it describes what the pipeline did, so it lives next to it and is bounded like the block itself.

import {
  BACKGROUND_TASK_TOOL,
  FORK_CHAR_BUDGET,
  FORK_PREAMBLE_FILE_LIMIT,
  FORK_PREAMBLE_LIST_CHARS,
  FORK_PREAMBLE_PATH_LIMIT,
  FORK_TIER2_LIMIT,
  FORK_TIER3_LIMIT,
} from "./constants.js";
import { neutraliseContextTags } from "./format.js";
import { safeHeadEnd, safeTailStart } from "./truncation.js";
import type { ProcessingStats } from "./types.js";

const PATH_ELISION = "…";

/**
 * A file path as the preamble prints it: at most FORK_PREAMBLE_PATH_LIMIT chars (the middle is cut,
 * so the root and the file name stay; surrogate-safe), control characters (a newline could start a
 * line of its own) shown as a blank, and context tags neutralised as in the block. A path is data
 * from the history, never a line of the preamble.
 */
export function previewPath(path: string): string {
  let shown = path;
  if (shown.length > FORK_PREAMBLE_PATH_LIMIT) {
    const keep = FORK_PREAMBLE_PATH_LIMIT - PATH_ELISION.length;
    const head = safeHeadEnd(shown, Math.ceil(keep / 2));
    const tail = safeTailStart(shown, shown.length - Math.floor(keep / 2));
    shown = shown.slice(0, head) + PATH_ELISION + shown.slice(tail);
  }
  let clean = "";
  let from = 0;
  for (let i = 0; i < shown.length; i++) {
    const code = shown.charCodeAt(i);
    if (code < 0x20 || code === 0x7f || code === 0x2028 || code === 0x2029) {
      clean += `${shown.slice(from, i)} `;
      from = i + 1;
    }
  }
  clean += shown.slice(from);
  return neutraliseContextTags(clean);
}

/**
 * "a, b, c" or "a, b, c and 4 more": at most FORK_PREAMBLE_FILE_LIMIT names and about
 * FORK_PREAMBLE_LIST_CHARS chars (the first name is always shown), whatever the history holds.
 */
export function fileList(files: readonly string[]): string {
  const shown: string[] = [];
  let chars = 0;
  for (const file of files) {
    if (shown.length >= FORK_PREAMBLE_FILE_LIMIT) break;
    const name = previewPath(typeof file === "string" ? file : String(file));
    if (shown.length > 0 && chars + 2 + name.length > FORK_PREAMBLE_LIST_CHARS) break;
    chars += (shown.length > 0 ? 2 : 0) + name.length;
    shown.push(name);
  }
  const more = files.length - shown.length;
  return more > 0 ? `${shown.join(", ")} and ${more} more` : shown.join(", ");
}

/**
 * The preamble: what the pipeline did to the parent's history, so the child knows when to re-read
 * instead of trusting a cut result, plus the files the parent touched and the reminder that the
 * child must do the task itself. Bounded: about 5,000 chars whatever the history.
 */
export function buildForkPreamble(stats: ProcessingStats): string {
  const { tier1, tier2, tier3 } = stats.tierDistribution;
  const lines = [
    "You are working with forked context from a parent agent session.",
    `You are the forked child of a ${BACKGROUND_TASK_TOOL} call: do the task yourself. Do not delegate it again and do not start background tasks.`,
    "Context processing applied:",
    `- ${stats.compactionDetected ? "Compaction summary included (messages before compaction removed)" : "No compaction detected"}`,
    // the user's answers (FORK_USER_ANSWER_TOOLS) are kept whole: counted as full, never as cut
    `- Tool results: ${tier1 + (stats.userAnswers ?? 0)} full, ${tier2} truncated to ${FORK_TIER2_LIMIT} chars, ${tier3} truncated to ${FORK_TIER3_LIMIT} chars`,
    `- ${stats.removedMessages > 0 ? `${stats.removedMessages} oldest messages removed to fit ${FORK_CHAR_BUDGET} char budget` : "All messages preserved"}`,
  ];
  if (stats.clampedMessages > 0) lines.push(`- ${stats.clampedMessages} messages cut in the middle to fit ${FORK_CHAR_BUDGET} char budget`);
  if (stats.supersededResults > 0) {
    lines.push(`- ${stats.supersededResults} results of calls repeated later replaced by a pointer to the newer result`);
  }
  if (stats.clearedResults > 0) lines.push(`- ${stats.clearedResults} old tool results were already cleared in the parent session`);
  if (stats.malformedParts > 0) lines.push(`- ${stats.malformedParts} malformed parts of the stored history shown as a marker or left out`);
  if (stats.filesRead.length > 0) lines.push(`Files the parent read: ${fileList(stats.filesRead)}`);
  if (stats.filesModified.length > 0) lines.push(`Files the parent modified: ${fileList(stats.filesModified)}`);
  lines.push("If you need complete file contents or detailed results, re-read the files directly.");
  return lines.join("\n");
}
