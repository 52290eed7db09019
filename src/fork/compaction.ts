// Stage 1: the compaction boundary. `session.messages()` returns the whole history, but after a
// compaction the parent model only sees the compaction request, its summary, the retained tail and
// everything after the summary. The child should inherit exactly that window, in that order.

import type { CompactionPart, Message, Part } from "../host/types.js";
import type { CompactionBoundary, SessionMessage } from "./types.js";

export const NO_COMPACTION: CompactionBoundary = Object.freeze({ index: -1, summaryIndex: -1, tailStartIndex: -1 });

/** A message of the window the parent model sees, and what role it plays there. Entries without
 * `info` (not a message) are never part of a window. */
export interface WindowMessage {
  message: SessionMessage;
  /** index in the original history */
  index: number;
  kind: "compaction" | "summary" | "message";
}

/** An entry that can be placed in a conversation: an object whose `info` is an object. */
export function isMessageEntry(message: unknown): message is SessionMessage {
  if (message === null || typeof message !== "object") return false;
  const info = (message as { info?: unknown }).info;
  return info !== null && typeof info === "object";
}

/** A summary only counts once it finished without error: a failed one never replaced the history. */
export function isCompletedSummary(info: Message | undefined): boolean {
  return info?.role === "assistant" && info.summary === true && Boolean(info.finish) && !info.error;
}

export function findCompactionPart(parts: unknown): CompactionPart | undefined {
  if (!Array.isArray(parts)) return undefined; // malformed `parts` ({}, null): no compaction there
  for (const part of parts as unknown[]) {
    if (part !== null && typeof part === "object" && (part as Part).type === "compaction") return part as CompactionPart;
  }
  return undefined;
}

function indexById(messages: readonly SessionMessage[]): Map<unknown, number> {
  const index = new Map<unknown, number>();
  messages.forEach((message, i) => {
    const id = message?.info?.id;
    if (id !== undefined && !index.has(id)) index.set(id, i);
  });
  return index;
}

/** Index of the first message with this id, if it is below `end`; -1 otherwise (and for no id). */
function firstIndexBelow(messages: readonly SessionMessage[], id: unknown, end: number): number {
  if (id === undefined) return -1;
  for (let i = 0; i < end; i++) if (messages[i]?.info?.id === id) return i;
  return -1;
}

/**
 * Where the parents named by summaries are, asked with an `end` that only decreases (the summaries
 * are met newest first). The first parent is found by a forward scan that stops at it (a parent
 * named by thousands of summaries, usually near the start, costs a few comparisons, and its answer
 * is kept); from the second parent on, an index of every id is built, once, so any number of
 * parents stays linear.
 */
class ParentLookup {
  private firstId: unknown;
  private firstIndex = -1;
  private index: Map<unknown, number> | undefined;

  constructor(private readonly messages: readonly SessionMessage[]) {}

  /** Index of the first message with this id if it is below `end`, else -1. */
  indexBelow(id: unknown, end: number): number {
    if (this.index === undefined) {
      if (this.firstId === undefined) {
        this.firstId = id;
        this.firstIndex = firstIndexBelow(this.messages, id, end);
      }
      // ends only decrease: the first index below an earlier end answers for this one too
      if (id === this.firstId) return this.firstIndex >= 0 && this.firstIndex < end ? this.firstIndex : -1;
      this.index = indexById(this.messages);
    }
    const found = id === undefined ? undefined : this.index.get(id);
    return found !== undefined && found < end ? found : -1;
  }
}

/**
 * Finds the latest COMPLETED compaction: scanning from the end, the first assistant message with
 * `summary === true`, a `finish` and no `error` whose parent is a user message holding a compaction
 * part. A later failed or unfinished summary is skipped, so the previous completed one applies.
 * Returns indices into `messages`; `index` is -1 when there is no completed compaction.
 */
export function findCompactionBoundary(messages: readonly SessionMessage[]): CompactionBoundary {
  let parents: ParentLookup | undefined; // made lazily: histories without summaries never pay for it
  // Each parent is searched for its compaction part once, however many summaries name it: a corrupted
  // history (N completed summaries of one parent with N parts) stays linear.
  let checked: Map<number, CompactionPart | null> | undefined;
  for (let i = messages.length - 1; i >= 0; i--) {
    const info = messages[i]?.info;
    if (!info || info.role !== "assistant" || !isCompletedSummary(info)) continue;
    parents ??= new ParentLookup(messages);
    const parentIndex = parents.indexBelow(info.parentID, i);
    if (parentIndex < 0) continue;
    checked ??= new Map();
    let compaction = checked.get(parentIndex);
    if (compaction === undefined) {
      const parent = messages[parentIndex];
      compaction = (parent?.info?.role === "user" ? findCompactionPart(parent.parts) : undefined) ?? null;
      checked.set(parentIndex, compaction);
    }
    if (!compaction) continue;
    const tailStartId = compaction.tail_start_id;
    // A tail can only come from before the compaction request; anything else is not a retained tail.
    const tailIndex = typeof tailStartId === "string" ? firstIndexBelow(messages, tailStartId, parentIndex) : -1;
    return { index: parentIndex, summaryIndex: i, tailStartIndex: tailIndex };
  }
  return NO_COMPACTION;
}

/** A run of consecutive messages of the window, all of one kind: [from, to). */
export interface WindowRange {
  from: number;
  to: number;
  kind: WindowMessage["kind"];
}

/**
 * The window the parent model still sees, as at most five runs of the original array, in the order
 * it sees them: the compaction request, the summary, the retained tail (tail_start_id up to the
 * request), then everything after the summary. Messages stored between the request and its summary
 * (rare) stay between them, as OpenCode keeps them. Entries that are not messages (see
 * isMessageEntry) are skipped by whoever walks the runs. No object per message.
 */
export function windowRanges(messages: readonly SessionMessage[], boundary: CompactionBoundary): WindowRange[] {
  if (boundary.index < 0) return [{ from: 0, to: messages.length, kind: "message" }];
  const ranges: WindowRange[] = [
    { from: boundary.index, to: boundary.index + 1, kind: "compaction" },
    { from: boundary.index + 1, to: boundary.summaryIndex, kind: "message" },
    { from: boundary.summaryIndex, to: boundary.summaryIndex + 1, kind: "summary" },
  ];
  if (boundary.tailStartIndex >= 0) ranges.push({ from: boundary.tailStartIndex, to: boundary.index, kind: "message" });
  ranges.push({ from: boundary.summaryIndex + 1, to: messages.length, kind: "message" });
  return ranges;
}

/** Indices [0, end) of the messages before the window (the parent model no longer sees them). */
export function historyBeforeWindow(boundary: CompactionBoundary): number {
  if (boundary.index < 0) return 0;
  return boundary.tailStartIndex >= 0 ? boundary.tailStartIndex : boundary.index;
}
