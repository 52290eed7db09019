// Stage 3: the character budget. Works on the lengths of the formatted messages, measured without
// building them (format.ts measureForkMessage): removing a message subtracts its length, and only
// the messages kept are ever formatted, each once. Linear in the number of messages (the cuts sort
// the part bodies they may cut, once).
//
// Protected messages are never removed (they may be cut):
//   - pinned: the compaction request and its summary (they replace the whole earlier history) and
//     the first user message with text (the task statement);
//   - every message holding a tier-1 (newest, whole) tool result, or a user answer (the result of a
//     tool that carries the user's own words, FORK_USER_ANSWER_TOOLS: kept like a user message);
//   - the newest turn's opening message (the latest request), the last message, and the last
//     assistant message with text (the latest answer).
// Order of measures when the block is over FORK_CHAR_BUDGET (context.ts runs them), each only while
// the block is still over, and never more than needed:
//   0. cut before you drop: a part body larger than FORK_FAIR_SHARE, in ANY message, is cut head+tail
//      (toward that share, no further than needed) before any turn is given up for it;
//   1. remove the oldest whole TURNS (a user message and the assistant messages answering it), the
//      newest turn excluded, minus their protected messages, while the block stays over the budget or
//      at least FORK_MIN_FILL full without them. The turn whose removal would leave less is trimmed
//      instead: its oldest steps go first, then its request, and the one message whose removal would
//      cross below FORK_MIN_FILL is kept and cut to fit (its bodies head+tail, or the message whole);
//   2. still over: the oldest messages of the newest turn go, minus its protected ones, the same way
//      (the message that would cross is cut to fit);
//   3. still over: cut the longest part bodies (head+tail), all down to one common size;
//   4. still over (scaffolding alone too big): cut the longest formatted messages as a whole;
//   5. the final check on the assembled text: cut the inside of the block head+tail, so the budget
//      holds for every input.
// So whenever anything was removed the block is at least FORK_MIN_FILL (90%) of the budget.

import { FORK_CHAR_BUDGET, FORK_HEAD_RATIO, FORK_MIN_FILL, FORK_TAIL_RATIO } from "./constants.js";
import { contextLength, partBody, withPartBody } from "./format.js";
import { headTailSeparator, maxHeadTailSeparatorLength, safeHeadEnd, safeTailStart, truncateWithStrategy } from "./truncation.js";
import type { ForkMessage, ForkPart } from "./types.js";

/** Bodies shorter than this are not worth cutting one by one: the separator alone is about 30 characters. */
export const MIN_CUT_BODY = 64;

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

/** Messages that stand for the task or the earlier history: the compaction request, its summary, the task statement. */
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

/**
 * Messages the budget never removes (see the top of this file): pinned ones, those holding a tier-1
 * result or a user answer, the newest turn's opening message, the last message and the last assistant text.
 */
export function protectedFlags(messages: readonly ForkMessage[]): boolean[] {
  const flags = pinnedFlags(messages);
  let lastAssistantText = -1;
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]!;
    for (const p of m.parts) {
      // a user answer has no tier: ordinary results are told by their tier alone
      if (p.kind === "tool" && (p.tier === 1 || (p.tier === undefined && p.userAnswer === true))) flags[i] = true;
      else if (p.kind === "text" && m.role === "assistant") lastAssistantText = i;
    }
  }
  if (lastAssistantText >= 0) flags[lastAssistantText] = true;
  const starts = turnStarts(messages);
  if (starts.length > 0) flags[starts[starts.length - 1]!] = true;
  if (messages.length > 0) flags[messages.length - 1] = true;
  return flags;
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
  /** length of the block as planned (before the crossing cut and any cut of steps 3–5) */
  total: number;
  /**
   * The message whose removal would have freed far more than needed (the block would have fallen
   * under FORK_MIN_FILL of the budget): it is kept and must be cut by `excess` characters instead
   * (context.ts: its bodies head+tail, or the message as a whole).
   */
  crossing?: { index: number; excess: number };
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

export function turnTrimmedMarker(messages: number, budget = FORK_CHAR_BUDGET): string {
  return `[${messages} earlier message${messages === 1 ? "" : "s"} of this turn removed to fit the ${budget} char budget]`;
}

