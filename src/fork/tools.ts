// Stage 2 for tool parts: decide, for every call in the window, what the child sees as its result.
// Order of decisions: excluded call → interrupted (no result) → cleared (pruned by OpenCode) →
// superseded (a newer identical call exists) → tiered result. Only tiered results take a tier slot,
// so a pruned or repeated call never pushes a live result into a lower tier. A user answer
// (FORK_USER_ANSWER_TOOLS) is never cleared nor superseded: it takes its tier slot like any result,
// but is kept whole.

import type { ToolPart } from "../host/types.js";
import { FORK_CLEARED_OUTPUT, FORK_MAX_INPUT_DEPTH, FORK_USER_ANSWER_TOOL_SUFFIX, FORK_USER_ANSWER_TOOLS } from "./constants.js";
import { boundedJson, CallRegistry, memberPrefix, plainJsonString, quoted, stringObjectJson, SUPERSEDED_RESULT, withinDepth } from "./dedup.js";
import { type InputWalk, walkInput } from "./input.js";
import {
  getToolResultTier,
  headOnlySeparator,
  paramsLimitForTier,
  resultLimitForTier,
  safeHeadEnd,
  shouldUseHeadTail,
  truncateWithStrategy,
} from "./truncation.js";
import type { ForkPart, ProcessingStats, Tier } from "./types.js";

const TIER_KEYS = { 1: "tier1", 2: "tier2", 3: "tier3" } as const;

/** What a call without a result (pending/running when the history was read) shows. */
export const INTERRUPTED_RESULT = "[tool call interrupted: no result]";

/**
 * What a call shows, decided once per call. `inputJson` is JSON.stringify(state.input), computed once,
 * for an input of plain values (or one JSON.stringify has its own rules for); undefined for a nested
 * input walked instead (input.ts), whose JSON is `inputLength` long and printed only as far as shown.
 * `deep`: nested deeper than FORK_MAX_INPUT_DEPTH (printed to a bounded depth). `malformed` counts the
 * fields of this call of the wrong type.
 */
export type ToolDecision = { inputJson: string | undefined; inputLength: number; malformed: number; deep: boolean } & (
  | { status: "interrupted" }
  | { status: "cleared" }
  | { status: "superseded" }
  | { status: "completed"; tier: Tier; userAnswer?: true }
  | { status: "error"; tier: Tier; userAnswer?: true }
);

/**
 * True when the tool's result is the user's own words: FORK_USER_ANSWER_TOOLS, any name ending with
 * FORK_USER_ANSWER_TOOL_SUFFIX (`ask_user_questions` under an MCP prefix), or one of `extra` (the
 * option userAnswerTools).
 */
export function isUserAnswerTool(name: string, extra: readonly string[] = []): boolean {
  return FORK_USER_ANSWER_TOOLS.includes(name) || name.endsWith(FORK_USER_ANSWER_TOOL_SUFFIX) || extra.includes(name);
}

/** Pruned by OpenCode: the parent model was sent the placeholder instead of the stored output. */
export function isClearedResult(part: ToolPart): boolean {
  const state = part.state;
  return state?.status === "completed" && (state.time?.compacted != null || state.output === FORK_CLEARED_OUTPUT);
}

/** What a result that is not text (a number, an object) shows: a one-line marker, never its dump. */
export function malformedResultMarker(value: unknown): string {
  return `[malformed tool result: ${Array.isArray(value) ? "array" : value === null ? "null" : typeof value} instead of text]`;
}

/**
 * The result text the parent model saw: `state.output` or `state.error` (never `state.metadata`).
 * A missing one reads as empty; one of another type as a marker (see isMalformedResult).
 */
export function resultTextOf(part: ToolPart): string | undefined {
  const state = part.state;
  if (state?.status !== "completed" && state?.status !== "error") return undefined;
  const value: unknown = state.status === "completed" ? state.output : state.error;
  if (typeof value === "string") return value;
  return value == null ? "" : malformedResultMarker(value);
}

