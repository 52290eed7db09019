// A tool input that is not an object of plain values (flatInputJson, tools.ts) — nested objects,
// arrays — measured in ONE walk over the input object: how deep it goes, how long its JSON is, and
// an order-blind hash of it. The walk builds no string: the block only shows the first 100–500
// chars of an input (printed then by boundedJson), and repeated-call detection only builds a
// canonical form when two calls share a hash. JSON.stringify of a nested input costs about 90 ns a
// level (inputs nested 20–60 levels cost microseconds each); this walk about a fifth of that.
//
// The walk only answers for ORDINARY inputs, those JSON.stringify prints member by member: plain
// objects and arrays (no toJSON, no class instance, no Date), strings, numbers, booleans, null and
// undefined members. Anything else (a BigInt, a function member, a Date) ends the walk with
// `ordinary = false`, and the caller takes the general path (JSON.stringify).

import { FORK_MAX_INPUT_DEPTH } from "./constants.js";

/** What one walk found. Valid until the next walk (one shared object: no allocation per call). */
export interface InputWalk {
  /** false: the input holds something JSON.stringify treats specially; nothing else is set */
  ordinary: boolean;
  /** an object or array nested FORK_MAX_INPUT_DEPTH deep or more (withinDepth is false); length and hash are not set */
  tooDeep: boolean;
  /** JSON.stringify(input).length */
  length: number;
  /** equal for inputs whose JSON is the same up to the order of keys, at any level (a small integer) */
  hash: number;
  /** the JSON is an object of plain values: `{…}` with no `{` or `[` inside */
  flat: boolean;
}

const walk: InputWalk = { ordinary: true, tooDeep: false, length: 0, hash: 0, flat: false };

// Strings JSON.stringify prints unchanged between quotes (as PLAIN_JSON_STRING in dedup.ts).
const PLAIN_JSON_STRING = /^[^"\\\u0000-\u001f\ud800-\udfff]*$/;

const NULL_HASH = 0x2545f491;
const TRUE_HASH = 0x1b873593;
const FALSE_HASH = 0x3c6ef372;
const ARRAY_SEED = 0x5bd1e995;
const OBJECT_SEED = 0x27d4eb2f;
/** A string is hashed by its length and at most this many of its characters, evenly spread. */
const HASHED_CHARS = 32;

/** Hash of the last value walked (a second return value of walkValue, kept out of the heap). */
let lastHash = 0;

function mix(h: number): number {
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return h ^ (h >>> 16);
}

function hashString(text: string): number {
  const n = text.length;
  let h = Math.imul(n, 0x9e3779b1) ^ 0x7f4a7c15;
  const step = n <= HASHED_CHARS ? 1 : Math.floor(n / HASHED_CHARS);
  for (let i = 0; i < n; i += step) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return mix(h ^ text.charCodeAt(n - 1));
}

function quotedLength(text: string): number {
  return PLAIN_JSON_STRING.test(text) ? text.length + 2 : JSON.stringify(text).length;
}

/** A finite number's JSON (String(value)) length and hash; small integers without a string. */
function walkNumber(value: number): number {
  if (value === (value | 0)) {
    lastHash = mix(value ^ 0x6a09e667);
    let length = value < 0 ? 2 : 1;
    for (let rest = Math.abs(value); rest >= 10; rest = Math.floor(rest / 10)) length++;
    return length;
  }
  const text = String(value);
  lastHash = hashString(text) ^ 0x6a09e667;
  return text.length;
}

/** JSON length of `value` (a member, not undefined); sets lastHash. Stops early (returns 0) once the walk is not ordinary or too deep. */
function walkValue(value: unknown, depth: number): number {
  switch (typeof value) {
    case "string":
      lastHash = hashString(value);
      return quotedLength(value);
    case "number":
      if (Number.isFinite(value)) return walkNumber(value);
      lastHash = NULL_HASH; // NaN and ±Infinity print as null
      return 4;
    case "boolean":
      lastHash = value ? TRUE_HASH : FALSE_HASH;
      return value ? 4 : 5;
    case "object":
      if (value === null) {
        lastHash = NULL_HASH;
        return 4;
      }
      return walkObject(value, depth);
    default:
      walk.ordinary = false; // bigint, function, symbol
      return 0;
  }
}

function walkObject(value: object, depth: number): number {
  if (depth >= FORK_MAX_INPUT_DEPTH) {
    walk.tooDeep = true;
    return 0;
  }
  if (Array.isArray(value)) {
    if (Object.getPrototypeOf(value) !== Array.prototype) {
      walk.ordinary = false;
      return 0;
    }
    const n = value.length;
    let length = n > 0 ? n + 1 : 2; // brackets and commas
    let hash = ARRAY_SEED ^ n;
    for (let i = 0; i < n; i++) {
      const item: unknown = value[i];
      if (item === undefined) {
        length += 4; // printed as null
        lastHash = NULL_HASH;
      } else {
        length += walkValue(item, depth + 1);
        if (!walk.ordinary || walk.tooDeep) return 0;
      }
      hash = Math.imul(hash ^ lastHash, 0x01000193) + i; // order matters in an array
    }
    lastHash = mix(hash);
    return length;
  }
  const prototype: unknown = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) {
    walk.ordinary = false; // a Date, a Map, a class instance: JSON.stringify has its own rules
    return 0;
  }
  const record = value as Record<string, unknown>;
  let length = 1; // "{", then one "," or "}" per member
  let members = 0;
  let sum = 0; // members are summed: the order of keys does not count
  for (const key in record) {
    const member = record[key];
    if (member === undefined) continue;
    if (typeof member === "function" || typeof member === "symbol" || key === "toJSON") {
      walk.ordinary = false;
      return 0;
    }
    length += keyLength(key) + 2; // `"key":` and its "," or "}"
    const keyHash = lastKeyHash; // read before the member's walk sets it again
    length += walkValue(member, depth + 1);
    if (!walk.ordinary || walk.tooDeep) return 0;
    sum = (sum + mix(keyHash ^ Math.imul(lastHash, 0x9e3779b1))) | 0;
    members++;
  }
  lastHash = mix(sum ^ OBJECT_SEED ^ members);
  return members > 0 ? length : 2;
}

