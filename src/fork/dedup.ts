// Repeated identical calls (same tool, same input) are common: the agent re-reads a file or re-runs
// the tests. Only the newest result says what is true now; older copies become a one-line pointer so
// they stop taking space and tier slots.

import { FORK_MAX_INPUT_DEPTH } from "./constants.js";
import { type InputWalk, walkInput } from "./input.js";

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

/**
 * The JSON being built, as pieces joined once at the end (one flat string): appending to a string
 * made a link object per piece, about 1.4 KB for the 100-char prefix of a deeply nested input.
 */
interface JsonOut {
  pieces: string[];
  /** total length of the pieces */
  length: number;
  /** stop appending once the pieces are longer than this */
  max: number;
}

function append(out: JsonOut, piece: string): void {
  out.pieces.push(piece);
  out.length += piece.length;
}

function appendBounded(value: unknown, sortKeys: boolean, depth: number, out: JsonOut): void {
  if (out.length > out.max) return;
  if (typeof value === "bigint") {
    append(out, JSON.stringify(String(value)));
    return;
  }
  if (typeof value === "string") {
    append(out, quoted(value));
    return;
  }
  if (typeof value === "number") {
    append(out, Number.isFinite(value) ? String(value) : "null"); // as JSON.stringify, without its call
    return;
  }
  if (value === null || typeof value !== "object") {
    append(out, JSON.stringify(value) ?? "null");
    return;
  }
  if (depth >= FORK_MAX_INPUT_DEPTH) {
    append(out, JSON.stringify(TOO_DEEP_MARKER));
    return;
  }
  // Built by small appends: inputs are small objects, and this runs once per call of the history.
  // Past the bound nothing more is appended, closing brackets included (a prefix is all that is read).
  if (Array.isArray(value)) {
    append(out, "[");
    for (let i = 0; i < value.length && out.length <= out.max; i++) {
      const item: unknown = value[i];
      if (i) append(out, ",");
      if (item === undefined || typeof item === "function" || typeof item === "symbol") append(out, "null");
      else appendBounded(item, sortKeys, depth + 1, out);
    }
    if (out.length <= out.max) append(out, "]");
    return;
  }
  const record = value as Record<string, unknown>;
  append(out, "{");
  let first = true;
  if (!sortKeys && isPlainRecord(record)) {
    // for-in lists the same keys in the same order as Object.keys for a plain object (own keys, no
    // enumerable inherited ones), without making an array of them per object
    for (const key in record) {
      if (out.length > out.max) return;
      if (appendMember(record, key, first, sortKeys, depth, out)) first = false;
    }
  } else {
    const keys = Object.keys(record);
    if (sortKeys && keys.length > 1) keys.sort();
    for (const key of keys) {
      if (out.length > out.max) return;
      if (appendMember(record, key, first, sortKeys, depth, out)) first = false;
    }
  }
  if (out.length <= out.max) append(out, "}");
}

/** One member of an object being printed (`"key":value`); false for one JSON.stringify leaves out. */
function appendMember(record: Record<string, unknown>, key: string, first: boolean, sortKeys: boolean, depth: number, out: JsonOut): boolean {
  const member = record[key];
  if (member === undefined || typeof member === "function" || typeof member === "symbol") return false;
  append(out, memberPrefix(key, first));
  appendBounded(member, sortKeys, depth + 1, out);
  return true;
}

/** An object whose for-in keys are its own: a plain object's prototype holds nothing enumerable. */
function isPlainRecord(record: object): boolean {
  const prototype: unknown = Object.getPrototypeOf(record);
  return prototype === null || (prototype === Object.prototype && !PROTOTYPE_HAS_ENUMERABLE);
}

/** Whether something added an enumerable property to Object.prototype (nothing should). */
const PROTOTYPE_HAS_ENUMERABLE = (() => {
  for (const _ in Object.prototype) return true;
  return false;
})();

