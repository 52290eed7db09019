// Durations, token counts, usage (tokens charged in full apart from cache reads) and the fork receipt
// as people read them, for both halves: the server's texts (tool replies, notices, the watchdog's
// reasons) and the TUI's lines. Pure, and it imports only a type of the halves' contract
// (task-state.ts), so the TUI bundle takes nothing of the server with it.
//
// The two halves write durations differently, and both stay as they are: the server's texts say
// "1m 5s" (rounded to the second, words apart), the TUI's narrow lines "1m05s" (whole seconds gone,
// padded, no space). Token counts are one form: "999", "1.2k", "12k", "1.2M" (the fork receipt's
// two close counts keep one decimal at every size: formatTokensFine).

import type { ForkReceipt } from "./task-state.js";

/** A duration in the server's texts: `0s`, `59s`, `1m 5s`, `1h 2m` (rounded to the nearest second). */
export function formatDuration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${s % 60}s`;
  return `${Math.floor(m / 60)}h ${m % 60}m`;
}

/** A duration in the TUI: `45s`, `3m07s`, `1h02m` (seconds cut, not rounded). */
export function formatElapsed(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${String(s % 60).padStart(2, "0")}s`;
  return `${Math.floor(m / 60)}h${String(m % 60).padStart(2, "0")}m`;
}

/** A token count: `999`, `1.0k` … `9.9k` (one decimal below 10k), `12k`, `1.2M`. */
export function formatTokens(n: number): string {
  if (n < 1000) return String(Math.round(n));
  if (n < 1_000_000) return `${(n / 1000).toFixed(n < 10_000 ? 1 : 0)}k`;
  return `${(n / 1_000_000).toFixed(1)}M`;
}

/** A task's tokens and cost, as the server counts them (../task-record.ts Usage). */
export interface TokenUsage {
  input: number;
  output: number;
  reasoning: number;
  cacheRead: number;
  cacheWrite: number;
  cost: number;
}

/** Tokens the provider charges in full: uncached input, cache writes, output and reasoning (what maxTaskTokens caps). */
export function chargedTokens(usage: TokenUsage): number {
  return usage.input + usage.cacheWrite + usage.output + usage.reasoning;
}

/**
 * The server's usage line, tokens charged in full apart from tokens read from the cache:
 * "1.3k charged in full (300 in, 1.0k out) · 15k read from cache · $0.0123" (the cache part only
 * when something was read from it; cache writes count as input, they are charged), or "" when
 * nothing was used yet.
 */
export function formatUsage(usage: TokenUsage | undefined): string {
  if (!usage) return "";
  const input = usage.input + usage.cacheWrite;
  const output = usage.output + usage.reasoning;
  if (input + output + usage.cacheRead === 0 && usage.cost === 0) return "";
  const parts = [`${formatTokens(input + output)} charged in full (${formatTokens(input)} in, ${formatTokens(output)} out)`];
  if (usage.cacheRead > 0) parts.push(`${formatTokens(usage.cacheRead)} read from cache`);
  if (usage.cost > 0) parts.push(`$${usage.cost.toFixed(4)}`);
  return parts.join(" · ");
}

/** The cached share of the first request, in whole percent (99 rather than 100 unless all of it was read). */
export function cacheShare(receipt: Pick<ForkReceipt, "read" | "input">): number {
  if (receipt.input <= 0) return 0;
  const share = Math.min(1, receipt.read / receipt.input);
  return share < 1 ? Math.min(99, Math.round(share * 100)) : 100;
}

/** A token count with one decimal at every size (`999`, `15.5k`, `155.3k`, `1.2M`): two close counts stay apart. */
export function formatTokensFine(n: number): string {
  if (n < 1000) return String(Math.round(n));
  if (n < 999_950) return `${(n / 1000).toFixed(1)}k`;
  return `${(n / 1_000_000).toFixed(1)}M`;
}

/** "cache: 15.5k of 15.6k input tokens (99%)". */
export function formatCacheShare(receipt: Pick<ForkReceipt, "read" | "input">): string {
  return `cache: ${formatTokensFine(receipt.read)} of ${formatTokensFine(receipt.input)} input tokens (${cacheShare(receipt)}%)`;
}

/**
 * The fork receipt, one line for the server's texts: the measured share of the child's first
 * request, then for a text fork what could be shared and what was new, for a flagged native fork
 * the likely reason. Undefined for a task that is not a fork.
 */
export function formatReceipt(forked: boolean, receipt: ForkReceipt | undefined, ended: boolean): string | undefined {
  if (!forked) return undefined;
  if (!receipt)
    return ended
      ? "cache: not measured (no first request of the child reported its tokens)"
      : "cache: not measured yet (the child's first request has not finished)";
  const share = formatCacheShare(receipt);
  if (receipt.kind === "text") {
    const copy = receipt.copy ? ` (~${formatTokens(receipt.copy)} tokens)` : "";
    const shared = receipt.miss ? `nothing could come from your cache (${receipt.miss})` : "only the system prompt and tools could come from your cache";
    return `${share} on the first request · text fork: ${shared}; the context copy${copy} and the task were new`;
  }
  // a difference seen in the request as sent is the cause, not a likely one
  if (receipt.differs) return `${share} on the first request · ⚠ native fork, but ${receipt.differs}`;
  if (receipt.miss) return `${share} on the first request · ⚠ low for a native fork; likely cause: ${receipt.miss}`;
  return `${share} on the first request · native fork: read your context from the cache`;
}