// Keys repeat (every input of a tool has the same few): their quoted length and hash are kept in a
// small direct-mapped cache, found by identity in the common case.
const KEY_SLOTS = 64;
const cachedKeys: (string | undefined)[] = new Array<string | undefined>(KEY_SLOTS).fill(undefined);
const cachedKeyLengths = new Int32Array(KEY_SLOTS);
const cachedKeyHashes = new Int32Array(KEY_SLOTS);
/** Hash of the last key keyLength measured. */
let lastKeyHash = 0;

/** quotedLength(key), and lastKeyHash set to its hash. */
function keyLength(key: string): number {
  const n = key.length;
  const slot = (n * 7 + (n > 0 ? key.charCodeAt(0) + key.charCodeAt(n - 1) : 0)) & (KEY_SLOTS - 1);
  if (cachedKeys[slot] === key) {
    lastKeyHash = cachedKeyHashes[slot]!;
    return cachedKeyLengths[slot]!;
  }
  const length = quotedLength(key);
  lastKeyHash = hashString(key);
  cachedKeys[slot] = key;
  cachedKeyLengths[slot] = length;
  cachedKeyHashes[slot] = lastKeyHash;
  return length;
}

/** True when the object's members are all plain values (what decides `flat`). */
function holdsNoObject(record: Record<string, unknown>): boolean {
  for (const key in record) {
    const member = record[key];
    if (member !== null && typeof member === "object") return false;
  }
  return true;
}

/**
 * Walks `input` (undefined and null are walked as `{}`, which is what they print as) and returns what
 * it found (see InputWalk). The result object is shared: read it before the next call.
 */
export function walkInput(input: unknown): InputWalk {
  const value = input ?? {};
  // a toJSON on the prototypes (nothing sets one) would be called by JSON.stringify on every object
  walk.ordinary = (Object.prototype as { toJSON?: unknown }).toJSON === undefined && (Array.prototype as { toJSON?: unknown }).toJSON === undefined;
  walk.tooDeep = false;
  walk.length = 0;
  walk.hash = 0;
  walk.flat = false;
  if (!walk.ordinary) return walk;
  let length: number;
  try {
    length = walkValue(value, 0);
  } catch {
    walk.ordinary = false; // a getter that throws: the general path meets it as JSON.stringify does
    return walk;
  }
  if (!walk.ordinary || walk.tooDeep) return walk;
  walk.length = length;
  walk.hash = lastHash & 0x3fffffff; // a small integer (Smi): no number object per key
  walk.flat = typeof value === "object" && !Array.isArray(value) && holdsNoObject(value as Record<string, unknown>);
  return walk;
}