// The printed `"key":` of the keys met last, with and without the comma before it: the same few
// keys open every member of every nested input, and printing them anew cost three strings each.
const PREFIX_SLOTS = 64;
const prefixKeys: (string | undefined)[] = new Array<string | undefined>(PREFIX_SLOTS).fill(undefined);
const firstPrefixes: string[] = new Array<string>(PREFIX_SLOTS).fill("");
const laterPrefixes: string[] = new Array<string>(PREFIX_SLOTS).fill("");
const stringObjectOpenings: string[] = new Array<string>(PREFIX_SLOTS).fill("");

function prefixSlot(key: string): number {
  const n = key.length;
  const slot = (n * 7 + (n > 0 ? key.charCodeAt(0) + key.charCodeAt(n - 1) : 0)) & (PREFIX_SLOTS - 1);
  if (prefixKeys[slot] !== key) {
    prefixKeys[slot] = key;
    firstPrefixes[slot] = `${quoted(key)}:`;
    laterPrefixes[slot] = `,${firstPrefixes[slot]}`;
    stringObjectOpenings[slot] = `{${firstPrefixes[slot]}"`;
  }
  return slot;
}

/** `"key":` (first member) or `,"key":`, as printed before a member's value. */
export function memberPrefix(key: string, first: boolean): string {
  const slot = prefixSlot(key);
  return first ? firstPrefixes[slot]! : laterPrefixes[slot]!;
}

/**
 * JSON of `{[key]: value}`, `value` a string JSON prints as it is (plainJsonString): two links, where
 * building it member by member made five. The printed input of every call is kept until the block
 * is built; on a message of 100,000 calls their links were most of what the young generation had
 * to copy.
 */
export function stringObjectJson(key: string, value: string): string {
  return `${stringObjectOpenings[prefixSlot(key)]!}${value}"}`;
}

