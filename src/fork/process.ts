// Stages 1–2: from the raw `session.messages()` history to ForkMessages whose every part is
// decided and cut, ready to print. Pure: the input is never mutated.

import type { FilePart, Part, ToolPart } from "../host/types.js";
import { findCompactionBoundary, historyBeforeWindow, isMessageEntry, type WindowMessage, type WindowRange, windowRanges } from "./compaction.js";
import { FORK_CHAR_BUDGET, FORK_FAIR_SHARE } from "./constants.js";
import { FileActivityCollector } from "./files.js";
import { measureForkMessage } from "./format.js";
import { createEmptyStats } from "./stats.js";
import { countForkToolPart, ToolCallDecider, type ToolDecision, toForkToolPart } from "./tools.js";
import type { ForkMessage, ForkOptions, ForkPart, ProcessingStats, ProcessResult, SessionMessage } from "./types.js";

/** How the compaction request of the boundary reads: OpenCode sends it to the model as this question. */
export const COMPACTION_REQUEST_TEXT = "What did we do so far? [the earlier conversation was summarised at this point; the summary follows]";
/** A compaction request whose summary failed or is not the boundary (it replaced nothing). */
export const STRAY_COMPACTION_TEXT = "[a compaction of the conversation was requested here]";

/** One line naming an attached file. A data: URL is not printed: it can be megabytes of base64. */
export function describeFilePart(part: FilePart): string {
  const url = typeof part.url === "string" ? part.url : "";
  const filename = typeof part.filename === "string" ? part.filename : "";
  const mime = typeof part.mime === "string" ? part.mime : "";
  const name = filename || (url.startsWith("data:") ? "inline data" : url) || "unnamed file";
  return `[file: ${name} (${mime || "unknown type"})]`;
}

/** The one line a part of the wrong shape shows: its kind is known, its content is not printable. */
export function malformedPartMarker(type: string): string {
  return `[malformed ${type} part left out]`;
}

/** `value` when it is a string, else "" (a field of the wrong type prints as nothing). */
function stringOr(value: unknown, fallback = ""): string {
  return typeof value === "string" ? value : fallback;
}

/** ForkOptions.userAnswerTools, its strings only (a caller outside TypeScript may pass anything). */
function userAnswerToolsOf(options: ForkOptions): string[] {
  const names: unknown = options.userAnswerTools;
  return Array.isArray(names) ? names.filter((name): name is string => typeof name === "string" && name.length > 0) : [];
}

/** The background_task call being executed right now is not history: the child IS that call. */
function isExcludedCall(part: ToolPart, excludeCallID: string | undefined): boolean {
  return excludeCallID !== undefined && part.callID === excludeCallID;
}

/** An object with a string `type`: the least a part must be to be placed at all. */
function isPartLike(part: unknown): part is Part {
  return part !== null && typeof part === "object" && typeof (part as { type?: unknown }).type === "string";
}

/**
 * A non-tool part → at most one printable part; `undefined` when it is left out. Left out and counted
 * in stats.omittedParts: parts the model never saw as content (step-start, step-finish, snapshot,
 * patch, retry) and reasoning, which is the parent's scratchpad and would only add size.
 */
function toForkPart(part: Part, kind: WindowMessage["kind"], stats: ProcessingStats): ForkPart | undefined {
  switch (part.type) {
    case "text": {
      // synthetic text reached the model (only hidden in the TUI); ignored text never did
      if (part.ignored === true) return undefined;
      const text: unknown = part.text;
      if (typeof text !== "string") {
        if (text == null) return undefined; // no text at all: nothing to print
        stats.malformedParts++;
        return { kind: "note", text: malformedPartMarker("text") };
      }
      return text ? { kind: "text", text } : undefined;
    }
    case "file":
      return { kind: "file", text: describeFilePart(part) };
    case "subtask":
      return { kind: "note", text: `[subtask for agent ${stringOr(part.agent, "unknown")}: ${stringOr(part.description)}]` };
    case "agent":
      return { kind: "note", text: `[agent: ${stringOr(part.name, "unknown")}]` };
    case "compaction":
      return { kind: "note", text: kind === "compaction" ? COMPACTION_REQUEST_TEXT : STRAY_COMPACTION_TEXT };
    default:
      // reasoning, step-start, step-finish, snapshot, patch, retry; a part type unknown today is
      // left out the same way (counted too) rather than printed in a shape nobody designed
      stats.omittedParts++;
      return undefined;
  }
}

