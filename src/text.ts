// Text sanitising for what the plugin puts into titles, notices and wake prompts. Pure, no I/O.
//
// Model-written text (a description, a child's answer, an error message) must not carry terminal
// escapes, invisible characters, or line breaks that could start a line of the plugin's own format
// (`[background task …]`, `status: …`, `Full result: …`). Everything here is one linear pass over
// the text: no regular expressions, no backtracking.

/** What every line of a quoted block starts with (see quoteBlock). */
export const QUOTE_INDENT = "  ";

const ESC = 0x1b;
const BEL = 0x07;

/** What a code point becomes: dropped, a line break, other whitespace, or kept. */
const enum Kind {
  Drop,
  Break,
  Space,
  Keep,
}

function kind(cp: number): Kind {
  if (cp === 0x0a || cp === 0x0b || cp === 0x0c || cp === 0x0d || cp === 0x85 || cp === 0x2028 || cp === 0x2029) return Kind.Break;
  if (cp === 0x09 || cp === 0x20 || cp === 0xa0 || cp === 0x1680 || (cp >= 0x2000 && cp <= 0x200a) || cp === 0x202f || cp === 0x205f || cp === 0x3000) {
    return Kind.Space;
  }
  if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f)) return Kind.Drop; // C0, DEL, C1 (BEL, ESC included)
  if (cp >= 0xd800 && cp <= 0xdfff) return Kind.Drop; // a lone surrogate
  if (cp >= 0x200b && cp <= 0x200f) return Kind.Drop; // zero-width space/joiners, LRM, RLM
  if (cp >= 0x202a && cp <= 0x202e) return Kind.Drop; // bidi embeddings and overrides
  if (cp >= 0x2060 && cp <= 0x2064) return Kind.Drop; // word joiner, invisible operators
  if (cp >= 0x2066 && cp <= 0x2069) return Kind.Drop; // bidi isolates
  if (cp === 0x061c || cp === 0x180e || cp === 0xfeff || cp === 0x00ad) return Kind.Drop; // ALM, MVS, BOM, soft hyphen
  if (cp >= 0xe0000 && cp <= 0xe007f) return Kind.Drop; // tag characters (invisible text)
  return Kind.Keep;
}

/**
 * Where the escape sequence starting at `i` ends (the index after it). `i` holds ESC or a C1
 * introducer. CSI runs to its final byte; OSC, DCS, SOS, PM and APC run to BEL or ST (ESC \ or
 * U+009C), and at most to the end of the line, so a stray introducer cannot swallow the rest of a
 * text; any other ESC takes its intermediate bytes and one final byte.
 */
function escapeEnd(text: string, i: number): number {
  const n = text.length;
  const first = text.charCodeAt(i);
  let j = i + 1;
  let type: "csi" | "string" | "short" | "none";
  if (first === ESC) {
    const next = j < n ? text.charCodeAt(j) : -1;
    if (next === 0x5b) type = "csi";
    else if (next === 0x5d || next === 0x50 || next === 0x58 || next === 0x5e || next === 0x5f) type = "string";
    else type = "short";
    if (type !== "short") j++;
  } else if (first === 0x9b) type = "csi";
  else if (first === 0x9d || first === 0x90 || first === 0x98 || first === 0x9e || first === 0x9f) type = "string";
  else type = "none";

  if (type === "csi") {
    while (j < n) {
      const c = text.charCodeAt(j);
      if (c >= 0x40 && c <= 0x7e) return j + 1; // final byte
      if (c < 0x20 || c > 0x3f) return j; // not part of a CSI: the sequence was cut off here
      j++;
    }
    return j;
  }
  if (type === "string") {
    while (j < n) {
      const c = text.charCodeAt(j);
      if (c === BEL || c === 0x9c) return j + 1;
      if (c === ESC) return j + 1 < n && text.charCodeAt(j + 1) === 0x5c ? j + 2 : j;
      if (c === 0x0a || c === 0x0d) return j;
      j++;
    }
    return j;
  }
  if (type === "short") {
    while (j < n) {
      const c = text.charCodeAt(j);
      if (c >= 0x20 && c <= 0x2f) {
        j++; // intermediate byte
        continue;
      }
      return c >= 0x30 && c <= 0x7e ? j + 1 : j;
    }
    return j;
  }
  return i + 1;
}

