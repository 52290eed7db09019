// Repeated identical calls (same tool, same input) are common: the agent re-reads a file or re-runs
// the tests. Only the newest result says what is true now; older copies become a one-line pointer so
// they stop taking space and tier slots.

import { FORK_MAX_INPUT_DEPTH } from "./constants.js";

/** What an older copy of a repeated call shows instead of its result. */
export const SUPERSEDED_RESULT = "[same call repeated later; see the newer result]";

/** What a value nested deeper than FORK_MAX_INPUT_DEPTH prints as (a JSON string). */
export const TOO_DEEP_MARKER = "[nested too deep]";

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
    out.text += `${first ? "" : ","}${JSON.stringify(key)}:`;
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
  if (depth >= FORK_MAX_INPUT_DEPTH) return false;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (!withinDepth(value[i], depth + 1)) return false;
    return true;
  }
  for (const key in value as Record<string, unknown>) {
    if (!withinDepth((value as Record<string, unknown>)[key], depth + 1)) return false;
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
      sum = (sum + code) | 0;
      at = 0;
      continue;
    }
    sum = (sum + mixChar(code, at++)) | 0;
  }
  return (Math.imul(sum, 31) + n) & 0x3fffffff; // a small integer (Smi): no number object per key
}

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

/**
 * Remembers calls by tool and input, key order ignored (`{a, b}` and `{b, a}` are the same call).
 * Per tool, one map from the fingerprint of the printed JSON (JSON.stringify, computed anyway) to
 * that JSON: an identical call finds it at once. Only when two different calls share a fingerprint
 * (the same characters, maybe in another order: rare) are canonical (sorted-keys) forms built, each
 * call's at most once. One map operation per call; linear in the size of the inputs.
 */
export class CallRegistry {
  private readonly tools = new Map<string, Map<number, string | CanonicalSet>>();

  /** True if this call was seen before (same tool, same input up to key order); records it otherwise. */
  seenBefore(tool: string, input: unknown, inputJson: string = canonicalJson(input ?? {})): boolean {
    let calls = this.tools.get(tool);
    if (!calls) this.tools.set(tool, (calls = new Map()));
    const key = fingerprint(inputJson);
    const entry = calls.get(key);
    if (entry === undefined) {
      calls.set(key, inputJson);
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
      calls.set(key, set);
    }
    set.printed.add(inputJson);
    const canonical = canonicalInput(input, inputJson);
    if (set.forms.has(canonical)) return true;
    set.forms.add(canonical);
    return false;
  }
}

/**
 * Canonical form of a call's input. `inputJson` (JSON.stringify of the input, which the caller
 * prints anyway) is reused when the keys are already sorted.
 */
export function canonicalInput(input: unknown, inputJson?: string): string {
  const value = input ?? {};
  return inputJson !== undefined && hasSortedKeys(value) ? inputJson : canonicalJson(value);
}
