// Repeated identical calls (same tool, same input) are common: the agent re-reads a file or re-runs
// the tests. Only the newest result says what is true now; older copies become a one-line pointer so
// they stop taking space and tier slots.

import { FORK_MAX_INPUT_DEPTH } from "./constants.js";

/** What an older copy of a repeated call shows instead of its result. */
export const SUPERSEDED_RESULT = "[same call repeated later; see the newer result]";

/** What a value nested deeper than FORK_MAX_INPUT_DEPTH prints as (a JSON string). */
export const TOO_DEEP_MARKER = "[nested too deep]";

// Strings JSON.stringify prints unchanged between quotes: no quote, backslash, control character or
// surrogate (a lone one is escaped). One character class, anchored: no backtracking.
const PLAIN_JSON_STRING = /^[^"\\\u0000-\u001f\ud800-\udfff]*$/;

/** JSON.stringify(text), built directly when nothing needs escaping (the usual key or value). */
export function quoted(text: string): string {
  return PLAIN_JSON_STRING.test(text) ? `"${text}"` : JSON.stringify(text);
}

/** The printed form of a value flatInputJson accepts (a string, finite number, boolean or null). */
function plainValueJson(value: unknown): string {
  if (typeof value === "string") return quoted(value);
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  return "null";
}

/**
 * Canonical (sorted-keys) JSON of an input flatInputJson (tools.ts) printed as `json`: `json` itself when its
 * keys are in order already (the usual case: one key, or `{command, description}`), else the same
 * members in sorted order. Equal to canonicalJson(input), without its general walk.
 */
export function flatCanonicalJson(input: Record<string, unknown>, json: string): string {
  const keys = Object.keys(input);
  let sorted = true;
  for (let i = 1; i < keys.length && sorted; i++) if (!(keys[i - 1]! < keys[i]!)) sorted = false;
  if (sorted) return json;
  keys.sort();
  let out = "{";
  for (let i = 0; i < keys.length; i++) out += `${i ? "," : ""}${quoted(keys[i]!)}:${plainValueJson(input[keys[i]!])}`;
  return `${out}}`;
}

interface JsonOut {
  text: string;
  /** stop appending once text is longer than this */
  max: number;
}

function appendBounded(value: unknown, sortKeys: boolean, depth: number, out: JsonOut): void {
  if (out.text.length > out.max) return;
  if (typeof value === "bigint") {
    out.text += JSON.stringify(String(value));
    return;
  }
  if (typeof value === "string") {
    out.text += quoted(value);
    return;
  }
  if (value === null || typeof value !== "object") {
    out.text += JSON.stringify(value) ?? "null";
    return;
  }
  if (depth >= FORK_MAX_INPUT_DEPTH) {
    out.text += JSON.stringify(TOO_DEEP_MARKER);
    return;
  }
  // Built by small appends: inputs are small objects, and this runs once per call of the history.
  if (Array.isArray(value)) {
    out.text += "[";
    for (let i = 0; i < value.length && out.text.length <= out.max; i++) {
      const item: unknown = value[i];
      if (i) out.text += ",";
      if (item === undefined || typeof item === "function" || typeof item === "symbol") out.text += "null";
      else appendBounded(item, sortKeys, depth + 1, out);
    }
    out.text += "]";
    return;
  }
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record);
  if (sortKeys && keys.length > 1) keys.sort();
  out.text += "{";
  let first = true;
  for (const key of keys) {
    if (out.text.length > out.max) break;
    const member = record[key];
    if (member === undefined || typeof member === "function" || typeof member === "symbol") continue;
    out.text += `${first ? "" : ","}${quoted(key)}:`;
    appendBounded(member, sortKeys, depth + 1, out);
    first = false;
  }
  out.text += "}";
}

/**
 * JSON of `value` with nesting cut at FORK_MAX_INPUT_DEPTH: deeper objects and arrays print as
 * TOO_DEEP_MARKER, so the output (and the stack used) is the same every time, whatever the depth or
 * a cycle. BigInt prints as its digits; functions, symbols and undefined members are skipped as
 * JSON.stringify skips them (null in arrays). With `sortKeys`, object keys are sorted at every level.
 * With `maxChars`, building stops soon after that many characters (the result is then a prefix
 * of the whole, longer than maxChars, not valid JSON): for printing, which cuts it anyway.
 */
