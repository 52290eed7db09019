// The one sender of a message to a task's child: the launch's first prompt, a queued task's start, a
// resume's follow-up and a steer (a marked message into a running child, steer.ts), all prompt_async;
// and a text fork's inherited context, stored before the first prompt without a reply (storeForkContext).
// Every prompt goes with the task's agent, model and chosen variant; a native fork's first prompt is
// the native body (the parent's request continues), its later ones repeat its variant and system
// (the prefix it shares with the parent depends on them). Throws what the server answered.

import { type Client, call } from "../../host/client.js";
import { type PromptAsyncBody, prompt, promptAsync } from "../../host/session.js";
import { type NativeLaunch, nativeFollowUpExtras, nativePromptBody } from "../../native/launch.js";
import { STEER_MARK } from "../../task-state.js";
import { sessionDirectory } from "../../worktree/hub.js";
import { variantOf } from "./model-choice.js";
import type { BackgroundTask } from "../../task-record.js";

export interface PromptOptions {
  /** what is being done, for the error ("sending the task prompt") */
  what: string;
  /** the first prompt of a native fork: the native body (src/native) */
  native?: NativeLaunch;
  /** a steer's mark (steer.ts): on the text part's metadata, never sent to the model */
  mark?: string;
}

type TextPart = { type: "text"; text: string; metadata?: Record<string, string> };

/** A text fork's inherited context, stored in the child before its first prompt: noReply, so no model turn. */
export async function storeForkContext(client: Client, task: BackgroundTask, sessionID: string, text: string, directory: string | undefined): Promise<void> {
  await call(
    "injecting the fork context",
    prompt(client, sessionID, { noReply: true, agent: task.agent, model: task.model, parts: [{ type: "text", text }] }, directory),
  );
}

export async function sendTaskPrompt(client: Client, task: BackgroundTask, text: string, options: PromptOptions): Promise<void> {
  const part: TextPart = { type: "text", text, ...(options.mark ? { metadata: { [STEER_MARK]: options.mark } } : {}) };
  // The server takes `variant` and `system` (v2 API); the v1 client's type lacks them.
  const body = options.native
    ? nativePromptBody(options.native, text)
    : { agent: task.agent, model: task.model, ...variantOf(task), ...nativeFollowUpExtras(task.fork), parts: [part] };
  await call(options.what, promptAsync(client, task.sessionID, body as PromptAsyncBody, sessionDirectory(task.sessionID)));
}
