/**
 * The slice of the TUI plugin api (`@opencode-ai/plugin/tui`, OpenCode 1.18.33) this plugin
 * uses, typed loosely on purpose: every call goes through `safe()`, and the unit tests pass a
 * small fake of exactly this shape.
 */
import type { TuiPluginApi } from "@opencode-ai/plugin/tui";

export type Api = Pick<
  TuiPluginApi,
  "client" | "event" | "ui" | "route" | "attention" | "keymap" | "keys" | "slots" | "theme" | "kv" | "lifecycle" | "renderer"
>;

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
