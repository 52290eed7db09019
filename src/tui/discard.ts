/**
 * "Discard worktree and branch" (/tasks, on an ended worktree task). The TUI cannot call the server
 * half, and the plugin opens no listener: the request goes through OpenCode's own API, as a one-shot
 * `metadata.offshootRequest` written into the task's child session (task-state.ts). OpenCode
 * replaces the whole metadata on update, so the child's current metadata is read first and kept
 * (the published `offshoot` with it). The outcome is what the server half publishes back: the
 * worktree marked removed, or the answer to this request's id with its error; never the request's
 * own success alone.
 */
import { DISCARD_CONFIRM_MS } from "../constants.js";
import { REQUEST_KEY, type TaskRequest } from "../task-state.js";
import { readSession, updateMetadata } from "../host/tui-client.js";
import { safe, safeAsync, type Api, type SdkResult } from "./host.js";
import { parseOffshootMeta } from "./meta.js";

export type DiscardResult = { ok: true } | { ok: false; reason: string; unconfirmed?: boolean };

export async function requestDiscard(api: Pick<Api, "client" | "event">, sessionID: string): Promise<DiscardResult> {
  const current = await safeAsync(async () => (await readSession(api.client, sessionID)) as SdkResult<{ metadata?: Record<string, unknown> }>, {
    error: "threw",
  } as SdkResult<never>);
  if (current.error || !current.data) return { ok: false, reason: "its child session could not be read" };
  const request: TaskRequest = { kind: "discard", id: `tui_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 10)}` };
  const on = api.event.on as (type: string, handler: (e: { properties?: Record<string, unknown> }) => void) => () => void;
  let settle!: (r: DiscardResult) => void;
  const outcome = new Promise<DiscardResult>((resolve) => (settle = resolve));
  const stop = safe(
    () =>
      on("session.updated", (e) => {
        if (e?.properties?.sessionID !== sessionID) return;
        const meta = parseOffshootMeta((e.properties.info as { metadata?: unknown } | undefined)?.metadata);
        if (meta?.answered?.id === request.id && meta.answered.error) settle({ ok: false, reason: meta.answered.error });
        else if (meta?.worktree?.removed) settle({ ok: true });
      }),
    () => {},
  );
  const timer = setTimeout(
    () => settle({ ok: false, unconfirmed: true, reason: `the server did not answer within ${DISCARD_CONFIRM_MS / 1000}s` }),
    DISCARD_CONFIRM_MS,
  );
  const res = await safeAsync(
    async () => (await updateMetadata(api.client, sessionID, { ...(current.data!.metadata ?? {}), [REQUEST_KEY]: request })) as SdkResult<unknown>,
    { error: "threw" } as SdkResult<unknown>,
  );
  if (res.error) settle({ ok: false, reason: "the server refused the request (the child session may be gone)" });
  const result = await outcome;
  clearTimeout(timer);
  safe(stop, undefined);
  return result;
}
