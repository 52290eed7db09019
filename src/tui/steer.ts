/**
 * "Send a message" (/tasks, on a running task): the text goes into the task's child session as a
 * user message, which the child's running loop reads at its next step (OpenCode shows no input box
 * in a child session). The message repeats the child's latest agent, model, variant and system, so
 * the child goes on as it was (a native fork keeps its cached prefix); its text part carries the
 * steer mark (task-state.ts), so the server half counts it as a steer. It is reported as delivered
 * only once the server's event shows it stored, never on the request's 204 alone.
 */
import { STEER_CONFIRM_MS } from "../constants.js";
import { STEER_MARK } from "../task-state.js";
import { readMessages, sendPromptAsync } from "../host/tui-client.js";
import { safe, safeAsync, type Api, type SdkResult } from "./host.js";

export type SendResult = { ok: true } | { ok: false; reason: string; unconfirmed?: boolean };

type UserInfo = { role?: string; agent?: string; model?: { providerID?: string; modelID?: string; variant?: string }; system?: string };

/** The child's latest user message: the agent, model, variant and system its run goes on with. */
async function latestUser(api: Pick<Api, "client">, sessionID: string): Promise<UserInfo | undefined> {
  const res = await safeAsync(async () => (await readMessages(api.client, sessionID)) as SdkResult<Array<{ info?: UserInfo }>>, { error: "threw" } as SdkResult<
    never[]
  >);
  if (res.error || !Array.isArray(res.data)) return undefined;
  for (let i = res.data.length - 1; i >= 0; i--) if (res.data[i]?.info?.role === "user") return res.data[i]!.info;
  return undefined;
}

/** `directory`: a worktree task's worktree: its child is served by that directory's OpenCode instance. */
export async function sendToTask(api: Pick<Api, "client" | "event">, sessionID: string, text: string, directory?: string): Promise<SendResult> {
  const user = await latestUser(api, sessionID);
  if (!user?.agent) return { ok: false, reason: "its child session could not be read" };
  const mark = `tui_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 10)}`;
  const on = api.event.on as (type: string, handler: (e: { properties?: Record<string, unknown> }) => void) => () => void;
  const stops: Array<() => void> = [];
  let timer: ReturnType<typeof setTimeout> | undefined;
  let done!: (r: SendResult) => void;
  const outcome = new Promise<SendResult>((resolve) => (done = resolve));
  stops.push(
    safe(
      () =>
        on("message.part.updated", (e) => {
          const part = e?.properties?.part as { sessionID?: string; metadata?: Record<string, unknown> } | undefined;
          if (part?.sessionID === sessionID && part.metadata?.[STEER_MARK] === mark) done({ ok: true });
        }),
      () => {},
    ),
    safe(
      () =>
        on("session.error", (e) => {
          if (e?.properties?.sessionID !== sessionID) return;
          const error = e.properties.error as { name?: string; data?: { message?: string } } | undefined;
          done({ ok: false, reason: `the child session reported an error: ${error?.data?.message ?? error?.name ?? "unknown error"}` });
        }),
      () => {},
    ),
  );
  timer = setTimeout(
    () => done({ ok: false, unconfirmed: true, reason: `the server did not confirm it within ${STEER_CONFIRM_MS / 1000}s` }),
    STEER_CONFIRM_MS,
  );
  const model = user.model?.providerID && user.model.modelID ? { providerID: user.model.providerID, modelID: user.model.modelID } : undefined;
  const res = await safeAsync(
    async () =>
      (await sendPromptAsync(
        api.client,
        sessionID,
        {
          agent: user.agent,
          ...(model ? { model } : {}),
          ...(user.model?.variant ? { variant: user.model.variant } : {}),
          ...(user.system ? { system: user.system } : {}),
          parts: [{ type: "text", text, metadata: { [STEER_MARK]: mark } }],
        },
        directory,
      )) as SdkResult<unknown>,
    { error: "threw" } as SdkResult<unknown>,
  );
  if (res.error) done({ ok: false, reason: "the server refused it (the child session may be gone)" });
  const result = await outcome;
  clearTimeout(timer);
  for (const stop of stops) safe(stop, undefined);
  return result;
}
