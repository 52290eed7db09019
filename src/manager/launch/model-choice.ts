// The model a task runs on, when the caller names one: `model: "provider/model"` or
// `"provider/model#variant"` on background_task. Parsed, then checked against the providers and
// models OpenCode has configured (`config.providers`) before anything is created; a variant only when
// OpenCode lists it for that model (OpenCode 1.18.33 models carry a `variants` map; the prompt takes
// `variant`). Without `model` a task runs on the caller's model, as before.

import type { ToolContext } from "../../host/types.js";
import { MODEL_LIST_FRESH_MS, MODEL_LIST_MAX } from "../../constants.js";
import { MESSAGES, taskModel } from "../../prompts.js";
import { listProviders } from "../../host/app.js";
import { type Client, call } from "../../host/client.js";
import { modelFromToolContext } from "../../host/tool-context.js";
import type { ModelRef } from "../../task-record.js";
import { contextMessages, lastUser } from "../../native/snapshot.js";

/** A chosen model: what the prompt body takes (`model`, and `variant` when one was named). */
export interface ModelChoice {
  model: ModelRef;
  variant?: string;
}

/** "mock/other-model" or "mock/other-model#high". */
export function modelName(model: ModelRef | undefined, variant?: string): string | undefined {
  return taskModel({ model, variant });
}

const MODEL_ARG_MAX = 300;

/**
 * `provider/model[#variant]`: the provider is what comes before the first "/", the model the rest up
 * to a "#" (model ids may hold "/", e.g. "openrouter/anthropic/claude"), the variant what follows it.
 */
export function parseModelArg(value: string): ModelChoice | { error: string } {
  const text = value.trim();
  const bad = () => ({ error: MESSAGES.badModelArg(value) });
  if (!text || text.length > MODEL_ARG_MAX || /\s/.test(text)) return bad();
  const slash = text.indexOf("/");
  if (slash <= 0) return bad();
  const hash = text.indexOf("#", slash + 1);
  const providerID = text.slice(0, slash);
  const modelID = hash < 0 ? text.slice(slash + 1) : text.slice(slash + 1, hash);
  const variant = hash < 0 ? undefined : text.slice(hash + 1);
  if (!modelID || variant === "" || variant?.includes("#")) return bad();
  return { model: { providerID, modelID }, ...(variant ? { variant } : {}) };
}

type ProviderList = { providers?: { id: string; models?: Record<string, { id?: string; variants?: Record<string, unknown> }> }[] };
interface KnownModels {
  readAt: number;
  /** "provider/model" -> its variant names */
  models: Map<string, string[]>;
}

/** The latest provider list read, per client. */
const known = new WeakMap<Client, KnownModels>();

async function readModels(client: Client): Promise<KnownModels> {
  const data = (await call("listing the configured models", listProviders(client))) as ProviderList | undefined;
  const models = new Map<string, string[]>();
  for (const provider of data?.providers ?? []) {
    for (const [key, model] of Object.entries(provider.models ?? {})) {
      const variants = model?.variants && typeof model.variants === "object" ? Object.keys(model.variants) : [];
      models.set(`${provider.id}/${model?.id ?? key}`, variants);
    }
  }
  const list = { readAt: Date.now(), models };
  known.set(client, list);
  return list;
}

function refusal(choice: ModelChoice, list: KnownModels): string | undefined {
  const name = modelName(choice.model)!;
  const variants = list.models.get(name);
  if (!variants) {
    const names = [...list.models.keys()].sort();
    const shown = names.slice(0, MODEL_LIST_MAX);
    return MESSAGES.unknownModel(name, shown, names.length - shown.length);
  }
  if (choice.variant && !variants.includes(choice.variant)) return MESSAGES.unknownVariant(name, choice.variant, variants);
  return undefined;
}

/**
 * The model named by the `model` argument, or a sentence saying why it cannot be used (malformed,
 * or not among the configured models / variants, with the list). A model found in a list read less
 * than MODEL_LIST_FRESH_MS ago is taken without reading it again; any other is checked against a
 * fresh list (a model added meanwhile is found; a missing one is never taken on trust).
 */
export async function resolveModelChoice(client: Client, value: string): Promise<ModelChoice | { error: string }> {
  const parsed = parseModelArg(value);
  if ("error" in parsed) return parsed;
  const cached = known.get(client);
  if (cached && Date.now() - cached.readAt < MODEL_LIST_FRESH_MS && !refusal(parsed, cached)) return parsed;
  const error = refusal(parsed, await readModels(client));
  return error ? { error } : parsed;
}

/**
 * Why a native fork cannot run on the chosen model: its requests must start with exactly the
 * caller's request, so model and variant must be the caller's. Undefined when they are.
 */
export function nativeForkBlockedBy(choice: ModelChoice | undefined, ctx: ToolContext): string | undefined {
  if (!choice) return undefined;
  const caller = modelFromToolContext(ctx);
  const chosen = modelName(choice.model, choice.variant)!;
  if (!caller || caller.providerID !== choice.model.providerID || caller.modelID !== choice.model.modelID) {
    return `model ${chosen} is not yours (${modelName(caller) ?? "unknown"})`;
  }
  const messages = contextMessages(ctx);
  const callerVariant = messages ? lastUser(messages)?.model?.variant : undefined;
  if (choice.variant && choice.variant !== callerVariant) return `variant ${choice.variant} is not yours (${callerVariant ?? "none"})`;
  return undefined;
}

/** What every prompt of a task repeats besides its model: the chosen variant, if any. */
export function variantOf(task: { variant?: string }): { variant?: string } {
  return task.variant ? { variant: task.variant } : {};
}
