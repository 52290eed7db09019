// Stage 3 + formatting: ForkMessages → the <inherited_context> block, within FORK_CHAR_BUDGET.

import { clampBlock, cutLongestBodies, MIN_CUT_BODY, planBudget, planEntryCuts, protectedFlags } from "./budget.js";
import { maxHeadTailSeparatorLength } from "./truncation.js";
import { FORK_CHAR_BUDGET, FORK_FAIR_SHARE } from "./constants.js";
import { CONTEXT_CLOSE, CONTEXT_OPEN, contextLength, ENTRY_SEPARATOR, formatForkMessageCut, formatForkMessageInto, measureForkMessage } from "./format.js";
import { cloneStats, createEmptyStats } from "./stats.js";
import type { ForkMessage, FormatResult, ProcessingStats } from "./types.js";

/** Pieces are joined into strings of at most about this many characters (64 KB even as UTF-16). */
const CHUNK_CHARS = 32_768;

/**
 * The pieces as one string, made of flat chunks below V8's large-object size and linked (a rope of
 * a dozen chunks at most, the block being at most FORK_CHAR_BUDGET long); a piece of a chunk's size
 * or more (a whole tool output, already a string of the history) is linked as it is, not copied.
 * A flat 200,000-char string is a large object: a fresh allocation of its own (page faults), which
 * cost more than the rest of the pipeline on ordinary histories, and the plugin copies the block
 * once more anyway when it prepends the preamble and serialises the request.
 */
function joinInChunks(pieces: readonly string[]): string {
  let text = "";
  let chunk: string[] = [];
  let chunkChars = 0;
  const flush = () => {
    if (chunk.length > 0) text += chunk.join("");
    chunk = [];
    chunkChars = 0;
  };
  for (const piece of pieces) {
    if (piece.length >= CHUNK_CHARS) {
      flush();
      text += piece;
      continue;
    }
    if (chunkChars + piece.length > CHUNK_CHARS) flush();
    chunk.push(piece);
    chunkChars += piece.length;
  }
  flush();
  return text;
}

/**
 * Measures every message, plans what the budget removes (budget.ts), then formats each message kept,
 * once, and joins them once. Measuring instead of formatting everything first matters on long
 * histories: most messages are removed, and building megabytes of strings only to drop them cost
 * more (allocation, GC) than the rest of the pipeline.
 * The text is never longer than FORK_CHAR_BUDGET, whatever the messages (step 5 checks the real text).
 * Returns the block and a copy of `stats` with finalCount, totalChars, removedMessages, removedTurns
 * and clampedMessages set. Neither argument is modified.
 */
export function formatMessagesAsContext(messages: readonly ForkMessage[], stats?: ProcessingStats): FormatResult {
  if (!Array.isArray(messages)) {
    throw new TypeError("formatMessagesAsContext needs the messages processMessagesForFork returned (an array).");
  }
  return formatMeasured(messages, stats, messages.map(measureForkMessage));
}

/**
 * formatMessagesAsContext with `lengths[i]` = measureForkMessage(messages[i]) already taken (Stage 2
 * takes them as it builds the messages: processAndMeasure). `lengths` is updated in place as
 * messages are cut.
 */
export function formatMeasured(messages: readonly ForkMessage[], stats: ProcessingStats | undefined, lengths: number[]): FormatResult {
  return formatWithin(messages, stats, lengths, undefined)!;
}

/**
 * formatMeasured for the newest-end read (process.ts processAndMeasure with `newestEnd`): the
 * messages before `suffixFrom` that have no parts are placeholders of messages only counted. Checks
 * the premise that makes the result the full read's: after step 0 (which must have cut at its
 * floor, the fair share) the messages from `suffixFrom` on are still over the budget, so step 1
 * removes every placeholder. Returns undefined when it does not hold (the caller reads in full).
 */
export function formatCounted(messages: readonly ForkMessage[], stats: ProcessingStats, lengths: number[], suffixFrom: number): FormatResult | undefined {
  return formatWithin(messages, stats, lengths, suffixFrom);
}

