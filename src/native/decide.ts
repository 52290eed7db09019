// Native fork or text fork: the native one only when the child's requests can start with exactly
// the parent's request (same agent, same model and variant) and the inherited context leaves the
// child room to work.

import type { ModelRef } from "../host/types.js";

/** Default cap on the inherited context of a native fork, in tokens (plugin option nativeForkMaxTokens). */
export const NATIVE_FORK_MAX_TOKENS = 120_000;
/** Share of the model's context window kept free for the child's own work. */
export const NATIVE_FORK_ROOM_RATIO = 0.3;
/** ...but never less than this many tokens. */
export const NATIVE_FORK_MIN_ROOM = 16_000;

export interface ForkDecisionInput {
  /** the agent named in the call, if any */
  requestedAgent?: string;
  callerAgent: string;
  /** the caller's model (ctx.extra.model); undefined when OpenCode did not say */
  callerModel?: ModelRef;
  /** the model's context window (ctx.extra.model.limit.context), if known */
  contextLimit?: number;
  /** estimated tokens of the inherited context */
  estimatedTokens: number;
  /** whether ctx.messages was available */
  haveMessages: boolean;
  maxTokens?: number;
  /** a plugin loaded beside ours that rewrites each request by session (coexist/request-rewriters.ts) */
  rewriter?: { name: string; why: string };
}

export type ForkDecision = { native: true } | { native: false; reason: string };

/** The most a native child may inherit: the option's cap, and room for the child's work in the window. */
export function nativeTokenCap(contextLimit: number | undefined, maxTokens = NATIVE_FORK_MAX_TOKENS): number {
  if (!contextLimit || contextLimit <= 0) return maxTokens;
  const room = Math.max(Math.ceil(contextLimit * NATIVE_FORK_ROOM_RATIO), NATIVE_FORK_MIN_ROOM);
  return Math.max(0, Math.min(maxTokens, contextLimit - room));
}

export function decideFork(input: ForkDecisionInput): ForkDecision {
  if (input.requestedAgent && input.requestedAgent !== input.callerAgent) {
    return { native: false, reason: `agent ${input.requestedAgent} is not yours (${input.callerAgent})` };
  }
  if (input.rewriter) return { native: false, reason: `the plugin ${input.rewriter.name} is loaded: ${input.rewriter.why}` };
  if (!input.haveMessages) return { native: false, reason: "OpenCode did not pass the request's messages to the tool" };
  if (!input.callerModel) return { native: false, reason: "the calling model is unknown" };
  const cap = nativeTokenCap(input.contextLimit, input.maxTokens);
  if (cap <= 0) return { native: false, reason: "the native fork cap is 0 tokens (nativeForkMaxTokens, or no room in the model's window)" };
  if (input.estimatedTokens > cap) {
    return { native: false, reason: `your context (~${input.estimatedTokens} tokens) is over the native fork cap of ${cap} tokens` };
  }
  return { native: true };
}
