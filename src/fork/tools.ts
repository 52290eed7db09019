// Stage 2 for tool parts: decide, for every call in the window, what the child sees as its result.
// Order of decisions: excluded call → interrupted (no result) → cleared (pruned by OpenCode) →
// superseded (a newer identical call exists) → tiered result. Only tiered results take a tier slot,
// so a pruned or repeated call never pushes a live result into a lower tier.

import type { ToolPart } from "@opencode-ai/sdk/v2";
import { FORK_CLEARED_OUTPUT } from "../constants.js";
import { CallRegistry, SUPERSEDED_RESULT } from "./dedup.js";
import { getToolResultTier, paramsLimitForTier, resultLimitForTier, shouldUseHeadTail, truncateWithStrategy } from "./truncation.js";
import type { ForkPart, ProcessingStats, Tier } from "./types.js";

const TIER_KEYS = { 1: "tier1", 2: "tier2", 3: "tier3" } as const;

/** What a call without a result (pending/running when the history was read) shows. */
export const INTERRUPTED_RESULT = "[tool call interrupted: no result]";

/** What a call shows, decided once per call; `inputJson` is JSON.stringify(state.input), computed once. */
export type ToolDecision = { inputJson: string } & (
  | { status: "interrupted" }
  | { status: "cleared" }
  | { status: "superseded" }
  | { status: "completed"; tier: Tier }
  | { status: "error"; tier: Tier }
);

/** Pruned by OpenCode: the parent model was sent the placeholder instead of the stored output. */
export function isClearedResult(part: ToolPart): boolean {
  const state = part.state;
  return state?.status === "completed" && (state.time?.compacted != null || state.output === FORK_CLEARED_OUTPUT);
}

/** The result text the parent model saw: `state.output` or `state.error` (never `state.metadata`). */
export function resultTextOf(part: ToolPart): string | undefined {
  const state = part.state;
  if (state?.status === "completed") return typeof state.output === "string" ? state.output : String(state.output ?? "");
  if (state?.status === "error") return typeof state.error === "string" ? state.error : String(state.error ?? "");
  return undefined;
}

/**
 * Decides calls one by one, NEWEST FIRST: the first copy of a call met is the newest, every later
 * (older) one is superseded, and tiers count live results from the newest (index 0). Lets Stage 2
 * decide and build in a single backward pass over the window.
 */
export class ToolCallDecider {
  private readonly seen = new CallRegistry();
  private fromNewest = 0;

  decide(part: ToolPart): ToolDecision {
    const status = part.state?.status;
    const inputJson = inputJsonOf(part);
    if (status !== "completed" && status !== "error") return { status: "interrupted", inputJson };
    if (isClearedResult(part)) return { status: "cleared", inputJson };
    if (this.seen.seenBefore(String(part.tool), part.state.input, inputJson)) return { status: "superseded", inputJson };
    const tier = getToolResultTier(this.fromNewest++);
    return status === "error" ? { status: "error", tier, inputJson } : { status: "completed", tier, inputJson };
  }
}

function inputJsonOf(part: ToolPart): string {
  try {
    return JSON.stringify(part.state?.input ?? {}) ?? "{}";
  } catch {
    return "{}"; // cyclic or BigInt input cannot come from the server's JSON, but must not crash a fork
  }
}

/** Applies a decision: the printable tool part, and its effect on the stats. */
export function toForkToolPart(part: ToolPart, decision: ToolDecision, stats: ProcessingStats): ForkPart {
  // Object literals of one shape (no spread): this runs once per call of a history of thousands.
  const tool = String(part.tool ?? "unknown");
  const callID = String(part.callID ?? "");
  if (decision.status === "interrupted" || decision.status === "cleared" || decision.status === "superseded") {
    const input = truncateWithStrategy(decision.inputJson, paramsLimitForTier(3), false);
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
  stats.tierDistribution[TIER_KEYS[tier]]++;
  const text = resultTextOf(part) ?? "";
  const limit = resultLimitForTier(tier);
  let result = text;
  if (text.length > limit) {
    // Only now is the text scanned for error patterns: a result that is not cut needs no method.
    const headTail = shouldUseHeadTail(tool, text);
    result = truncateWithStrategy(text, limit, headTail);
    stats.truncatedResults++;
    if (headTail) stats.headTailApplied++;
  }
  const input = truncateWithStrategy(decision.inputJson, paramsLimitForTier(tier), false);
  return { kind: "tool", tool, callID, input, result, status: decision.status, tier };
}