/**
 * Steps 1 and 2 from the lengths alone. `lengths[i]` is the formatted length of message i,
 * `protect[i]` marks the messages never removed (protectedFlags). Under the budget (the usual case,
 * and always below FORK_CHAR_NO_REMOVAL) nothing is removed.
 *
 * A unit (a whole older turn, or one message) is removed only while the block stays over the budget
 * without it, or stays at least `minFill` of the budget full: removal stops as soon as the rest fits.
 * The unit that would cross below `minFill` is given back: a turn is trimmed instead (its oldest
 * steps first, its request last), and the one message that would cross is kept and named in
 * `plan.crossing`, to be cut by exactly what is still over. Each message is looked at a bounded
 * number of times: linear in the number of messages.
 */
export function planBudget(
  messages: readonly ForkMessage[],
  lengths: readonly number[],
  budget = FORK_CHAR_BUDGET,
  protect: readonly boolean[] = protectedFlags(messages),
  minFill = FORK_MIN_FILL,
): BudgetPlan {
  const removed = new Array<boolean>(messages.length).fill(false);
  const block = new BlockLength();
  for (const length of lengths) block.add(length);
  const plan: BudgetPlan = { removed, markers: [], removedTurns: 0, removedMessages: 0, total: block.total() };
  if (plan.total <= budget) return plan;
  const fill = Math.floor(budget * minFill);

  const starts = turnStarts(messages);
  const turnEnd = (t: number) => (t + 1 < starts.length ? starts[t + 1]! : messages.length);
  const remove = (i: number) => {
    removed[i] = true;
    block.remove(lengths[i]!);
    plan.removedMessages++;
  };
  // markers already placed: their characters and count
  let markerChars = 0;
  const totalWith = (extraChars: number, extraMarkers: number) => block.total(markerChars + extraChars, plan.markers.length + extraMarkers);
  /** Keeping the block over the budget, or at least `fill` full: a removal that leaves `after` is fine. */
  const mayRemove = (after: number) => after > budget || after >= fill;

  /**
   * Removes the messages of `order` (unprotected ones, in that order) while mayRemove; one marker
   * (made by `marker`) after the last one removed. Stops when the block fits; at the message that
   * would cross below `fill`, keeps it and plans its cut. Returns true when the block fits.
   */
  const trim = (from: number, to: number, requestLast: boolean, marker: (count: number) => string): boolean => {
    let count = 0;
    let last = -1;
    let placed: BudgetMarker | undefined;
    const withMarker = () => totalWith(placed ? placed.text.length : 0, placed ? 1 : 0);
    // from..to-1 in order, or (requestLast) from+1..to-1 and then `from`
    for (let k = requestLast ? from + 1 : from; k <= to; k++) {
      if (k === to && !requestLast) break;
      const i = k === to ? from : k;
      const now = withMarker();
      if (now <= budget) break;
      if (protect[i]) continue;
      const text = marker(count + 1);
      // without message i, with this trim's marker (it replaces the one placed so far)
      const after = block.total(markerChars + text.length - lengths[i]!, plan.markers.length + 1 - 1);
      if (!mayRemove(after)) {
        plan.crossing = { index: i, excess: now - budget };
        break;
      }
      remove(i);
      count++;
      last = Math.max(last, i);
      placed = { afterIndex: last, text };
    }
    if (placed) {
      plan.markers.push(placed);
      markerChars += placed.text.length;
    }
    return plan.crossing !== undefined || totalWith(0, 0) <= budget;
  };

  // Step 1: oldest turns first, whole (minus protected messages), the newest turn excluded; the turn
  // whose removal would free far more than needed is trimmed instead (its oldest steps first).
  let turnMarker: BudgetMarker | undefined;
  let turnMessages = 0;
  let fits = false;
  for (let t = 0; t < starts.length - 1 && !fits; t++) {
    const now = totalWith(turnMarker ? turnMarker.text.length : 0, turnMarker ? 1 : 0);
    if (now <= budget) {
      fits = true;
      break;
    }
    // Removed in one pass (the usual outcome), put back in the rare case it would free too much.
    const start = starts[t]!;
    const end = turnEnd(t);
    let chars = 0;
    let count = 0;
    let last = -1;
    for (let i = start; i < end; i++) {
      if (protect[i]) continue;
      removed[i] = true;
      chars += lengths[i]!;
      count++;
      last = i;
    }
    if (count === 0) continue; // a turn made of protected messages only: nothing can go
    block.chars -= chars;
    block.count -= count;
    const text = turnsRemovedMarker(plan.removedTurns + 1, turnMessages + count, budget);
    // without the turn's unprotected messages, with the turns marker (it replaces the one so far)
    const after = block.total(markerChars + text.length, plan.markers.length + 1);
    if (mayRemove(after)) {
      plan.removedMessages += count;
      turnMessages += count;
      plan.removedTurns++;
      turnMarker = { afterIndex: last, text };
      continue;
    }
    for (let i = start; i < end; i++) removed[i] = false;
    block.chars += chars;
    block.count += count;
    // The crossing turn: its steps (oldest first), then its request.
    if (turnMarker) {
      plan.markers.push(turnMarker);
      markerChars += turnMarker.text.length;
      turnMarker = undefined;
    }
    fits = trim(start, end, true, (k) => turnTrimmedMarker(k, budget));
  }
  if (turnMarker) {
    plan.markers.push(turnMarker);
    markerChars += turnMarker.text.length;
  }

  // Step 2: still too big; drop the oldest messages of the newest turn, minus its protected ones
  // (its request, the last message, the newest results and the last answer stay).
  const newest = starts.length - 1;
  if (!fits && plan.crossing === undefined && newest >= 0 && totalWith(0, 0) > budget) {
    trim(starts[newest]!, messages.length, false, (k) => latestTurnTrimmedMarker(k, budget));
  }
  plan.total = totalWith(0, 0);
  return plan;
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

export interface BodyCut {
  messages: readonly ForkMessage[];
  /** indices of the messages that were cut */
  cut: number[];
  /** the common size the bodies were cut to, when there were bodies to cut */
  cap?: number;
}

/**
 * Cuts the longest part bodies of the messages `eligible` allows head+tail, evenly (see
 * waterFillCap), by `excess` characters, but never below `floor` (step 0 uses the fair share as
 * floor, step 3 none) and only bodies longer than `minBody`. Tool headers keep their result lines.
 * With `onlyIfEnough`, nothing is cut when even empty bodies would leave the block over.
 * Returns the messages with those parts replaced (the input is not modified) and the indices cut.
 */
export function cutLongestBodies(
  messages: readonly ForkMessage[],
  eligible: (index: number) => boolean,
  excess: number,
  floor = 0,
  minBody = MIN_CUT_BODY,
  onlyIfEnough = false,
): BodyCut {
  // First without allocating: is there anything to cut, and would cutting everything be enough?
  let count = 0;
  let most = 0;
  for (let i = 0; i < messages.length; i++) {
    if (!eligible(i)) continue;
    for (const part of messages[i]!.parts) {
      const length = partBody(part).length;
      if (length > minBody && length > floor) {
        count++;
        most += length - maxHeadTailSeparatorLength(length);
      }
    }
  }
  if (count === 0) return { messages, cut: [] };
  // Emptying every body would not be enough (the scaffolding alone is too big: thousands of calls):
  // cutting them all to stubs would only lose their results; step 4 cuts whole messages instead.
  if (onlyIfEnough && most < excess) return { messages, cut: [] };
  // Candidates in (message, part) order, then sorted longest first, ties by position: deterministic.
  // Sorted as numbers (one key per body, no comparator and no object per candidate): a message of
  // thousands of calls has thousands of candidates.
  const candidateMessage = new Array<number>(count);
  const candidatePart = new Array<number>(count);
  const candidateLength = new Array<number>(count);
  let n = 0;
  let longest = 0;
  for (let i = 0; i < messages.length; i++) {
    if (!eligible(i)) continue;
    const parts = messages[i]!.parts;
    for (let j = 0; j < parts.length; j++) {
      const length = partBody(parts[j]!).length;
      if (length > minBody && length > floor) {
        candidateMessage[n] = i;
        candidatePart[n] = j;
        candidateLength[n] = length;
        if (length > longest) longest = length;
        n++;
      }
    }
  }
  const order = longestFirst(candidateLength, n, longest);
  const sortedLengths = new Array<number>(n);
  for (let k = 0; k < n; k++) sortedLengths[k] = candidateLength[order[k]!]!;
  const cap = Math.max(floor, waterFillCap(sortedLengths, excess));
  const cutParts = new Map<number, ForkPart[]>();
  for (let k = 0; k < n; k++) {
    if (sortedLengths[k]! <= cap) break; // sorted: every later body is within the cap too
    const c = order[k]!;
    const message = candidateMessage[c]!;
    let parts = cutParts.get(message);
    if (parts === undefined) parts = [...messages[message]!.parts];
    const part = parts[candidatePart[c]!]!;
    const body = partBody(part);
    const cut = truncateWithStrategy(body, cap, true);
    if (cut.length >= body.length) continue; // the separator would cost more than it saves
    parts[candidatePart[c]!] = withPartBody(part, cut);
    cutParts.set(message, parts);
  }
  if (cutParts.size === 0) return { messages, cut: [], cap };
  const out = messages.map((m, i) => {
    const parts = cutParts.get(i);
    return parts ? { ...m, parts } : m;
  });
  return { messages: out, cut: [...cutParts.keys()], cap };
}

/** Largest candidate count and body length the numeric sort keys can hold exactly (2^21 × 2^31 < 2^53). */
const KEY_INDEX_LIMIT = 2 ** 21;
const KEY_LENGTH_LIMIT = 2 ** 31;

/**
 * Indices 0..n-1 ordered by `lengths` descending, ties by index ascending (`longest` is the largest
 * length). A counting sort when the lengths are small next to the count; else sorted as one number
 * per index (length and index packed into a double, native numeric sort); the comparator sort only
 * past what the packing holds.
 */
export function longestFirst(lengths: readonly number[], n: number, longest: number): ArrayLike<number> {
  if (longest <= Math.max(1024, 8 * n)) {
    // lengths no larger than a few times the count (thousands of short bodies): counting sort, linear
    const starts = new Int32Array(longest + 2);
    for (let k = 0; k < n; k++) starts[longest - lengths[k]! + 1]!++;
    for (let v = 1; v <= longest + 1; v++) starts[v]! += starts[v - 1]!;
    const order = new Int32Array(n);
    for (let k = 0; k < n; k++) order[starts[longest - lengths[k]!]!++] = k;
    return order;
  }
  if (n < KEY_INDEX_LIMIT && longest < KEY_LENGTH_LIMIT) {
    const keys = new Float64Array(n);
    for (let k = 0; k < n; k++) keys[k] = (KEY_LENGTH_LIMIT - lengths[k]!) * KEY_INDEX_LIMIT + k;
    keys.sort();
    const order = new Int32Array(n);
    for (let k = 0; k < n; k++) order[k] = keys[k]! % KEY_INDEX_LIMIT;
    return order;
  }
  const order = Array.from({ length: n }, (_, k) => k);
  return order.sort((a, b) => lengths[b]! - lengths[a]! || a - b);
}

/**
 * Step 4, planned on lengths: if the messages are still over the budget by `excess` (only when the
 * scaffolding alone is too big, e.g. thousands of calls in one message), the longest messages are
 * cut as a whole, head+tail. Returns, per message to cut, the `keep` to format it with
 * (formatForkMessageCut): each such cut saves at least what is asked of it, so the total is met.
 */
export function planEntryCuts(lengths: readonly number[], removed: readonly boolean[], excess: number): Map<number, number> {
  const order: number[] = [];
  for (let i = 0; i < lengths.length; i++) if (!removed[i]) order.push(i);
  order.sort((a, b) => lengths[b]! - lengths[a]! || a - b);
  const cuts = new Map<number, number>();
  let need = excess;
  for (const i of order) {
    if (need <= 0) break;
    const length = lengths[i]!;
    const separator = maxHeadTailSeparatorLength(length);
    if (length <= separator) break; // sorted: no later entry can save anything either
    const keep = Math.max(0, length - need - separator);
    cuts.set(i, keep);
    need -= length - keep - separator; // at least this much is saved (see truncateWithStrategy)
  }
  return cuts;
}

/**
 * Step 5, the guarantee: the inside of an assembled block longer than `budget` is cut head+tail
 * (surrogate-safe) so the block is at most `budget` long, whatever the input. The head keeps the
 * oldest entries (the task statement), the tail the newest. `open`/`close` are the block's tags.
 * Returns the text and the [start, end) range of the inner text that was removed, or undefined.
 */
export function clampBlock(
  text: string,
  open: string,
  close: string,
  budget = FORK_CHAR_BUDGET,
): { text: string; removedFrom: number; removedTo: number } | undefined {
  if (text.length <= budget) return undefined;
  const inner = text.slice(open.length, text.length - close.length);
  const keep = Math.max(0, budget - open.length - close.length - maxHeadTailSeparatorLength(inner.length));
  // as truncateWithStrategy(inner, keep, true), keeping the positions to report what went
  const headEnd = safeHeadEnd(inner, Math.floor(keep * FORK_HEAD_RATIO));
  const tailStart = safeTailStart(inner, inner.length - Math.floor(keep * FORK_TAIL_RATIO));
  const cut = inner.slice(0, headEnd) + headTailSeparator(tailStart - headEnd) + inner.slice(tailStart);
  return { text: open + cut + close, removedFrom: headEnd, removedTo: tailStart };
}
