/**
 * A one-shot request from /tasks to the server half (discard, continue, raise the budget: task-state.ts
 * REQUEST_KINDS). The TUI cannot call the server half, and the plugin opens no listener: the request
 * goes through OpenCode's own API, as `metadata.offshootRequest` written into the task's child
 * session. OpenCode replaces the whole metadata on update, so the child's current metadata is read
 * first and kept (the published `offshoot` with it). The outcome is what the server half publishes
 * back: the answer to this request's id (with its error when refused), or what `done` recognises in
 * the published state; never the request's own success alone.
 */
import { DISCARD_CONFIRM_MS } from "../constants.js";
import { REQUEST_KEY, type RequestKind, type TaskRequest } from "../task-state.js";
import { readSession, updateMetadata } from "../host/tui-client.js";
import { safe, safeAsync, type Api, type SdkResult } from "./host.js";
import { type OffshootMeta, parseOffshootMeta } from "./meta.js";

export type RequestResult = { ok: true } | { ok: false; reason: string; unconfirmed?: boolean };

export async function sendRequest(
  api: Pick<Api, "client" | "event">,
  sessionID: string,
  kind: RequestKind,
  done: (meta: OffshootMeta, request: TaskRequest) => boolean = (meta, request) => meta.answered?.id === request.id,
): Promise<RequestResult> {
  const current = await safeAsync(async () => (await readSession(api.client, sessionID)) as SdkResult<{ metadata?: Record<string, unknown> }>, {
    error: "threw",
  } as SdkResult<never>);
  if (current.error || !current.data) return { ok: false, reason: "its child session could not be read" };
  const request: TaskRequest = { kind, id: `tui_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 10)}` };
  const on = api.event.on as (type: string, handler: (e: { properties?: Record<string, unknown> }) => void) => () => void;
  let settle!: (r: RequestResult) => void;
  const outcome = new Promise<RequestResult>((resolve) => (settle = resolve));
  const stop = safe(
    () =>
      on("session.updated", (e) => {
        if (e?.properties?.sessionID !== sessionID) return;
        const meta = parseOffshootMeta((e.properties.info as { metadata?: unknown } | undefined)?.metadata);
        if (!meta) return;
        if (meta.answered?.id === request.id && meta.answered.error) settle({ ok: false, reason: meta.answered.error });
        else if (done(meta, request)) settle({ ok: true });
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