/** State of Stage 2's single backward pass over the window. */
interface BackwardPass {
  decider: ToolCallDecider;
  files: FileActivityCollector;
  excludeCallID: string | undefined;
}

/**
 * One message → its printable parts (and its files recorded). Called for the window's messages
 * NEWEST FIRST (see ToolCallDecider): the parts are walked backwards too, then put back in order.
 * `decided`: the decisions of its calls, already taken in that same order (decideCalls), when the
 * newest-end read had to look at them before building the message.
 */
function toForkMessage(
  message: SessionMessage,
  index: number,
  kind: WindowMessage["kind"],
  pass: BackwardPass,
  stats: ProcessingStats,
  decided?: readonly ToolDecision[],
): ForkMessage {
  const raw: unknown = message.parts;
  const source: readonly unknown[] = Array.isArray(raw) ? raw : [];
  if (raw != null && !Array.isArray(raw)) stats.malformedParts++; // `parts: {}`: nothing to place
  const parts: ForkPart[] = [];
  let call = 0;
  for (let i = source.length - 1; i >= 0; i--) {
    const part = source[i];
    if (!isPartLike(part)) {
      if (part != null) stats.malformedParts++; // a number, a string, a part without a type
      continue;
    }
    if (part.type === "tool") {
      pass.files.addCall(part, index, i);
      if (!isExcludedCall(part, pass.excludeCallID)) parts.push(toForkToolPart(part, decided ? decided[call++]! : pass.decider.decide(part), stats));
      continue;
    }
    const forkPart = toForkPart(part, kind, stats);
    if (forkPart) parts.push(forkPart);
  }
  parts.reverse();
  // A compaction request always reads as one, even if its part were missing.
  if (kind === "compaction" && parts.length === 0) parts.push({ kind: "note", text: COMPACTION_REQUEST_TEXT });
  return { info: message.info, role: message.info.role === "assistant" ? "assistant" : "user", kind, parts };
}

/**
 * The newest-end read (buildForkContext). Stage 2 builds messages newest first; once the messages
 * built hold more than the budget and the last one built opens a turn, every older message is
 * certain to be removed by Stage 3 step 1 (whole older turns go while the block stays over the
 * budget without them), unless Stage 3 protects it. From there on a message is only COUNTED:
 * its calls decided (dedup, tiers), its stats and files recorded exactly as if it were built, and
 * it takes its place in the list as a placeholder (no parts, length 0) so turns, markers and counts
 * come out the same. It is built after all when the budget could keep or cut it:
 *   - the compaction request and its summary, the task statement (the first user message with text);
 *   - a message holding a tier-1 result or a user answer;
 *   - the newest assistant message with text, when the messages built hold none;
 *   - a message with a part whose text is long enough for step 0 (cut before you drop) to cut it.
 * context.ts checks the premise once step 0 has run (the turns from the first one built still fill
 * the budget; step 0 cut at its floor) and buildForkContext falls back to the full read otherwise.
 */
interface NewestEnd {
  /** the task statement's index in the history (its range's kind is "message"), -1 if none */
  taskIndex: number;
  /** budget-capped length of the messages built so far */
  builtChars: number;
  /** counting from here on: index (in the final, oldest-first list) of the first message built in full */
  suffixFrom: number | undefined;
  /** a message built holds assistant text (the last answer is already among them) */
  haveAnswer: boolean;
  /** a message built opens a turn (an ordinary user message): the newest turn's start is among them */
  haveTurnStart: boolean;
}

/** A non-tool part with more text than this may be cut by step 0: its message is built, not counted. */
const COUNTED_PART_MAX_CHARS = FORK_FAIR_SHARE / 2;

/** The characters a non-tool part prints from (its text, its file's name), or more. */
function partTextChars(part: Part): number {
  const record = part as unknown as Record<string, unknown>;
  const text = part.type === "text" ? record.text : part.type === "file" ? record.url : part.type === "subtask" ? record.description : undefined;
  const extra = part.type === "file" ? record.filename : part.type === "subtask" ? record.agent : part.type === "agent" ? record.name : undefined;
  return (
    (typeof text === "string" ? text.length : 0) +
    (typeof extra === "string" ? extra.length : 0) +
    (part.type === "file" && typeof record.mime === "string" ? record.mime.length : 0)
  );
}

