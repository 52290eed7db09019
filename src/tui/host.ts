/**
 * The slice of the TUI plugin api (OpenCode 1.18.33; its types come through src/host/tui-client.ts) this plugin
 * uses, typed loosely on purpose: every call goes through `safe()`, and the unit tests pass a
 * small fake of exactly this shape.
 */
import type { TuiPluginApi } from "../host/tui-client.js";

export type Api = Pick<
  TuiPluginApi,
  "client" | "event" | "ui" | "route" | "attention" | "keymap" | "keys" | "slots" | "theme" | "kv" | "lifecycle" | "renderer" | "state"
>;

/**
 * The session's own cost: its assistant messages' `cost`, from the host's message store (the same
 * figure OpenCode's own sidebar shows). Reactive inside a Solid memo; 0 when the host cannot tell.
 */
export function sessionOwnCost(api: Pick<Api, "state">, sessionID: string): number {
  return safe(() => {
    let cost = 0;
    for (const m of api.state.session.messages(sessionID)) {
      const c = m.role === "assistant" ? (m as { cost?: unknown }).cost : undefined;
      if (typeof c === "number" && Number.isFinite(c) && c > 0) cost += c;
    }
    return cost;
  }, 0);
}

/** The result shape of the v2 SDK calls: `{ data?, error? }` (no throw without throwOnError). */
export interface SdkResult<T> {
  data?: T;
  error?: unknown;
}

/** Run `fn`; on a throw, return `fallback` (plugin code never throws out of a hook or a render). */
export function safe<T>(fn: () => T, fallback: T): T {
  try {
    return fn();
  } catch {
    return fallback;
  }
}

export async function safeAsync<T>(fn: () => Promise<T>, fallback: T): Promise<T> {
  try {
    return await fn();
  } catch {
    return fallback;
  }
}

/** The session shown by the TUI right now, if the route is a session. */
export function currentSessionID(api: Pick<Api, "route">): string | undefined {
  return safe(() => {
    const r = api.route.current as { name: string; params?: Record<string, unknown> };
    return r.name === "session" && typeof r.params?.sessionID === "string" ? r.params.sessionID : undefined;
  }, undefined);
}