/** True when the result field holds something other than a string (or nothing). */
export function isMalformedResult(part: ToolPart): boolean {
  const state = part.state;
  if (state?.status !== "completed" && state?.status !== "error") return false;
  const value: unknown = state.status === "completed" ? state.output : state.error;
  return value != null && typeof value !== "string";
}

/**
 * Decides calls one by one, NEWEST FIRST: the first copy of a call met is the newest, every later
 * (older) one is superseded, and tiers count live results from the newest (index 0). Lets Stage 2
 * decide and build in a single backward pass over the window.
 */
export class ToolCallDecider {
  private readonly registry = new CallRegistry();
  private fromNewest = 0;
  // Lengths a user-answer tool's name can have below the suffix's: the names of most calls ("read",
  // "bash") are told apart by their length alone, without comparing a string.
  private readonly answerLengths: Uint8Array;

  /** `userAnswerTools`: names added to FORK_USER_ANSWER_TOOLS (ForkOptions.userAnswerTools). */
  constructor(private readonly userAnswerTools: readonly string[] = []) {
    this.answerLengths = new Uint8Array(FORK_USER_ANSWER_TOOL_SUFFIX.length + 1);
    for (const name of [...FORK_USER_ANSWER_TOOLS, ...userAnswerTools]) {
      if (name.length < this.answerLengths.length) this.answerLengths[name.length] = 1;
    }
  }

  private isUserAnswer(tool: string): boolean {
    const n = tool.length;
    if (n < this.answerLengths.length && this.answerLengths[n] === 0) return false;
    return isUserAnswerTool(tool, this.userAnswerTools);
  }

  decide(part: ToolPart): ToolDecision {
    const state: unknown = part.state;
    const stateOk = state !== null && typeof state === "object";
    const status = stateOk ? part.state.status : undefined;
    const input: unknown = stateOk ? part.state.input : undefined;
    let malformed = (stateOk ? 0 : 1) + (typeof part.tool === "string" ? 0 : 1);
    let inputJson: string | undefined;
    let inputLength = 0;
    let tooDeep = false;
    let walked: InputWalk | undefined;
    const flat = flatInputJson(input);
    if (flat !== undefined) inputJson = flat;
    else {
      // Nested: the depth first (a cheap walk that stops at the bound), then measured and hashed in
      // one walk, printed later only as far as the tier shows it.
      if (!withinDepth(input)) tooDeep = true;
      else if ((walked = walkInput(input)).ordinary && !walked.tooDeep) inputLength = walked.length;
      else {
        inputJson = stringifyInput(input);
        if (inputJson === "") {
          inputJson = boundedJson(input, false); // BigInt or a throwing getter: cannot come from JSON
          malformed++;
        }
      }
      // Printed to a bounded depth, and only as much as the tier shows (printedInput), the same way
      // every time; nothing is built here.
      if (tooDeep) malformed++;
    }
    // Object literals of one shape (no spread): this runs once per call of a history of thousands.
    if (status !== "completed" && status !== "error") return { status: "interrupted", inputJson, inputLength, malformed, deep: tooDeep };
    if (isMalformedResult(part)) malformed++;
    // The user's own words are neither cleared nor superseded (see FORK_USER_ANSWER_TOOLS).
    const tool = toolNameOf(part);
    const userAnswer = this.isUserAnswer(tool);
    if (!userAnswer) {
      if (isClearedResult(part)) return { status: "cleared", inputJson, inputLength, malformed, deep: tooDeep };
      // A too-deep input is never compared: its printed form is a prefix, not the whole input.
      if (!tooDeep && this.seen(tool, input, inputJson, flat !== undefined, walked)) {
        return { status: "superseded", inputJson, inputLength, malformed, deep: tooDeep };
      }
    }
    const tier = getToolResultTier(this.fromNewest++);
    if (userAnswer) return { status, tier, userAnswer, inputJson, inputLength, malformed, deep: tooDeep };
    return status === "error"
      ? { status: "error", tier, inputJson, inputLength, malformed, deep: tooDeep }
      : { status: "completed", tier, inputJson, inputLength, malformed, deep: tooDeep };
  }

