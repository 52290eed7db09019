// Stage 3: the character budget. Works on the lengths of the formatted messages, measured without
// building them (format.ts measureForkMessage): removing a message subtracts its length, and only
// the messages kept are ever formatted, each once. Linear in the number of messages.
//
// Order of measures when the block is over FORK_CHAR_BUDGET:
//   1. remove the oldest whole TURNS (a user message and the assistant messages answering it), never
//      the newest turn, never a pinned message, and never reaching the newest work (below);
//   2. still over: remove the oldest assistant messages of the turn doing the newest work (its last
//      message stays), again stopping at the newest work;
//   3. still over: cut the longest part bodies of what is left (head+tail), so the budget always holds.
// Pinned: the compaction request and its summary (they replace the whole earlier history) and the
// first user message with text (the task statement).
// The newest work: every message from the oldest one holding a tier-1 (newest, whole) tool result.
// Removing it would leave the child knowing least about what was done last; cutting it evenly
// (step 3) keeps the head and tail of each of those results instead.

import { FORK_CHAR_BUDGET } from "../constants.js";
import { contextLength, partBody, withPartBody } from "./format.js";
import { maxHeadTailSeparatorLength, truncateWithStrategy } from "./truncation.js";
import type { ForkMessage, ForkPart } from "./types.js";

/** Bodies shorter than this are not worth cutting: the separator alone is about 30 characters. */
const MIN_CUT_BODY = 64;

export function turnsRemovedMarker(turns: number, messages: number, budget = FORK_CHAR_BUDGET): string {
  return `[${turns} earlier turn${turns === 1 ? "" : "s"} (${messages} message${messages === 1 ? "" : "s"}) removed to fit the ${budget} char budget]`;
}

export function latestTurnTrimmedMarker(messages: number, budget = FORK_CHAR_BUDGET): string {
  return `[${messages} earlier message${messages === 1 ? "" : "s"} of the latest turn removed to fit the ${budget} char budget]`;
}

/** Index of the task statement: the first ordinary user message with text; -1 if none. */
export function findTaskMessageIndex(messages: readonly ForkMessage[]): number {
  return messages.findIndex((m) => m.role === "user" && m.kind === "message" && m.parts.some((p) => p.kind === "text"));
}

/** Index of the oldest message holding a tier-1 tool result; messages.length if there is none. */
export function newestWorkIndex(messages: readonly ForkMessage[]): number {
  const index = messages.findIndex((m) => m.parts.some((p) => p.kind === "tool" && p.tier === 1));
  return index < 0 ? messages.length : index;
}

/** Messages the budget never removes. */
export function pinnedFlags(messages: readonly ForkMessage[]): boolean[] {
  const task = findTaskMessageIndex(messages);
  return messages.map((m, i) => m.kind === "compaction" || m.kind === "summary" || i === task);
}

/**
 * Start index of every turn. A turn begins at an ordinary user message; pinned compaction messages
 * stand apart, so assistant messages right after them (or before any user message) form their own
 * leading turn instead of joining the compaction.
 */
export function turnStarts(messages: readonly ForkMessage[]): number[] {
  const starts: number[] = [];
  let previousWasCompaction = true; // the very first non-compaction message always opens a turn
  messages.forEach((m, i) => {
    const isCompaction = m.kind === "compaction" || m.kind === "summary";
    if (!isCompaction && (m.role === "user" || previousWasCompaction)) starts.push(i);
    previousWasCompaction = isCompaction;
  });
  return starts;
}

export interface BudgetMarker {
  /** the marker line is printed right after the message at this index (itself removed) */
  afterIndex: number;
  text: string;
}

export interface BudgetPlan {
  removed: boolean[];
  markers: BudgetMarker[];
  removedTurns: number;
  removedMessages: number;
  /** length of the block as planned (before any clamp) */
  total: number;
}

/** Running length of the block: entry lengths and count, markers included. */
class BlockLength {
  chars = 0;
  count = 0;
  add(length: number): void {
    this.chars += length;
    this.count++;
  }
  remove(length: number): void {
    this.chars -= length;
    this.count--;
  }
  total(extraChars = 0, extraEntries = 0): number {
    return contextLength(this.chars + extraChars, this.count + extraEntries);
  }
}

/**
 * Steps 1 and 2 from the lengths alone. `lengths[i]` is the formatted length of message i.
 * Under the budget (the usual case, and always below FORK_CHAR_NO_REMOVAL) nothing is removed.
 */
