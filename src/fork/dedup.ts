// Repeated identical calls (same tool, same input) are common: the agent re-reads a file or re-runs
// the tests. Only the newest result says what is true now; older copies become a one-line pointer so
// they stop taking space and tier slots.

import { FORK_MAX_INPUT_DEPTH } from "./constants.js";

/** What an older copy of a repeated call shows instead of its result. */
export const SUPERSEDED_RESULT = "[same call repeated later; see the newer result]";

/** What a value nested deeper than FORK_MAX_INPUT_DEPTH prints as (a JSON string). */
export const TOO_DEEP_MARKER = "[nested too deep]";

/**
 * JSON of `value` with nesting cut at FORK_MAX_INPUT_DEPTH: deeper objects and arrays print as
 * TOO_DEEP_MARKER, so the output (and the stack used) is the same every time, whatever the depth or
 * a cycle. BigInt prints as its digits; functions, symbols and undefined members are skipped as
 * JSON.stringify skips them (null in arrays). With `sortKeys`, object keys are sorted at every level.
 */
export function boundedJson(value: unknown, sortKeys: boolean, depth = 0): string {
  if (typeof value === "bigint") return JSON.stringify(String(value));
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  if (depth >= FORK_MAX_INPUT_DEPTH) return JSON.stringify(TOO_DEEP_MARKER);
  // Built by small appends: inputs are small objects, and this runs once per call of the history.
  if (Array.isArray(value)) {
    let out = "[";
    for (let i = 0; i < value.length; i++) {
      const item = value[i];
      const skipped = item === undefined || typeof item === "function" || typeof item === "symbol";
      out += (i ? "," : "") + (skipped ? "null" : boundedJson(item, sortKeys, depth + 1));
    }
    return `${out}]`;
  }
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record);
  if (sortKeys && keys.length > 1) keys.sort();
  let out = "{";
  let first = true;
  for (const key of keys) {
    const member = record[key];
    if (member === undefined || typeof member === "function" || typeof member === "symbol") continue;
    out += `${first ? "" : ","}${JSON.stringify(key)}:${boundedJson(member, sortKeys, depth + 1)}`;
    first = false;
  }
  return `${out}}`;
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
 * Canonical form of a call's input. `inputJson` (JSON.stringify of the input, which the caller
 * prints anyway) is reused when the keys are already sorted, the usual case, so most calls are
 * serialised once.
 */
export function canonicalInput(input: unknown, inputJson?: string): string {
  const value = input ?? {};
  return inputJson !== undefined && hasSortedKeys(value) ? inputJson : canonicalJson(value);
}

/**
 * Remembers calls by tool, then canonical input, without building one key string per call (a
 * history holds thousands of calls, and the plugin runs right after a big JSON.parse: every
 * allocation saved is a garbage collection less).
 */
export class CallRegistry {
  private readonly byTool = new Map<string, Set<string>>();

  /** True if this call was seen before; records it otherwise. */
  seenBefore(tool: string, input: unknown, inputJson?: string): boolean {
    const canonical = canonicalInput(input, inputJson);
    let inputs = this.byTool.get(tool);
    if (!inputs) this.byTool.set(tool, (inputs = new Set()));
    if (inputs.has(canonical)) return true;
    inputs.add(canonical);
    return false;
  }
}
