// What a child's assistant messages used, read from their `tokens` and `cost`. Pure.
// - What a task cost: summed over every message of every run. How it reads (formatUsage) is in
//   ../format.ts, shared with the TUI.
// - A fork's receipt: what a forked child's first request read from the cache, the evidence that a
//   fork shared (or could not share) the parent's prompt cache. Recorded once, from the child's first
//   finished assistant message (its `tokens.cache.read` against all its input), when the event that
//   reports it arrives (task/step.ts `assistant-message`); kept on the task record. A native fork below
//   NATIVE_FORK_MIN_CACHE_SHARE is flagged with the likely reason; a text fork's receipt says what it
//   could share (the system prompt and tools) and what was new (the context copy).

import type { AssistantMessage } from "../../host/types.js";
import type { SessionMessage } from "../../fork/types.js";
import { CHARS_PER_TOKEN, NATIVE_FORK_MIN_CACHE_SHARE, PROVIDER_CACHE_LIFETIME_MS } from "../../constants.js";
import { formatDuration } from "../../format.js";
import { taskModel } from "../../prompts.js";
import type { BackgroundTask, ForkReceipt, ModelRef, Usage } from "../../task-record.js";

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

// ─── a fork's receipt ───

/** What the flag rule reads of a native fork's first request and of the parent's request it follows. */
export interface MissInput {
  read: number;
  write: number;
  input: number;
  /** the parent's model and variant when it launched the fork (the cache its request warmed) */
  parent: { model?: ModelRef; variant?: string };
  /** the model and variant the child's first request ran on, as OpenCode recorded them */
  child: { model?: ModelRef; variant?: string };
  /** from the parent's launching request to the child's first request */
  gapMs: number;
}

/**
 * Why a native fork's first request likely read little from the cache, or undefined while its share
 * is at or above the threshold. The reasons are checked from the surest evidence to the weakest, and
 * each is stated as likely: the provider only reports how many tokens it read, never why.
 */
export function likelyMiss(m: MissInput): string | undefined {
  if (m.input <= 0 || m.read / m.input >= NATIVE_FORK_MIN_CACHE_SHARE) return undefined;
  const changed = modelChange(m.parent, m.child);
  if (changed) return `the model or variant changed: ${changed}`;
  if (m.read === 0 && m.write === 0) {
    return "the provider reported no cache reads or writes at all: it likely does not cache this model (or not prompts this short)";
  }
  if (m.gapMs > PROVIDER_CACHE_LIFETIME_MS) {
    return `the child's first request came ${formatDuration(m.gapMs)} after your request, longer than a provider's usual cache lifetime (${formatDuration(PROVIDER_CACHE_LIFETIME_MS)}): your cached prefix had likely expired`;
  }
  return "not known: the start of the child's first request likely differed from your last request (its system prompt, tools, or another plugin's changes)";
}

type ModelAndVariant = { model?: ModelRef; variant?: string };

/** "the child ran on X, your request on Y (…)" when the two differ, else undefined (also when either is unknown). */
export function modelChange(parent: ModelAndVariant, child: ModelAndVariant): string | undefined {
  const p = taskModel(parent);
  const c = taskModel(child);
  return p && c && p !== c ? `the child ran on ${c}, your request on ${p} (a provider keeps a cache per model)` : undefined;
}

type ReceiptTask = Pick<BackgroundTask, "isForked" | "fork" | "run" | "receipt" | "createdAt" | "parentModel" | "model" | "variant">;

/**
 * The receipt of a forked task from an update of its child's assistant message, or undefined when
 * this message does not make one: the task is not a fork, already has its receipt, is past its first
 * run (a resume's requests are not the fork's), or the message is not finished or reported no input.
 */
export function receiptOf(task: ReceiptTask, info: Partial<AssistantMessage>, systemDiffers?: string): ForkReceipt | undefined {
  if (!task.isForked || task.receipt || task.run !== 1) return undefined;
  if (!(info.time?.completed || info.finish) || info.error) return undefined;
  const usage = usageOfMessage(info);
  const input = usage.input + usage.cacheRead + usage.cacheWrite;
  if (input <= 0) return undefined;
  const child = { model: info.providerID && info.modelID ? { providerID: info.providerID, modelID: info.modelID } : undefined, variant: info.variant };
  if (task.fork?.kind !== "native") {
    // a text fork could share the system prompt and tools with its parent's request, unless it runs on another model
    const copy = task.fork?.kind === "text" ? Math.round(task.fork.chars / CHARS_PER_TOKEN) : undefined;
    const other = modelChange({ model: task.parentModel }, { model: child.model });
    return { kind: "text", read: usage.cacheRead, input, ...(copy ? { copy } : {}), ...(other ? { miss: other } : {}) };
  }
  const created = info.time?.created;
  const miss = likelyMiss({
    read: usage.cacheRead,
    write: usage.cacheWrite,
    input,
    parent: { model: task.parentModel ?? task.model, variant: task.fork.variant },
    child,
    gapMs: typeof created === "number" ? Math.max(0, created - task.createdAt) : 0,
  });
  // a child moved to another model has another system prompt by design (it names the model): that is the cause said
  const differs = systemDiffers && !modelChange({ model: task.parentModel ?? task.model, variant: task.fork.variant }, child) ? systemDiffers : undefined;
  return { kind: "native", read: usage.cacheRead, input, ...(miss ? { miss } : {}), ...(differs ? { differs: differs.slice(0, 1000) } : {}) };
}
