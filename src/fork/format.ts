// How ForkMessages are printed inside the <inherited_context> block. The budget stage works on
// measured lengths (measureForkMessage); each message it keeps is formatted once into one string.

import { FORK_HEAD_RATIO, FORK_TAIL_RATIO } from "./constants.js";
import { headTailSeparator, safeHeadEnd, safeTailStart } from "./truncation.js";
import type { ForkMessage, ForkPart } from "./types.js";

export const CONTEXT_OPEN = "<inherited_context>\n";
export const CONTEXT_CLOSE = "\n</inherited_context>";
/** Between two entries (messages or removal markers) of the block. */
export const ENTRY_SEPARATOR = "\n\n";

// Content quoting the block's tags (a file about this plugin, a test fixture) must not close or
// open our block: the `<` of such a tag is replaced.
/** U+2039, one UTF-16 unit like `<`: neutralising never changes a length the budget relies on. */
const NEUTRAL_ANGLE = "\u2039";
const TAG_NAME = "inherited_context";

/** Exactly the characters of the regex class `\s`, so the rule reads as "blanks allowed". */
function isBlank(code: number): boolean {
  if (code <= 0x20) return code === 0x20 || (code >= 0x09 && code <= 0x0d);
  return (
    code === 0xa0 ||
    code === 0x1680 ||
    (code >= 0x2000 && code <= 0x200a) ||
    code === 0x2028 ||
    code === 0x2029 ||
    code === 0x202f ||
    code === 0x205f ||
    code === 0x3000 ||
    code === 0xfeff
  );
}

const NAME_TO_UNDERSCORE = TAG_NAME.indexOf("_");

/** True when `inherited_context` (ASCII letters in any case) starts at `at`. */
function tagNameAt(text: string, at: number): boolean {
  if (at + TAG_NAME.length > text.length) return false;
  if (text.startsWith(TAG_NAME, at)) return true; // the usual spelling, compared natively
  for (let k = 0; k < TAG_NAME.length; k++) {
    const code = text.charCodeAt(at + k);
    const want = TAG_NAME.charCodeAt(k);
    // letters compare without case (ASCII only, as a non-unicode /i regex does); "_" exactly
    if (code !== want && !(want >= 0x61 && want <= 0x7a && code === want - 0x20)) return false;
  }
  return true;
}

/**
 * Replaces the `<` of any <inherited_context> / </inherited_context> tag (any case, blanks allowed
 * around the `/`) with `‹`. A hand-written scan, linear in the text: it jumps from one `_c`/`_C` to
 * the next (native indexOf), and only where `inherited_context` is spelled does it walk back over
 * blanks, an optional `/` and blanks to a `<`. The blanks before one name are walked by that name
 * only, so no character is looked at more than a few times. (The lookahead regex it replaces went
 * back over the blanks after a `<` for every way of splitting them: quadratic, 22 s on one 150 KB
 * tool output; a forward scan from every `<` is linear too but slow on `<`-heavy text.)
 */
export function neutraliseContextTags(text: string): string {
  const pieces: string[] = [];
  return neutraliseContextTagsInto(text, pieces) ? pieces.join("") : text;
}

/**
 * neutraliseContextTags(text), appended to `out` as pieces (stretches of the text and the
 * replacement characters) for the caller to join once with the rest of the block: on tag-heavy
 * text, a string per message (or a rope of thousands of pieces) cost as much again as the scan.
 * Returns true when something was replaced (the text alone was appended otherwise).
 */
export function neutraliseContextTagsInto(text: string, out: string[]): boolean {
  // every "_c" and "_C", in order: two native searches merged
  let lower = text.indexOf("_c");
  let upper = text.indexOf("_C");
  let from = 0;
  while (lower >= 0 || upper >= 0) {
    let u: number;
    if (upper < 0 || (lower >= 0 && lower < upper)) {
      u = lower;
      lower = text.indexOf("_c", u + 1);
    } else {
      u = upper;
      upper = text.indexOf("_C", u + 1);
    }
    const start = u - NAME_TO_UNDERSCORE;
    if (start < 1 || !tagNameAt(text, start)) continue;
    let j = start - 1;
    while (j >= from && isBlank(text.charCodeAt(j))) j--;
    if (j >= from && text.charCodeAt(j) === 0x2f) {
      j--;
      while (j >= from && isBlank(text.charCodeAt(j))) j--;
    }
    if (j >= from && text.charCodeAt(j) === 0x3c) {
      if (j > from) out.push(text.slice(from, j));
      out.push(NEUTRAL_ANGLE);
      from = j + 1;
    }
  }
  out.push(from === 0 ? text : text.slice(from));
  return from > 0;
}