  private seen(tool: string, input: unknown, inputJson: string | undefined, plain: boolean, walked: InputWalk | undefined): boolean {
    if (inputJson === undefined) return this.registry.seenWalked(tool, input ?? {}, walked!);
    if (plain && lastFlatInput.single !== undefined) {
      return this.registry.seenSingle(tool, lastFlatInput.single, (input as Record<string, string>)[lastFlatInput.single]!);
    }
    return plain && lastFlatInput.sorted ? this.registry.seenCanonical(tool, inputJson) : this.registry.seenBefore(tool, input, inputJson, plain);
  }
}

/** Ends the printed input of a call nested deeper than FORK_MAX_INPUT_DEPTH. */
export const TOO_DEEP_INPUT_NOTE = ` [input nested deeper than ${FORK_MAX_INPUT_DEPTH} levels: shown in part]`;

/** The tool's name; "unknown" when the stored name is not a string. */
export function toolNameOf(part: ToolPart): string {
  return typeof part.tool === "string" ? part.tool : "unknown";
}

/**
 * JSON.stringify(input) for the usual input, an object whose values are strings, finite numbers,
 * booleans or null (`{filePath}`, `{command, description}`), built directly: several times faster
 * than JSON.stringify on such small objects, which a history holds by the ten thousand. `undefined`
 * for anything else (the caller uses JSON.stringify). Same keys in the same order (Object.keys is
 * the order JSON.stringify uses), same text.
 */
export function flatInputJson(input: unknown): string | undefined {
  if (input === null || typeof input !== "object" || Array.isArray(input)) return undefined;
  const record = input as Record<string, unknown>;
  // The commonest input, one string member ({filePath}, {pattern}), is found without listing the
  // keys into an array: for-in lists inherited keys too, so the one key must be the object's own.
  let only: string | undefined;
  let count = 0;
  for (const key in record) {
    if (++count > 1) break;
    only = key;
  }
  if (count === 1 && Object.hasOwn(record, only!)) {
    const value = record[only!];
    if (typeof value === "string" && plainJsonString(value)) {
      lastFlatInput.sorted = true;
      lastFlatInput.single = only;
      return stringObjectJson(only!, value);
    }
  }
  const keys = Object.keys(record);
  let out = "{";
  let sorted = true;
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!;
    const value = record[key];
    let text: string;
    if (typeof value === "string") text = quoted(value);
    else if (typeof value === "number" && Number.isFinite(value)) text = String(value);
    else if (typeof value === "boolean") text = value ? "true" : "false";
    else if (value === null) text = "null";
    else return undefined;
    if (i > 0 && !(keys[i - 1]! < key)) sorted = false;
    out += memberPrefix(key, i === 0) + text;
  }
  lastFlatInput.sorted = sorted;
  lastFlatInput.single = keys.length === 1 && typeof record[keys[0]!] === "string" ? keys[0] : undefined;
  return `${out}}`;
}

/**
 * What flatInputJson saw of the last input it printed, read right after the call: it saves the
 * registry listing the keys again. One object for the module, written by flatInputJson only.
 */
const lastFlatInput: {
  /** The keys were in sorted order: the JSON is canonical already. */
  sorted: boolean;
  /** The input was one string member: its key (the registry keeps such calls by key and value). */
  single: string | undefined;
} = { sorted: false, single: undefined };

/** JSON.stringify of an input known to be within the depth bound; "" when it throws. */
function stringifyInput(input: unknown): string {
  try {
    return JSON.stringify(input ?? {}) ?? "{}";
  } catch {
    return "";
  }
}

