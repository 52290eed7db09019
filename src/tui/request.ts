/**
 * The /tasks actions the server half carries out (task-state.ts REQUEST_KINDS): take an ended worktree
 * task's changes, discard its worktree and branch, continue a paused or interrupted task, raise the
 * session's budget, cancel a task that has not ended. The TUI cannot call the server half, and the plugin opens no listener: the request
 * goes through OpenCode's own API, as a one-shot `metadata.offshootRequest` (its kind and a unique id)
 * written into the task's child session. OpenCode replaces the whole metadata on update, so the
 * child's current metadata is read first and kept (the published `offshoot` with it). The outcome is
 * what the server half publishes back: the answer to this request's id (with its error, or what it
 * did), or for a discard the worktree marked removed; never the request's own success alone.
 */
import { TASK_REQUEST_CONFIRM_MS } from "../constants.js";
import { REQUEST_KEY, type RequestKind, type TaskRequest } from "../task-state.js";
import { readSession, updateMetadata } from "../host/tui-client.js";
import { safe, safeAsync, type Api, type SdkResult } from "./host.js";
import { parseOffshootMeta } from "./meta.js";

export type RequestResult = { ok: true; message?: string } | { ok: false; reason: string; unconfirmed?: boolean };

/**
 * The `removed` a discard leaves when it worked (seen even if the answer itself were missed). A take
 * waits for its answer: the task's state is published with `removed: "taken"` just before the
 * answer that says what was written (and a take with keep: true removes nothing).
 */
const REMOVED_BY: Partial<Record<RequestKind, string>> = { discard: "discarded" };

/**
 * `viaParent`: the task's parent session, to write the request there instead of into the child (a
 * worktree task whose directory was freed: task-state.ts TaskRequest `child`); the answer still comes
 * with the child's published state, and the request is removed from the parent's metadata after.
 */
export async function requestTaskAction(
  api: Pick<Api, "client" | "event">,
  sessionID: string,
  kind: RequestKind,
  viaParent?: string,
  /** a permission's reply (kind "permission", a task on a remote): which request, and the reply */
  fields: Pick<TaskRequest, "requestID" | "reply"> = {},
): Promise<RequestResult> {
  const target = viaParent ?? sessionID;
  const current = await safeAsync(async () => (await readSession(api.client, target)) as SdkResult<{ metadata?: Record<string, unknown> }>, {
    error: "threw",
  } as SdkResult<never>);
  if (current.error || !current.data) return { ok: false, reason: `its ${viaParent ? "parent" : "child"} session could not be read` };
  const now = Date.now();
  const request: TaskRequest = {
    kind,
    id: `tui_${now.toString(36)}_${Math.random().toString(36).slice(2, 10)}`,
    ...(viaParent ? { child: sessionID, at: now } : {}),
    ...fields,
  };
  const on = api.event.on as (type: string, handler: (e: { properties?: Record<string, unknown> }) => void) => () => void;
  let done!: (r: RequestResult) => void;
  const outcome = new Promise<RequestResult>((resolve) => (done = resolve));
  const stop = safe(
    () =>
      on("session.updated", (e) => {
        if (e?.properties?.sessionID !== sessionID) return;
        const meta = parseOffshootMeta((e.properties.info as { metadata?: unknown } | undefined)?.metadata);
        const answered = meta?.answered?.id === request.id ? meta.answered : undefined;
        if (answered?.error) done({ ok: false, reason: answered.error });
        else if (answered) done({ ok: true, ...(answered.message ? { message: answered.message } : {}) });
        else if (REMOVED_BY[kind] && meta?.worktree?.removed === REMOVED_BY[kind]) done({ ok: true });
      }),
    () => {},
  );
  const timer = setTimeout(
    () => done({ ok: false, unconfirmed: true, reason: `the server did not answer within ${TASK_REQUEST_CONFIRM_MS / 1000}s` }),
    TASK_REQUEST_CONFIRM_MS,
  );
  const res = await safeAsync(
    async () => (await updateMetadata(api.client, target, { ...(current.data!.metadata ?? {}), [REQUEST_KEY]: request })) as SdkResult<unknown>,
    { error: "threw" } as SdkResult<unknown>,
  );
  if (res.error) done({ ok: false, reason: `the server refused the request (the ${viaParent ? "parent" : "child"} session may be gone)` });
  const result = await outcome;
  clearTimeout(timer);
  safe(stop, undefined);
  if (viaParent && !res.error) await removeRequest(api, viaParent, request.id);
  return result;
}

/** The parent's metadata without this request (the server half publishes no state of the parent that would drop it). */
async function removeRequest(api: Pick<Api, "client">, parent: string, id: string): Promise<void> {
  const now = await safeAsync(async () => (await readSession(api.client, parent)) as SdkResult<{ metadata?: Record<string, unknown> }>, {
    error: "threw",
  } as SdkResult<never>);
  const metadata = now.data?.metadata;
  if (now.error || !metadata || (metadata[REQUEST_KEY] as { id?: unknown } | undefined)?.id !== id) return;
  const { [REQUEST_KEY]: _request, ...rest } = metadata;
  await safeAsync(async () => (await updateMetadata(api.client, parent, rest)) as SdkResult<unknown>, { error: "threw" } as SdkResult<unknown>);
}
