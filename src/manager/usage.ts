// What a task cost: tokens and cost of its child's assistant messages, summed over every run. Pure.

import type { AssistantMessage } from "../host/types.js";
import type { SessionMessage } from "../fork/types.js";
import type { Usage } from "./types.js";

export const NO_USAGE: Usage = { input: 0, output: 0, reasoning: 0, cacheRead: 0, cacheWrite: 0, cost: 0 };

const num = (v: unknown) => (typeof v === "number" && Number.isFinite(v) && v > 0 ? v : 0);

/** One assistant message's usage, as OpenCode records it (`tokens`, `cost`). */
export function usageOfMessage(info: Partial<AssistantMessage>): Usage {
  const t = (info.tokens ?? {}) as Partial<AssistantMessage["tokens"]>;
  return {
    input: num(t.input),
    output: num(t.output),
    reasoning: num(t.reasoning),
    cacheRead: num(t.cache?.read),
    cacheWrite: num(t.cache?.write),
    cost: num(info.cost),
  };
}

export function addUsage(a: Usage, b: Usage, sign: 1 | -1 = 1): Usage {
  return {
    input: a.input + sign * b.input,
    output: a.output + sign * b.output,
    reasoning: a.reasoning + sign * b.reasoning,
    cacheRead: a.cacheRead + sign * b.cacheRead,
    cacheWrite: a.cacheWrite + sign * b.cacheWrite,
    cost: a.cost + sign * b.cost,
  };
}

/** The whole child session's usage: every assistant message of every run. */
export function usageOfSession(messages: readonly SessionMessage[]): Usage {
  let total = NO_USAGE;
  for (const m of messages) if (m?.info?.role === "assistant") total = addUsage(total, usageOfMessage(m.info as AssistantMessage));
  return total;
}

function tokens(n: number): string {
  if (n < 1000) return String(Math.round(n));
  if (n < 1_000_000) return `${(n / 1000).toFixed(n < 10_000 ? 1 : 0)}k`;
  return `${(n / 1_000_000).toFixed(1)}M`;
}

/** "12.3k in (10.1k from cache) · 1.2k out · $0.0123", or "" when nothing was used yet. */
export function formatUsage(usage: Usage | undefined): string {
  if (!usage) return "";
  const input = usage.input + usage.cacheRead + usage.cacheWrite;
  if (input + usage.output + usage.reasoning === 0 && usage.cost === 0) return "";
  const parts = [`${tokens(input)} in${usage.cacheRead > 0 ? ` (${tokens(usage.cacheRead)} from cache)` : ""}`, `${tokens(usage.output + usage.reasoning)} out`];
  if (usage.cost > 0) parts.push(`$${usage.cost.toFixed(4)}`);
  return parts.join(" · ");
}
