import type { Message } from "../host/types.js";

/** One entry of `session.messages()`: exactly what the server returns, oldest first. */
export type { SessionMessage } from "../host/types.js";

export type Tier = 1 | 2 | 3;

export interface ForkOptions {
  /** callID of the in-flight background_task call that spawns this fork; left out of the context. */
  excludeCallID?: string;
  /**
   * More tools whose result is the user's own words (exact names), next to FORK_USER_ANSWER_TOOLS
   * (constants.ts): their results are kept whole like a user message. The plugin option `userAnswerTools`.
   */
  userAnswerTools?: readonly string[];
}

/** What the pipeline did, counted (the `stats` of openspec/specs/fork-context/spec.md); the preamble reports them. */
export interface ProcessingStats {
  originalCount: number;
  finalCount: number;
  totalChars: number;
  removedMessages: number;
  compactionDetected: boolean;
  compactionSliceIndex: number;
  truncatedResults: number;
  tierDistribution: { tier1: number; tier2: number; tier3: number };
  headTailApplied: number;
  /** Older results of an identical call (same tool, same input) replaced by a pointer */
  supersededResults: number;
  /** Tool results the parent model saw as "[Old tool result content cleared]" */
  clearedResults: number;
  /** Pending/running calls shown as interrupted */
  interruptedCalls: number;
  /** Reasoning, step, snapshot, patch, retry parts left out */
  omittedParts: number;
  /** Turns removed by the character budget (removedMessages counts their messages) */
  removedTurns: number;
  /** Messages whose text had to be cut because a single pinned/newest turn exceeded the budget */
  clampedMessages: number;
  /**
   * Parts or fields of the wrong type in the stored history (a text that is not a string, a
   * part that is not an object, parts that are not an array, a tool input nested deeper than
   * FORK_MAX_INPUT_DEPTH): shown as a one-line marker or left out instead of crashing the fork
   */
  malformedParts: number;
  /**
   * Results of a tool that carries the user's own words (FORK_USER_ANSWER_TOOLS, the option
   * userAnswerTools), kept whole; not in tierDistribution, counted as "full" by the preamble
   */
  userAnswers: number;
  /** Files the parent read / modified (from read, edit, write, patch inputs), in first-seen order */
  filesRead: string[];
  filesModified: string[];
}

/** A part after Stage 2: everything decided, ready to print. */
export type ForkPart =
  | { kind: "text"; text: string }
  | { kind: "file"; text: string }
  /** A one-line marker the parent model saw in some form (subtask, agent, compaction request) */
  | { kind: "note"; text: string }
  | {
      kind: "tool";
      tool: string;
      callID: string;
      /** input JSON, already cut to the tier's params limit */
      input: string;
      /** what the child sees as the result: output, error, a cleared/interrupted/superseded marker */
      result: string;
      status: "completed" | "error" | "interrupted" | "cleared" | "superseded";
      tier?: Tier;
      /** the result is the user's own words (FORK_USER_ANSWER_TOOLS): kept whole, its message protected */
      userAnswer?: true;
    };

/** A message after Stages 1–2. `role` and `label` drive the formatting; `info` is the original. */
export interface ForkMessage {
  info: Message;
  role: "user" | "assistant";
  /** compaction marker message, compaction summary, or an ordinary message */
  kind: "compaction" | "summary" | "message";
  parts: ForkPart[];
}

export interface ProcessResult {
  messages: ForkMessage[];
  stats: ProcessingStats;
}

export interface FormatResult {
  text: string;
  stats: ProcessingStats;
}

export interface ForkContext {
  text: string;
  preamble: string;
  stats: ProcessingStats;
}

/**
 * Where the latest completed compaction sits in the ORIGINAL message array.
 * `index` is the compaction user message (-1 when there is none, as `compactionSliceIndex` counts it),
 * `summaryIndex` the summary answering it, `tailStartIndex` the first retained tail message
 * (`tail_start_id`), or -1 when no tail is retained.
 */
export interface CompactionBoundary {
  index: number;
  summaryIndex: number;
  tailStartIndex: number;
}
