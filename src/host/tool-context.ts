// What OpenCode passes a plugin tool at run time beyond its typed context.

import type { ModelRef } from "./types.js";

/** The calling model, which OpenCode passes (untyped) as ctx.extra.model. */
export function modelFromToolContext(ctx: unknown): ModelRef | undefined {
  const model = (ctx as { extra?: { model?: { id?: unknown; providerID?: unknown } } }).extra?.model;
  if (model && typeof model.id === "string" && typeof model.providerID === "string") {
    return { providerID: model.providerID, modelID: model.id };
  }
  return undefined;
}

/**
 * The tool call's id. OpenCode passes it at run time (see the recorded tool context) though the
 * plugin types omit it; without it a call still works, only the repeated-call guard is lost.
 */
export function callIdOf(ctx: object): string {
  const callID = (ctx as { callID?: unknown }).callID;
  return typeof callID === "string" && callID ? callID : `nocall_${Math.random().toString(36).slice(2)}`;
}
