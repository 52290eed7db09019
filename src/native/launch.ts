// What a native launch needs, decided and captured at the start of the tool call, and the prompt
// that starts the child. The manager's launch code (src/manager/launch/launcher.ts) creates the child with the
// parent's permission, registers the fork, sends `nativePromptBody`, then persists the snapshot.

import { pluginsBeside } from "../coexist/tool-names.js";
import { requestRewriter } from "../coexist/request-rewriters.js";
import type { ToolContext } from "../host/types.js";
import { modelFromToolContext } from "../host/tool-context.js";
import type { ModelRef } from "../host/types.js";
import { decideFork } from "./decide.js";
import type { NativeForkSummary } from "./describe.js";
import { nativeDirective } from "./preamble.js";
import type { NativeForkRegistry } from "./registry.js";
import { type Snapshot, contextMessages, estimateTokens, lastUser, takeSnapshot } from "./snapshot.js";

export interface NativeForkOptions {
  registry: NativeForkRegistry;
  /** cap on the inherited context, in tokens (plugin option nativeForkMaxTokens) */
  maxTokens?: number;
}

export interface NativeLaunch {
  registry: NativeForkRegistry;
  snapshot: Snapshot;
  parentSessionID: string;
  rootSessionID: string;
  agent: string;
  model: ModelRef;
  variant?: string;
  /** the parent's last user message's `system`: part of the parent's system prompt, so the child's too */
  system?: string;
  estimatedTokens: number;
  /** a worktree task: where the child works, said in its directive (its system prompt is the parent's) */
  workplace?: string;
}

export type NativePlan = { native: NativeLaunch } | { fallback: string };

function contextLimitOf(ctx: unknown): number | undefined {
  const limit = (ctx as { extra?: { model?: { limit?: { context?: unknown } } } }).extra?.model?.limit?.context;
  return typeof limit === "number" && limit > 0 ? limit : undefined;
}

/**
 * Decides native vs text for a `fork: true` call and, for native, snapshots ctx.messages (a deep
 * copy, taken without awaiting anything first). The array does not change while the tool runs:
 * OpenCode builds a new one for the parent's next step.
 */
export async function planNativeFork(options: NativeForkOptions, ctx: ToolContext, requestedAgent: string | undefined): Promise<NativePlan> {
  const messages = contextMessages(ctx);
  const model = modelFromToolContext(ctx);
  const estimatedTokens = messages ? estimateTokens(messages) : 0;
  const decision = decideFork({
    requestedAgent,
    callerAgent: ctx.agent,
    callerModel: model,
    contextLimit: contextLimitOf(ctx),
    estimatedTokens,
    haveMessages: Boolean(messages?.length),
    maxTokens: options.maxTokens,
    rewriter: requestRewriter(pluginsBeside(ctx.directory)),
  });
  if (!decision.native) return { fallback: decision.reason };
  const snapshot = takeSnapshot(messages!);
  const user = lastUser(messages!);
  // A parent that is itself a native fork shares its own root (the recursion guard normally refuses this).
  const parentFork = await options.registry.find(ctx.sessionID).catch(() => undefined);
  return {
    native: {
      registry: options.registry,
      snapshot,
      parentSessionID: ctx.sessionID,
      rootSessionID: parentFork?.rootSessionID ?? ctx.sessionID,
      agent: ctx.agent,
      model: model!,
      variant: user?.model?.variant,
      system: user?.system,
      estimatedTokens,
    },
  };
}

function promptExtras(source: { variant?: string; system?: string } | undefined): { variant?: string; system?: string } {
  return { ...(source?.variant ? { variant: source.variant } : {}), ...(source?.system ? { system: source.system } : {}) };
}

/** The child's prompt: same agent, model and variant as the parent, no tools map, only the parent's own `system`. */
export function nativePromptBody(launch: NativeLaunch, prompt: string) {
  return {
    agent: launch.agent,
    model: launch.model,
    ...promptExtras(launch),
    parts: [{ type: "text" as const, text: nativeDirective(prompt, launch.workplace) }],
  };
}

/**
 * What a native task's later prompts (a resume, a queued start) repeat so its requests keep the
 * parent's prefix: the variant and the parent's per-prompt system. Nothing for other tasks.
 */
export function nativeFollowUpExtras(fork: { kind: string; variant?: string; system?: string } | undefined): { variant?: string; system?: string } {
  return fork?.kind === "native" ? promptExtras(fork) : {};
}

export function nativeSummary(launch: NativeLaunch): NativeForkSummary {
  return {
    kind: "native",
    messages: launch.snapshot.count,
    estimatedTokens: launch.estimatedTokens,
    rootSessionID: launch.rootSessionID,
    ...promptExtras(launch),
  };
}