export function planBudget(messages: readonly ForkMessage[], lengths: readonly number[], budget = FORK_CHAR_BUDGET): BudgetPlan {
  const removed = new Array<boolean>(messages.length).fill(false);
  const block = new BlockLength();
  for (const length of lengths) block.add(length);
  const plan: BudgetPlan = { removed, markers: [], removedTurns: 0, removedMessages: 0, total: block.total() };
  if (plan.total <= budget) return plan;

  const pinned = pinnedFlags(messages);
  const starts = turnStarts(messages);
  const turnEnd = (t: number) => (t + 1 < starts.length ? starts[t + 1]! : messages.length);
  const remove = (i: number) => {
    removed[i] = true;
    block.remove(lengths[i]!);
  };

  const protectFrom = newestWorkIndex(messages);

  // Step 1: oldest turns first, whole (minus pinned messages), the newest turn excluded, up to the newest work.
  let turnMarker: BudgetMarker | undefined;
  let turnMessages = 0;
  const withTurnMarker = () => (turnMarker ? block.total(turnMarker.text.length, 1) : block.total());
  for (let t = 0; t < starts.length - 1 && turnEnd(t) <= protectFrom && withTurnMarker() > budget; t++) {
    let last = -1;
    for (let i = starts[t]!; i < turnEnd(t); i++) {
      if (pinned[i]) continue;
      remove(i);
      turnMessages++;
      last = i;
    }
    if (last < 0) continue; // a turn made of a pinned message only: nothing went
    plan.removedTurns++;
    turnMarker = { afterIndex: last, text: turnsRemovedMarker(plan.removedTurns, turnMessages, budget) };
  }
  const markerChars = () => plan.markers.reduce((sum, marker) => sum + marker.text.length, 0);
  if (turnMarker) plan.markers.push(turnMarker);

  // Step 2: still too big; drop the oldest assistant messages of the turn doing the newest work (the
  // newest turn when there is no tool result), keeping its last message and the newest work itself.
  let newest = starts.length - 1;
  while (newest > 0 && starts[newest]! > protectFrom) newest--;
  if (newest >= 0 && block.total(markerChars(), plan.markers.length) > budget) {
    let trimmed = 0;
    let trimMarker: BudgetMarker | undefined;
    const lastIndex = Math.min(turnEnd(newest) - 1, protectFrom);
    for (let i = starts[newest]!; i < lastIndex; i++) {
      const extra = markerChars() + (trimMarker?.text.length ?? 0);
      if (block.total(extra, plan.markers.length + (trimMarker ? 1 : 0)) <= budget) break;
      if (pinned[i] || messages[i]!.role !== "assistant") continue;
      remove(i);
      trimmed++;
      trimMarker = { afterIndex: i, text: latestTurnTrimmedMarker(trimmed, budget) };
    }
    if (trimMarker) plan.markers.push(trimMarker);
    plan.removedMessages += trimmed;
  }
  plan.removedMessages += turnMessages;
  plan.total = block.total(markerChars(), plan.markers.length);
  return plan;
}

interface CutCandidate {
  message: number;
  part: number;
  length: number;
}

/**
 * Water-filling: the longest bodies are all cut down to one common size `cap`, the smallest cap that
 * removes `excess` characters (separators included). Cutting them evenly keeps the head and tail of
 * each (a huge task statement keeps its opening words, a huge log its last lines) instead of wiping
 * out the single longest one. Returns the cap, or 0 when even empty bodies would not be enough.
 */
export function waterFillCap(lengthsDescending: readonly number[], excess: number): number {
  let sumLengths = 0;
  let sumSeparators = 0;
  for (let k = 0; k < lengthsDescending.length; k++) {
    const length = lengthsDescending[k]!;
    sumLengths += length;
    sumSeparators += maxHeadTailSeparatorLength(length);
    const cap = Math.floor((sumLengths - sumSeparators - excess) / (k + 1));
    if (cap >= 0 && cap >= (lengthsDescending[k + 1] ?? 0)) return cap;
  }
  return 0;
}

/**
 * Step 3a, last resort: only pinned messages and the newest ones are left and they are still over
 * the budget by `excess`. Cuts the longest part bodies head+tail, evenly (see waterFillCap), so tool
 * headers keep their result lines. Returns the messages with those parts replaced (the input is not
 * modified) and the indices of the messages that were cut.
 */
export function cutLongestBodies(
  messages: readonly ForkMessage[],
  removed: readonly boolean[],
  excess: number,
): { messages: readonly ForkMessage[]; cut: number[] } {
  const candidates: CutCandidate[] = [];
  messages.forEach((m, i) => {
    if (removed[i]) return;
    m.parts.forEach((p, j) => {
      const length = partBody(p).length;
      if (length > MIN_CUT_BODY) candidates.push({ message: i, part: j, length });
    });
  });
  // Stable sort, ties broken by position: deterministic.
  candidates.sort((a, b) => b.length - a.length || a.message - b.message || a.part - b.part);
  const cap = waterFillCap(
    candidates.map((c) => c.length),
    excess,
  );
  const cutParts = new Map<number, ForkPart[]>();
  for (const c of candidates) {
    if (c.length <= cap) break; // sorted: every later body is within the cap too
    const parts = cutParts.get(c.message) ?? [...messages[c.message]!.parts];
    const body = partBody(parts[c.part]!);
    const cut = truncateWithStrategy(body, cap, true);
    if (cut.length >= body.length) continue; // the separator would cost more than it saves
    parts[c.part] = withPartBody(parts[c.part]!, cut);
    cutParts.set(c.message, parts);
  }
  if (cutParts.size === 0) return { messages, cut: [] };
  const out = messages.map((m, i) => {
    const parts = cutParts.get(i);
    return parts ? { ...m, parts } : m;
  });
  return { messages: out, cut: [...cutParts.keys()] };
}

/**
 * Step 3b, the guarantee: if the formatted strings are still over the budget by `excess` (only when
 * the scaffolding alone is too big, e.g. hundreds of calls in one message), the longest formatted
 * strings are cut as a whole. Updates `formatted` in place (the caller's own array); returns the
 * indices cut.
 */
export function cutLongestEntries(formatted: string[], removed: readonly boolean[], excess: number): number[] {
  const order = formatted.map((_, i) => i).filter((i) => !removed[i]);
  order.sort((a, b) => formatted[b]!.length - formatted[a]!.length || a - b);
  const cut: number[] = [];
  let need = excess;
  for (const i of order) {
    if (need <= 0) break;
    const text = formatted[i]!;
    const keep = Math.max(0, text.length - need - maxHeadTailSeparatorLength(text.length));
    const shorter = truncateWithStrategy(text, keep, true);
    if (shorter.length >= text.length) continue;
    need -= text.length - shorter.length;
    formatted[i] = shorter;
    cut.push(i);
  }
  return cut;
}