/** toForkPart's effect on the stats, and whether it would print anything, without building the part. */
function countForkPart(part: Part, stats: ProcessingStats): boolean {
  switch (part.type) {
    case "text": {
      if (part.ignored === true) return false;
      const text: unknown = part.text;
      if (typeof text !== "string") {
        if (text == null) return false;
        stats.malformedParts++;
        return true;
      }
      return text.length > 0;
    }
    case "file":
    case "subtask":
    case "agent":
    case "compaction":
      return true;
    default:
      stats.omittedParts++;
      return false;
  }
}

/** Whether toForkPart makes a text part of it (the part a task statement or an answer needs). */
function isPrintedText(part: Part): boolean {
  return part.type === "text" && part.ignored !== true && typeof part.text === "string" && part.text.length > 0;
}

/** The index of the task statement: the first message of the window, in its order, a user with text. */
function taskStatementIndex(messages: readonly SessionMessage[], ranges: readonly WindowRange[]): number {
  for (const { from, to, kind } of ranges) {
    if (kind !== "message") continue;
    for (let i = from; i < to; i++) {
      const message = messages[i];
      if (!isMessageEntry(message) || message.info.role === "assistant" || !Array.isArray(message.parts)) continue;
      if ((message.parts as unknown[]).some((part) => isPartLike(part) && isPrintedText(part))) return i;
    }
  }
  return -1;
}

/**
 * A message past the budget: its calls decided (newest first), and whether the budget could keep
 * it (then it is built with these decisions) or not (then it is only counted).
 */
function decideCalls(
  message: SessionMessage,
  kind: WindowMessage["kind"],
  index: number,
  pass: BackwardPass,
  read: NewestEnd,
): { decided: ToolDecision[]; build: boolean } {
  const raw: unknown = message.parts;
  const source: readonly unknown[] = Array.isArray(raw) ? raw : [];
  const decided: ToolDecision[] = [];
  const assistant = message.info.role === "assistant";
  // (the newest turn's opening message, when counting began inside that turn: Stage 3 keeps it)
  let build = kind !== "message" || index === read.taskIndex || (!assistant && !read.haveTurnStart);
  for (let i = source.length - 1; i >= 0; i--) {
    const part = source[i];
    if (!isPartLike(part)) continue;
    if (part.type === "tool") {
      if (isExcludedCall(part, pass.excludeCallID)) continue;
      const decision = pass.decider.decide(part);
      decided.push(decision);
      if (decision.status === "completed" || decision.status === "error") {
        if (decision.tier === 1 || decision.userAnswer) build = true;
      }
      continue;
    }
    if (partTextChars(part) > COUNTED_PART_MAX_CHARS) build = true;
    if (assistant && !read.haveAnswer && isPrintedText(part)) build = true;
  }
  return { decided, build };
}

/** A message past the budget that it cannot keep: its stats and files, as toForkMessage records them; whether it prints anything. */
function countForkMessage(
  message: SessionMessage,
  index: number,
  kind: WindowMessage["kind"],
  pass: BackwardPass,
  stats: ProcessingStats,
  decided: readonly ToolDecision[],
): boolean {
  const raw: unknown = message.parts;
  const source: readonly unknown[] = Array.isArray(raw) ? raw : [];
  if (raw != null && !Array.isArray(raw)) stats.malformedParts++;
  let printed = false;
  let call = 0;
  for (let i = source.length - 1; i >= 0; i--) {
    const part = source[i];
    if (!isPartLike(part)) {
      if (part != null) stats.malformedParts++;
      continue;
    }
    if (part.type === "tool") {
      pass.files.addCall(part, index, i);
      if (!isExcludedCall(part, pass.excludeCallID)) {
        countForkToolPart(part, decided[call++]!, stats);
        printed = true;
      }
      continue;
    }
    if (countForkPart(part, stats)) printed = true;
  }
  // A compaction request always prints (as one), even without its part.
  return printed || kind === "compaction";
}

/**
 * Stages 1–2. Stage 1 keeps the window the parent model sees after its latest completed compaction;
 * Stage 2 dedups repeated calls and cuts tool results by tier. Messages left with nothing to print
 * (only reasoning and steps, or only the excluded call) are dropped. Entries without `info` are
 * skipped (they cannot be placed in a conversation).
 * `stats.totalChars` stays 0 here: it is set by formatMessagesAsContext.
 *
 * Performance: a long history is mostly big strings with the message objects scattered between
 * them, so every pass over the parts costs a cache miss per part. Stage 2 therefore decides,
 * builds and records files in ONE backward pass (newest first, which is also the order tiers and
 * dedup need); only the messages before the window get a second, files-only, look.
 */