/**
 * Every tag this neutralises contains "_c" or "_C"; two indexOf scans are several times faster than
 * the case-insensitive regex, and almost no text has either.
 */
export function mayHoldContextTag(text: string): boolean {
  // one search for "_" first: most texts (paths, prose) have none, and it halves the calls per part
  return text.indexOf("_") >= 0 && (text.indexOf("_c") >= 0 || text.indexOf("_C") >= 0);
}

/** The label line of a message. */
export function roleLabel(message: ForkMessage): string {
  if (message.kind === "compaction") return "[user: compaction request]";
  if (message.kind === "summary") return "[assistant: compaction summary]";
  return message.role === "assistant" ? "[assistant]" : "[user]";
}

/** The label line above a tool's result. */
export function resultLabel(part: Extract<ForkPart, { kind: "tool" }>): string {
  return part.status === "error" ? "[error]" : "[result]";
}

/** The main content of a part: what the budget may cut when one message alone is too big. */
export function partBody(part: ForkPart): string {
  return part.kind === "tool" ? part.result : part.text;
}

/** A copy of the part with another body. */
export function withPartBody(part: ForkPart, body: string): ForkPart {
  // Built field by field (a spread is several times slower, and this runs per cut body); only the
  // fields formatting reads are kept, `tier` only when the part has one.
  if (part.kind !== "tool") return { kind: part.kind, text: body };
  const { tool, callID, input, status, tier } = part;
  if (part.userAnswer) return { kind: "tool", tool, callID, input, result: body, status, userAnswer: true };
  return tier === undefined ? { kind: "tool", tool, callID, input, result: body, status } : { kind: "tool", tool, callID, input, result: body, status, tier };
}

const EMPTY_RESULT = "(empty output)";
const TOOL_PREFIX = "[tool: ";
const TOOL_INPUT_SEPARATOR = "] ";

// formatPart and measurePart MUST agree: the budget plans with measured lengths and only formats
// the messages it keeps (see context.ts). A unit test checks them against each other.

export function formatPart(part: ForkPart): string {
  if (part.kind !== "tool") return part.text;
  const result = part.result.length > 0 ? part.result : EMPTY_RESULT;
  return `${TOOL_PREFIX}${part.tool}${TOOL_INPUT_SEPARATOR}${part.input}\n${resultLabel(part)}\n${result}`;
}

/** formatPart(part).length, without building the string. */
export function measurePart(part: ForkPart): number {
  if (part.kind !== "tool") return part.text.length;
  const result = part.result.length > 0 ? part.result.length : EMPTY_RESULT.length;
  return TOOL_PREFIX.length + part.tool.length + TOOL_INPUT_SEPARATOR.length + part.input.length + 1 + resultLabel(part).length + 1 + result;
}

/** One message → one string: its label line, then each part on its own line(s). */
export function formatForkMessage(message: ForkMessage): string {
  const pieces: string[] = [];
  formatForkMessageInto(message, pieces);
  return pieces.length === 1 ? pieces[0]! : pieces.join("");
}

/**
 * formatForkMessage(message), appended to `out` as pieces for the caller to join once with the
 * whole block. A handful of appends per message (never a loop over huge strings): V8 links them
 * as a rope. The tag check runs on the pieces, which are mostly flat strings already (a whole
 * tool output), so the rope is only flattened early when a piece may hold a tag. No tag can
 * straddle two pieces: the glue between them ("\n", "] ", "[tool: ") cannot complete the "_c"
 * every tag contains (the message is still neutralised as a whole: the blanks and `/` before a
 * name may come from the piece before).
 */