function isEscapeStart(cp: number): boolean {
  return cp === ESC || cp === 0x9b || cp === 0x9d || cp === 0x90 || cp === 0x98 || cp === 0x9e || cp === 0x9f;
}

/**
 * Walks `text` once, calling `emit` with each kept piece and its kind; when `emit` returns true the
 * walk ends early (oneLine stops once it knows the text is cut).
 */
function scan(text: string, emit: (piece: string, k: Kind.Break | Kind.Space | Kind.Keep) => boolean | void): void {
  const n = text.length;
  let i = 0;
  while (i < n) {
    const cp = text.codePointAt(i)!;
    if (isEscapeStart(cp)) {
      i = escapeEnd(text, i);
      continue;
    }
    const size = cp > 0xffff ? 2 : 1;
    const k = kind(cp);
    if (k === Kind.Break && cp === 0x0d && i + 1 < n && text.charCodeAt(i + 1) === 0x0a) {
      i += 2; // CRLF is one break
      if (emit("\n", Kind.Break)) return;
      continue;
    }
    i += size;
    if (k === Kind.Drop) continue;
    if (emit(k === Kind.Keep ? text.slice(i - size, i) : k === Kind.Break ? "\n" : text.slice(i - size, i), k)) return;
  }
}

/** Cuts `text` to at most `max` UTF-16 units without splitting a surrogate pair. */
function cutUnits(text: string, max: number): string {
  if (text.length <= max) return text;
  let end = Math.max(0, max);
  const last = text.charCodeAt(end - 1);
  if (end > 0 && last >= 0xd800 && last <= 0xdbff) end--;
  return text.slice(0, end);
}

/**
 * One line of plain text, at most `max` characters (UTF-16 units, as `String.length` counts; a
 * surrogate pair is never split): escape sequences, control, zero-width and bidi characters
 * removed, every run of whitespace (line breaks, tabs, U+2028/2029 included) one space, trimmed.
 * A longer text is cut and ends with "…"; `cut` says so.
 */
export function oneLine(text: string, max: number): { text: string; cut: boolean } {
  const limit = Math.max(0, Math.floor(max));
  let out = "";
  let pendingSpace = false;
  let over = false;
  scan(text, (piece, k) => {
    if (k !== Kind.Keep) {
      pendingSpace = out.length > 0;
      return false;
    }
    if (pendingSpace) out += " ";
    pendingSpace = false;
    out += piece;
    over = out.length > limit;
    return over; // no trailing space is ever pending in `out`, so past the limit the text is cut
  });
  if (!over) return { text: out, cut: false };
  if (limit === 0) return { text: "", cut: true };
  return { text: `${cutUnits(out, limit - 1).trimEnd()}…`, cut: true };
}

/**
 * Multi-line text as lines: escape sequences, control, zero-width and bidi characters removed; line
 * breaks (CRLF, CR, U+2028/2029, NEL, VT, FF) split lines; tabs and spaces are kept, trailing
 * whitespace of each line is removed; leading and trailing blank lines are dropped.
 */
export function cleanLines(text: string): string[] {
  const lines: string[] = [];
  let line = "";
  scan(text, (piece, k) => {
    if (k === Kind.Break) {
      lines.push(line.trimEnd());
      line = "";
    } else line += piece;
  });
  lines.push(line.trimEnd());
  let start = 0;
  let end = lines.length;
  while (start < end && lines[start] === "") start++;
  while (end > start && lines[end - 1] === "") end--;
  return lines.slice(start, end);
}

/** Lines from cleanLines, each non-empty one starting with QUOTE_INDENT. */
export function quoteLines(lines: readonly string[]): string[] {
  return lines.map((line) => (line === "" ? "" : QUOTE_INDENT + line));
}

/**
 * Neutralises multi-line text that goes into a notice or wake prompt (a child's answer, an error):
 * cleaned as in cleanLines, and every non-empty line starts with QUOTE_INDENT, so no line of it can
 * start a line of the plugin's own format (`[background task …]`, `status: …`, `Full result: …`).
 */
export function quoteBlock(text: string): string {
  return quoteLines(cleanLines(text)).join("\n");
}

/**
 * `label` followed by multi-line text: the text's first line goes on the label's line, the others
 * are indented as in quoteBlock. For "error: <message>".
 */
export function afterLabel(label: string, text: string): string {
  const [first, ...rest] = cleanLines(text);
  if (first === undefined) return label;
  return [`${label} ${first.trimStart()}`, ...quoteLines(rest)].join("\n");
}
