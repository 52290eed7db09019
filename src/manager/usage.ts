// What a task cost: tokens and cost of its child's assistant messages, summed over every run. Pure.
// How it reads (formatUsage) is in ../format.ts, shared with the TUI.

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