export function boundedJson(value: unknown, sortKeys: boolean, maxChars = Number.POSITIVE_INFINITY): string {
  const out: JsonOut = { text: "", max: maxChars };
  appendBounded(value, sortKeys, 0, out);
  return out.text;
}

/**
 * JSON with object keys sorted at every level, so `{a, b}` and `{b, a}` are the same call.
 * `undefined` members are skipped, as JSON.stringify does. Depth-bounded (boundedJson).
 */
export function canonicalJson(value: unknown): string {
  return boundedJson(value, true);
}

/**
 * True when `value` is nested at most FORK_MAX_INPUT_DEPTH deep (a cycle is infinitely deep). Then
 * JSON.stringify of it cannot exhaust the stack, whatever stack the caller runs on.
 */
export function withinDepth(value: unknown, depth = 0): boolean {
  if (value === null || typeof value !== "object") return true;
  return objectWithinDepth(value, depth);
}

/** withinDepth of an object: only members that are objects themselves are visited (no call per leaf). */
function objectWithinDepth(value: object, depth: number): boolean {
  if (depth >= FORK_MAX_INPUT_DEPTH) return false;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i];
      if (item !== null && typeof item === "object" && !objectWithinDepth(item, depth + 1)) return false;
    }
    return true;
  }
  for (const key in value as Record<string, unknown>) {
    const member: unknown = (value as Record<string, unknown>)[key];
    if (member !== null && typeof member === "object" && !objectWithinDepth(member, depth + 1)) return false;
  }
  return true;
}

/** True when every object in `value` lists its keys in sorted order (then JSON.stringify is canonical). */
export function hasSortedKeys(value: unknown, depth = 0): boolean {
  if (value === null || typeof value !== "object") return true;
  if (depth >= FORK_MAX_INPUT_DEPTH) return false;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (!hasSortedKeys(value[i], depth + 1)) return false;
    return true;
  }
  const record = value as Record<string, unknown>;
  let previous: string | undefined;
  for (const key in record) {
    if (previous !== undefined && !(previous < key)) return false;
    if (!hasSortedKeys(record[key], depth + 1)) return false;
    previous = key;
  }
  return true;
}

/**
 * An order-blind fingerprint of a JSON text: the same for any order of the keys, at any level. Each
 * character is weighed by its distance from the last `{ } [ ] , :` outside a string, so a member
 * (`"key":value`) adds the same amount wherever it stands, while texts that only share their
 * characters (`/src/f123.ts` and `/src/f132.ts`, a plain sum of characters could not tell them
 * apart, and path-like inputs collided by the thousand) differ. A small integer, cheap as a key.
 */
export function fingerprint(json: string): number {
  let sum = 0;
  let at = 0; // distance from the last structural character outside a string
  let inString = false;
  let opened = 0; // `{` and `[` outside strings
  const n = json.length;
  for (let i = 0; i < n; i++) {
    let code = json.charCodeAt(i);
    if (inString) {
      if (code === 0x22) inString = false;
      else if (code === 0x5c && i + 1 < n) {
        // an escape: the next character is part of the string, whatever it is
        sum = (sum + mixChar(code, at++)) | 0;
        code = json.charCodeAt(++i);
      }
    } else if (code === 0x22) inString = true;
    else if (code === 0x2c || code === 0x3a || code === 0x7b || code === 0x7d || code === 0x5b || code === 0x5d) {
      if (code === 0x7b || code === 0x5b) opened++;
      sum = (sum + code) | 0;
      at = 0;
      continue;
    }
    sum = (sum + mixChar(code, at++)) | 0;
  }
  lastWasFlatObject = opened === 1 && json.charCodeAt(0) === 0x7b;
  return (Math.imul(sum, 31) + n) & 0x3fffffff; // a small integer (Smi): no number object per key
}

/** Whether the text the last fingerprint was taken of is an object of plain values (no nesting). */
let lastWasFlatObject = false;