export function formatForkMessageInto(message: ForkMessage, out: string[]): void {
  let suspicious = false;
  let cleanTool: string | undefined; // a tool name checked already (a message of many calls repeats it)
  for (const part of message.parts) {
    if (part.kind === "tool") {
      if (part.tool !== cleanTool) {
        if (mayHoldContextTag(part.tool)) suspicious = true;
        else cleanTool = part.tool;
      }
      suspicious ||= mayHoldContextTag(part.input) || mayHoldContextTag(part.result);
    } else suspicious ||= mayHoldContextTag(part.text);
    if (suspicious) break;
  }
  if (suspicious) {
    let text = roleLabel(message);
    for (const part of message.parts) text += `\n${formatPart(part)}`;
    neutraliseContextTagsInto(text, out); // length-preserving
    return;
  }
  // Nothing to neutralise: short pieces appended into one string, long bodies (whole tool outputs,
  // strings of the history) pushed as they are, for the caller to copy or link once.
  let text = roleLabel(message);
  for (const part of message.parts) {
    let body: string;
    if (part.kind === "tool") {
      body = part.result.length > 0 ? part.result : EMPTY_RESULT;
      text += `\n${TOOL_PREFIX}${part.tool}${TOOL_INPUT_SEPARATOR}${part.input}\n${resultLabel(part)}\n`;
    } else {
      body = part.text;
      text += "\n";
    }
    if (body.length < LONG_BODY) text += body;
    else {
      out.push(text, body);
      text = "";
    }
  }
  if (text) out.push(text);
}

/** A body at least this long is a piece of its own in formatForkMessageInto. */
const LONG_BODY = 1024;

/**
 * truncateWithStrategy(formatForkMessage(message), keep, true), without building the whole message:
 * only the parts that reach into the head (FORK_HEAD_RATIO of `keep`) and the tail are formatted.
 * Step 4 of the budget uses it on messages of thousands of calls. The head and the tail are each
 * neutralised; the separator between them cannot complete a tag. `full` is the message's measured
 * length when the caller has it (measuring a message of thousands of calls again reads every one).
 */
export function formatForkMessageCut(message: ForkMessage, keep: number, full = measureForkMessage(message)): string {
  if (full <= keep) return formatForkMessage(message);
  const budget = Math.max(0, Math.floor(keep));
  const headWant = Math.floor(budget * FORK_HEAD_RATIO);
  const tailWant = Math.floor(budget * FORK_TAIL_RATIO);
  const parts = message.parts;
  // head: whole pieces until one character past the cut (safeHeadEnd looks at both sides of it)
  let head = roleLabel(message);
  for (let i = 0; head.length <= headWant && i < parts.length; i++) head += `\n${formatPart(parts[i]!)}`;
  // tail: whole pieces from the end until one character before the cut
  let tail = "";
  let i = parts.length - 1;
  for (; tail.length <= tailWant && i >= 0; i--) tail = `\n${formatPart(parts[i]!)}${tail}`;
  if (tail.length <= tailWant) tail = roleLabel(message) + tail;
  const headText = head.slice(0, safeHeadEnd(head, headWant));
  const tailText = tail.slice(safeTailStart(tail, tail.length - tailWant));
  const removed = full - headText.length - tailText.length;
  return neutraliseContextTags(headText) + headTailSeparator(removed) + neutraliseContextTags(tailText);
}

/** formatForkMessage(message).length, without building the string. */
export function measureForkMessage(message: ForkMessage): number {
  let length = roleLabel(message).length;
  for (const part of message.parts) length += 1 + measurePart(part);
  return length;
}

/** The whole block from its entries (formatted messages and marker lines). */
export function assembleContext(entries: readonly string[]): string {
  return CONTEXT_OPEN + entries.join(ENTRY_SEPARATOR) + CONTEXT_CLOSE;
}

/** Length of assembleContext(entries) from the sum of entry lengths, without building it. */
export function contextLength(entryChars: number, entryCount: number): number {
  return CONTEXT_OPEN.length + CONTEXT_CLOSE.length + entryChars + ENTRY_SEPARATOR.length * Math.max(0, entryCount - 1);
}
