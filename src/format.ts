// Durations and token counts as people read them, for both halves: the server's texts (tool
// replies, notices, the watchdog's reasons) and the TUI's lines. Pure and import-free, so the TUI
// bundle takes nothing of the server with it.
//
// The two halves write durations differently, and both stay as they are: the server's texts say
// "1m 5s" (rounded to the second, words apart), the TUI's narrow lines "1m05s" (whole seconds gone,
// padded, no space). Token counts are one form: "999", "1.2k", "12k", "1.2M".

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

/** The server's usage line: "12.3k in (10.1k from cache) · 1.2k out · $0.0123", or "" when nothing was used yet. */
export function formatUsage(usage: TokenUsage | undefined): string {
  if (!usage) return "";
  const input = usage.input + usage.cacheRead + usage.cacheWrite;
  if (input + usage.output + usage.reasoning === 0 && usage.cost === 0) return "";
  const parts = [
    `${formatTokens(input)} in${usage.cacheRead > 0 ? ` (${formatTokens(usage.cacheRead)} from cache)` : ""}`,
    `${formatTokens(usage.output + usage.reasoning)} out`,
  ];
  if (usage.cost > 0) parts.push(`$${usage.cost.toFixed(4)}`);
  return parts.join(" · ");
}