function mixChar(code: number, at: number): number {
  let h = Math.imul(code ^ Math.imul(at, 0x10001), 0x9e3779b1);
  h ^= h >>> 15;
  return Math.imul(h, 0x85ebca6b);
}

/** Canonical forms of the calls of one fingerprint, once two different calls share it. */
class CanonicalSet {
  /** printed JSON of the calls seen: a repeat in the same key order is found without sorting */
  readonly printed = new Set<string>();
  readonly forms = new Set<string>();
}

/** Canonical form from the printed JSON (the input itself is not kept): parse and sort. */
function canonicalOfJson(json: string): string {
  return canonicalInput(JSON.parse(json) as unknown, json);
}

/** The calls of one tool. */
class ToolCalls {
  /** canonical JSON of every call whose input is an object of plain values (the usual input), and
   * its printed JSON when that differs */
  readonly flat = new Set<string>();
  /** every other call: fingerprint → printed JSON, or the canonical forms once two share one */
  readonly nested = new Map<number, string | CanonicalSet>();
}

/**
 * Remembers calls by tool and input, key order ignored (`{a, b}` and `{b, a}` are the same call).
 * An input that is an object of plain values (strings, numbers, booleans, null: `{filePath}`,
 * `{command, description}`) is kept by its canonical JSON, which is its printed JSON with the keys
 * sorted: one set operation, and the set hashes natively. Any other input is kept, per tool, in a
 * map from the fingerprint of its printed JSON (JSON.stringify, computed anyway) to that JSON: an
 * identical call finds it at once, and only when two different calls share a fingerprint (the same
 * members in another order: rare) are canonical (sorted-keys) forms built, each call's at most once.
 * The two never hold the same canonical form (one is nested, the other is not). One map operation
 * per call; linear in the size of the inputs.
 */
export class CallRegistry {
  private readonly tools = new Map<string, ToolCalls>();

  /**
   * True if this call was seen before (same tool, same input up to key order); records it otherwise.
   * `plain`: the caller knows the input is an object of plain values and `inputJson` is what
   * flatInputJson (tools.ts) printed for it.
   */
  seenBefore(tool: string, input: unknown, inputJson: string = canonicalJson(input ?? {}), plain = false): boolean {
    let calls = this.tools.get(tool);
    if (!calls) this.tools.set(tool, (calls = new ToolCalls()));
    if (plain) {
      // the printed form of a call seen in the same key order is found without sorting; the set
      // holds printed forms next to canonical ones (a printed form out of order is never canonical)
      if (calls.flat.has(inputJson)) return true;
      const canonical = flatCanonicalJson(input as Record<string, unknown>, inputJson);
      if (canonical !== inputJson) calls.flat.add(inputJson);
      return seenFlat(calls.flat, canonical);
    }
    const key = fingerprint(inputJson);
    // printed flat although the input is not an object of plain values ({a: undefined}, {a: NaN}):
    // the same call as the plain object it prints as
    if (lastWasFlatObject) return seenFlat(calls.flat, canonicalOfJson(inputJson));
    const entry = calls.nested.get(key);
    if (entry === undefined) {
      calls.nested.set(key, inputJson);
      return false;
    }
    if (entry === inputJson) return true;
    let set: CanonicalSet;
    if (entry instanceof CanonicalSet) {
      set = entry;
      if (set.printed.has(inputJson)) return true;
    } else {
      set = new CanonicalSet();
      set.printed.add(entry);
      set.forms.add(canonicalOfJson(entry));
      calls.nested.set(key, set);
    }
    set.printed.add(inputJson);
    const canonical = canonicalInput(input, inputJson);
    if (set.forms.has(canonical)) return true;
    set.forms.add(canonical);
    return false;
  }
}

function seenFlat(flat: Set<string>, canonical: string): boolean {
  if (flat.has(canonical)) return true;
  flat.add(canonical);
  return false;
}

/**
 * Canonical form of a call's input. `inputJson` (JSON.stringify of the input, which the caller
 * prints anyway) is reused when the keys are already sorted.
 */
export function canonicalInput(input: unknown, inputJson?: string): string {
  const value = input ?? {};
  return inputJson !== undefined && hasSortedKeys(value) ? inputJson : canonicalJson(value);
}
