// Repeated identical calls (same tool, same input) are common: the agent re-reads a file or re-runs
// the tests. Only the newest result says what is true now; older copies become a one-line pointer so
// they stop taking space and tier slots.

/** What an older copy of a repeated call shows instead of its result. */
export const SUPERSEDED_RESULT = "[same call repeated later; see the newer result]";

/**
 * JSON with object keys sorted at every level, so `{a, b}` and `{b, a}` are the same call.
 * `undefined` members are skipped, as JSON.stringify does.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  // Built by small appends: inputs are small objects, and this runs once per call of the history.
  if (Array.isArray(value)) {
    let out = "[";
    for (let i = 0; i < value.length; i++) out += (i ? "," : "") + canonicalJson(value[i]);
    return `${out}]`;
  }
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record);
  if (keys.length > 1) keys.sort();
  let out = "{";
  let first = true;
  for (const key of keys) {
    const member = record[key];
    if (member === undefined || typeof member === "function") continue;
    out += `${first ? "" : ","}${JSON.stringify(key)}:${canonicalJson(member)}`;
    first = false;
  }
  return `${out}}`;
}

/** True when every object in `value` lists its keys in sorted order (then JSON.stringify is canonical). */
export function hasSortedKeys(value: unknown): boolean {
  if (value === null || typeof value !== "object") return true;
  if (Array.isArray(value)) return value.every(hasSortedKeys);
  const record = value as Record<string, unknown>;
  let previous: string | undefined;
  for (const key in record) {
    if (previous !== undefined && !(previous < key)) return false;
    if (!hasSortedKeys(record[key])) return false;
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