/** True when JSON.stringify prints `text` as it is between quotes. */
export function plainJsonString(text: string): boolean {
  return PLAIN_JSON_STRING.test(text);
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
  const out: JsonOut = { pieces: [], length: 0, max: maxChars };
  appendBounded(value, sortKeys, 0, out);
  return out.pieces.length === 1 ? out.pieces[0]! : out.pieces.join("");
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

/** A bucket of calls sharing a hash once two different calls fell in it: their canonical forms. */
class CanonicalForms {
  readonly forms = new Set<string>();
}

/** The calls of one tool. */
class ToolCalls {
  /** canonical JSON of every call whose input prints as an object of plain values (the usual input),
   * and its printed JSON when that differs */
  readonly flat = new Set<string>();
  /** calls whose input prints as one string member (`{filePath}`, `{pattern}`): key → the values
   * seen, kept as they are (no JSON is built or hashed for the commonest input of all) */
  readonly single = new Map<string, Set<string>>();
  /** every other call: hash (walkInput) → the input of the one call seen with it, or the canonical
   * forms of all of them once a second call shares it */
  readonly nested = new Map<number, unknown>();
  /** calls whose printed JSON is nested too deep to walk (a toJSON that returns a deep value) */
  readonly deep = new Set<string>();
}

/**
 * Remembers calls by tool and input, key order ignored (`{a, b}` and `{b, a}` are the same call).
 * An input that prints as an object of plain values (strings, numbers, booleans, null: `{filePath}`,
 * `{command, description}`) is kept by its canonical JSON, which is its printed JSON with the keys
 * sorted: one set operation, and the set hashes natively. Any other input is kept, per tool, in a
 * map from its order-blind hash (walkInput, input.ts, taken anyway to measure it) to the input
 * itself: no string is built for it. Only when two calls share a hash are canonical (sorted-keys)
 * forms built, each call's once. One map operation per call; linear in the size of the inputs.
 */
export class CallRegistry {
  private readonly tools = new Map<string, ToolCalls>();

  private callsOf(tool: string): ToolCalls {
    let calls = this.tools.get(tool);
    if (!calls) this.tools.set(tool, (calls = new ToolCalls()));
    return calls;
  }

  /**
   * True if this call was seen before (same tool, same input up to key order); records it otherwise.
   * `inputJson` is the printed input (JSON.stringify). `plain`: the caller knows the input is an
   * object of plain values and `inputJson` is what flatInputJson (tools.ts) printed for it.
   */
  seenBefore(tool: string, input: unknown, inputJson: string = canonicalJson(input ?? {}), plain = false): boolean {
    const calls = this.callsOf(tool);
    if (plain) {
      const key = singleStringMember(input as Record<string, unknown>);
      if (key !== undefined) return seenSingle(calls, key, (input as Record<string, string>)[key]!);
      // the printed form of a call seen in the same key order is found without sorting; the set
      // holds printed forms next to canonical ones (a printed form out of order is never canonical)
      if (calls.flat.has(inputJson)) return true;
      const canonical = flatCanonicalJson(input as Record<string, unknown>, inputJson);
      if (canonical !== inputJson) calls.flat.add(inputJson);
      return seenForm(calls.flat, canonical);
    }
    let value: unknown = input ?? {};
    let walked = walkInput(value);
    if (!walked.ordinary) {
      // a Date, a toJSON: the call is what it prints as
      value = JSON.parse(inputJson) as unknown;
      walked = walkInput(value);
    }
    if (walked.tooDeep) return seenForm(calls.deep, canonicalJson(value));
    return this.seenWalkedIn(calls, value, walked);
  }

  /**
   * seenBefore for an input of plain values whose printed JSON is canonical already (its keys are in
   * sorted order: `{command, description}`), not one string member: one set lookup, no listing of
   * its keys.
   */
  seenCanonical(tool: string, canonicalJson: string): boolean {
    return seenForm(this.callsOf(tool).flat, canonicalJson);
  }

  /** seenBefore for an input that is one string member `{[key]: value}` (`{filePath}`). */
  seenSingle(tool: string, key: string, value: string): boolean {
    return seenSingle(this.callsOf(tool), key, value);
  }

  /**
   * seenBefore for an input `walked` describes (walkInput(value): ordinary, not too deep), read
   * before any other walk.
   */
  seenWalked(tool: string, value: unknown, walked: InputWalk): boolean {
    return this.seenWalkedIn(this.callsOf(tool), value, walked);
  }

  private seenWalkedIn(calls: ToolCalls, value: unknown, walked: InputWalk): boolean {
    // printed flat although not an object of plain values ({a: undefined}, {a: NaN}): the same call
    // as the plain object it prints as
    if (walked.flat) {
      const key = singleStringMember(value as Record<string, unknown>);
      if (key !== undefined) return seenSingle(calls, key, (value as Record<string, string>)[key]!);
      return seenForm(calls.flat, canonicalJson(value));
    }
    const entry = calls.nested.get(walked.hash);
    if (entry === undefined) {
      calls.nested.set(walked.hash, value ?? {});
      return false;
    }
    if (entry === value) return true; // the very same object (a history that repeats one input)
    let bucket: CanonicalForms;
    if (entry instanceof CanonicalForms) bucket = entry;
    else {
      bucket = new CanonicalForms();
      bucket.forms.add(canonicalJson(entry));
      calls.nested.set(walked.hash, bucket);
    }
    return seenForm(bucket.forms, canonicalJson(value ?? {}));
  }
}

/** The key of an object whose one printed member is a string (undefined members print as nothing). */
function singleStringMember(record: Record<string, unknown>): string | undefined {
  let found: string | undefined;
  for (const key in record) {
    const member = record[key];
    if (member === undefined) continue;
    if (found !== undefined || typeof member !== "string") return undefined;
    found = key;
  }
  return found;
}

function seenSingle(calls: ToolCalls, key: string, value: string): boolean {
  let values = calls.single.get(key);
  if (values === undefined) calls.single.set(key, (values = new Set<string>()));
  return seenForm(values, value);
}

function seenForm(forms: Set<string>, canonical: string): boolean {
  if (forms.has(canonical)) return true;
  forms.add(canonical);
  return false;
}