export function processMessagesForFork(messages: readonly SessionMessage[], options: ForkOptions = {}): ProcessResult {
  return processAndMeasure(messages, options).result;
}

/**
 * processMessagesForFork, and the formatted length of every message it returns (measureForkMessage),
 * taken as each message is built: its strings were just read, while measuring them in Stage 3 read
 * every message of a long history again (a cache miss each, about a tenth of the pipeline on long
 * chats). buildForkContext hands both to Stage 3.
 */
export function processAndMeasure(
  messages: readonly SessionMessage[],
  options: ForkOptions = {},
  newestEnd = false,
): { result: ProcessResult; lengths: number[]; suffixFrom?: number } {
  if (!Array.isArray(messages)) {
    const got = messages === null ? "null" : typeof messages;
    throw new TypeError(`The fork pipeline needs the session's messages as an array (what session.messages() returns); it got ${got}.`);
  }
  const stats = createEmptyStats(messages.length);

  const boundary = findCompactionBoundary(messages);
  stats.compactionDetected = boundary.index >= 0;
  stats.compactionSliceIndex = boundary.index;

  // Files count over the whole history: the messages before the window are visited for that only.
  const pass: BackwardPass = {
    decider: new ToolCallDecider(userAnswerToolsOf(options)),
    files: new FileActivityCollector(),
    excludeCallID: options.excludeCallID,
  };
  const beforeWindow = historyBeforeWindow(boundary);
  for (let i = 0; i < beforeWindow; i++) {
    const message = messages[i];
    if (isMessageEntry(message)) pass.files.addMessage(message, i);
  }

  const ranges = windowRanges(messages, boundary);
  const read: NewestEnd | undefined = newestEnd
    ? { taskIndex: taskStatementIndex(messages, ranges), builtChars: 0, suffixFrom: undefined, haveAnswer: false, haveTurnStart: false }
    : undefined;
  const forkMessages: ForkMessage[] = [];
  const lengths: number[] = [];
  let counting = false;
  for (let r = ranges.length - 1; r >= 0; r--) {
    const { from, to, kind } = ranges[r]!;
    for (let i = to - 1; i >= from; i--) {
      const message = messages[i];
      if (!isMessageEntry(message)) continue;
      if (counting) {
        const { decided, build } = decideCalls(message, kind, i, pass, read!);
        if (!build) {
          if (countForkMessage(message, i, kind, pass, stats, decided)) {
            forkMessages.push({ info: message.info, role: message.info.role === "assistant" ? "assistant" : "user", kind, parts: [] });
            lengths.push(0);
          }
          continue;
        }
        const forkMessage = toForkMessage(message, i, kind, pass, stats, decided);
        if (forkMessage.parts.length > 0) {
          if (forkMessage.role === "assistant" && forkMessage.parts.some((p) => p.kind === "text")) read!.haveAnswer = true;
          if (forkMessage.role === "user" && kind === "message") read!.haveTurnStart = true;
          forkMessages.push(forkMessage);
          lengths.push(measureForkMessage(forkMessage));
        }
        continue;
      }
      const forkMessage = toForkMessage(message, i, kind, pass, stats);
      if (forkMessage.parts.length > 0) {
        forkMessages.push(forkMessage);
        const length = measureForkMessage(forkMessage);
        lengths.push(length);
        if (read) {
          if (forkMessage.role === "assistant" && forkMessage.parts.some((p) => p.kind === "text")) read.haveAnswer = true;
          read.builtChars += Math.min(length, FORK_FAIR_SHARE);
          const opensTurn = forkMessage.role === "user" && kind === "message";
          if (opensTurn) read.haveTurnStart = true;
          // The messages from here on fill the budget, and this one opens a turn (older turns go whole)
          // or no turn opened yet (older messages of the newest turn go first, its opening one stays):
          // older messages are only counted.
          if (read.builtChars > FORK_CHAR_BUDGET && (opensTurn || !read.haveTurnStart)) {
            counting = true;
            read.suffixFrom = forkMessages.length;
          }
        }
      }
    }
  }
  forkMessages.reverse();
  lengths.reverse();

  const files = pass.files.result();
  stats.filesRead = files.filesRead;
  stats.filesModified = files.filesModified;
  stats.finalCount = forkMessages.length;
  const result = { result: { messages: forkMessages, stats }, lengths };
  // (counted from the newest end until now: the first message built in full, from the oldest end)
  return read?.suffixFrom === undefined ? result : { ...result, suffixFrom: forkMessages.length - read.suffixFrom };
}