/**
 * The printed input of a call: cut head-only to the tier's limit; a too-deep one says so instead. A
 * walked input is printed only as far as it is shown: truncateWithStrategy(JSON, limit, false) from
 * a prefix one character longer than the limit (the cut looks at both sides) and the walked length.
 */
function printedInput(part: ToolPart, decision: ToolDecision, limit: number): string {
  if (decision.inputJson !== undefined) return truncateWithStrategy(decision.inputJson, limit, false);
  const state: unknown = part.state;
  const input: unknown = state !== null && typeof state === "object" ? (state as { input?: unknown }).input : undefined;
  const prefix = boundedJson(input ?? {}, false, limit);
  if (decision.deep) return prefix.slice(0, safeHeadEnd(prefix, Math.min(prefix.length, limit))) + TOO_DEEP_INPUT_NOTE;
  if (decision.inputLength <= limit) return prefix; // whole: the walk stopped at nothing
  const headEnd = safeHeadEnd(prefix, limit);
  return prefix.slice(0, headEnd) + headOnlySeparator(decision.inputLength - headEnd);
}

/** Applies a decision: the printable tool part, and its effect on the stats. */
export function toForkToolPart(part: ToolPart, decision: ToolDecision, stats: ProcessingStats): ForkPart {
  // Object literals of one shape (no spread): this runs once per call of a history of thousands.
  const tool = toolNameOf(part);
  const callID = typeof part.callID === "string" ? part.callID : "";
  stats.malformedParts += decision.malformed;
  if (decision.status === "interrupted" || decision.status === "cleared" || decision.status === "superseded") {
    const input = printedInput(part, decision, paramsLimitForTier(3));
    let result: string;
    if (decision.status === "interrupted") {
      stats.interruptedCalls++;
      result = INTERRUPTED_RESULT;
    } else if (decision.status === "cleared") {
      stats.clearedResults++;
      result = FORK_CLEARED_OUTPUT;
    } else {
      stats.supersededResults++;
      result = SUPERSEDED_RESULT;
    }
    return { kind: "tool", tool, callID, input, result, status: decision.status };
  }
  const { tier } = decision;
  const text = resultTextOf(part) ?? "";
  if (decision.userAnswer) {
    // kept whole like a user message; its input shown as much as a tier-1 call's
    stats.userAnswers++;
    const input = printedInput(part, decision, paramsLimitForTier(1));
    return { kind: "tool", tool, callID, input, result: text, status: decision.status, userAnswer: true };
  }
  stats.tierDistribution[TIER_KEYS[tier]]++;
  const limit = resultLimitForTier(tier);
  let result = text;
  if (text.length > limit) {
    // Only now is the text scanned for error patterns: a result that is not cut needs no method.
    const headTail = shouldUseHeadTail(tool, text);
    result = truncateWithStrategy(text, limit, headTail);
    stats.truncatedResults++;
    if (headTail) stats.headTailApplied++;
  }
  const input = printedInput(part, decision, paramsLimitForTier(tier));
  return { kind: "tool", tool, callID, input, result, status: decision.status, tier };
}

/**
 * What toForkToolPart records in the stats for this call, without building its part: for a call of
 * a message the budget cannot keep (process.ts, the newest-end read), which counts for the preamble
 * only. Must stay in step with toForkToolPart.
 */
export function countForkToolPart(part: ToolPart, decision: ToolDecision, stats: ProcessingStats): void {
  stats.malformedParts += decision.malformed;
  if (decision.status === "interrupted") stats.interruptedCalls++;
  else if (decision.status === "cleared") stats.clearedResults++;
  else if (decision.status === "superseded") stats.supersededResults++;
  else if (decision.userAnswer) stats.userAnswers++;
  else {
    stats.tierDistribution[TIER_KEYS[decision.tier]]++;
    const text = resultTextOf(part) ?? "";
    if (text.length > resultLimitForTier(decision.tier)) {
      stats.truncatedResults++;
      if (shouldUseHeadTail(toolNameOf(part), text)) stats.headTailApplied++;
    }
  }
}