function formatWithin(
  messages: readonly ForkMessage[],
  stats: ProcessingStats | undefined,
  lengths: number[],
  suffixFrom: number | undefined,
): FormatResult | undefined {
  const budget = FORK_CHAR_BUDGET;
  const out = stats ? cloneStats(stats) : createEmptyStats(messages.length);
  const clamped = new Set<number>();
  let kept: readonly ForkMessage[] = messages;

  const protect = protectedFlags(messages);
  let total = contextLength(
    lengths.reduce((sum, length) => sum + length, 0),
    messages.length,
  );
  // Step 0: cut before you drop. A body bigger than its fair share, wherever it is, is cut (no
  // further than needed, and not below the share) before any turn is given up for it. Only a
  // message longer than the share can hold such a body: the others' parts are not even read.
  if (total > budget) {
    const fair = cutLongestBodies(kept, (i) => lengths[i]! > FORK_FAIR_SHARE, total - budget, FORK_FAIR_SHARE);
    // (placeholders count 0: the excess is smaller than the full read's; the same cut only if at the floor)
    if (suffixFrom !== undefined && fair.cap !== undefined && fair.cap > FORK_FAIR_SHARE) return undefined;
    kept = fair.messages;
    for (const i of fair.cut) {
      total -= lengths[i]!;
      lengths[i] = measureForkMessage(kept[i]!);
      total += lengths[i]!;
      clamped.add(i);
    }
  }

  // Steps 1–2: remove turns, then messages of the newest turn, no more than needed; the message
  // whose removal would free far more than needed is kept and cut to fit instead: its bodies
  // head+tail, or (when its bodies are too short for it) the message as a whole, at step 4.
  if (suffixFrom !== undefined) {
    let suffixChars = 0;
    for (let i = suffixFrom; i < lengths.length; i++) suffixChars += lengths[i]!;
    if (suffixChars <= budget) return undefined;
  }
  const plan = planBudget(kept, lengths, budget, protect);
  if (suffixFrom !== undefined) {
    for (let i = 0; i < suffixFrom; i++) if (kept[i]!.parts.length === 0 && !plan.removed[i]) return undefined; // (cannot happen: see above)
  }
  let crossingKeep: number | undefined;
  if (plan.crossing) {
    const { index, excess } = plan.crossing;
    const bodies = cutLongestBodies(kept, (i) => i === index, excess, 0, MIN_CUT_BODY, true);
    if (bodies.cut.length > 0) {
      kept = bodies.messages;
      plan.total -= lengths[index]!;
      lengths[index] = measureForkMessage(kept[index]!);
      plan.total += lengths[index]!;
      clamped.add(index);
    } else {
      const length = lengths[index]!;
      crossingKeep = Math.max(0, length - excess - maxHeadTailSeparatorLength(length));
      plan.total -= length - crossingKeep - maxHeadTailSeparatorLength(length);
    }
  }
  // Step 3: cut the longest bodies left, evenly (unless even empty bodies would not be enough).
  if (plan.total > budget) {
    const bodies = cutLongestBodies(kept, (i) => !plan.removed[i], plan.total - budget, 0, MIN_CUT_BODY, true);
    kept = bodies.messages;
    for (const i of bodies.cut) {
      plan.total -= lengths[i]!;
      lengths[i] = measureForkMessage(kept[i]!);
      plan.total += lengths[i]!;
      clamped.add(i);
    }
  }
  // Step 4: still over (the scaffolding alone is too big): the longest messages are cut as a whole,
  // formatting only their head and tail.
  let entryCuts = plan.total > budget ? planEntryCuts(lengths, plan.removed, plan.total - budget) : undefined;
  if (crossingKeep !== undefined) {
    entryCuts ??= new Map();
    const keep = entryCuts.get(plan.crossing!.index);
    entryCuts.set(plan.crossing!.index, keep === undefined ? crossingKeep : Math.min(keep, crossingKeep));
  }
  // The block is built as ONE list of pieces joined once: the 200,000-char block is the only big
  // string made (a string per message, or a rope of a tag-heavy one, cost another copy of it).
  const pieces: string[] = [CONTEXT_OPEN];
  const entryEnds: number[] = []; // end offset of each entry in the block, separator excluded
  const entryMessage: number[] = []; // message index of each entry, -1 for a marker line
  let length = CONTEXT_OPEN.length;
  let marker = 0;
  const addEntry = (index: number, from: number) => {
    for (let k = from; k < pieces.length; k++) length += pieces[k]!.length;
    entryEnds.push(length);
    entryMessage.push(index);
  };
  const separate = () => {
    if (entryEnds.length > 0) {
      pieces.push(ENTRY_SEPARATOR);
      length += ENTRY_SEPARATOR.length;
    }
  };
  for (let i = 0; i < kept.length; i++) {
    if (!plan.removed[i]) {
      separate();
      const from = pieces.length;
      const keep = entryCuts?.get(i);
      if (keep === undefined) formatForkMessageInto(kept[i]!, pieces);
      else {
        pieces.push(formatForkMessageCut(kept[i]!, keep, lengths[i]!));
        clamped.add(i);
      }
      addEntry(i, from);
    }
    while (plan.markers[marker]?.afterIndex === i) {
      separate();
      pieces.push(plan.markers[marker++]!.text);
      addEntry(-1, pieces.length - 1);
    }
  }
  pieces.push(CONTEXT_CLOSE);
  let text = joinInChunks(pieces);

  // Step 5: the guarantee. Only reached when the entries that cannot be removed or cut one by one
  // are still too many; the inside of the block is cut head+tail.
  const clamp = clampBlock(text, CONTEXT_OPEN, CONTEXT_CLOSE, budget);
  if (clamp) {
    text = clamp.text;
    let offset = 0; // offsets inside the block, as clampBlock reports them
    for (let e = 0; e < entryEnds.length; e++) {
      const end = entryEnds[e]! - CONTEXT_OPEN.length;
      if (entryMessage[e]! >= 0 && end > clamp.removedFrom && offset < clamp.removedTo) clamped.add(entryMessage[e]!);
      offset = end + ENTRY_SEPARATOR.length;
    }
  }

  out.finalCount = messages.length - plan.removedMessages;
  out.removedMessages = plan.removedMessages;
  out.removedTurns = plan.removedTurns;
  out.clampedMessages = clamped.size;
  out.totalChars = text.length;
  return { text, stats: out };
}
