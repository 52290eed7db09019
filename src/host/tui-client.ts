// The TUI half's calls through the TUI plugin api's client (the v2 SDK client, flat parameters),
// and the TUI plugin types. Type-only imports of the host: nothing here pulls server code into
// the TUI bundle. Each call returns the client's own result (`{ data?, error? }`); the caller
// guards it (safeAsync) and reads it.
// `directory`: the instance serving the session (a worktree task's child), else the default one.

import type { TuiPluginApi } from "@opencode-ai/plugin/tui";

export type { TuiPlugin, TuiPluginApi, TuiPluginModule } from "@opencode-ai/plugin/tui";

export type TuiClient = TuiPluginApi["client"];

type Params<F extends (...args: never[]) => unknown> = NonNullable<Parameters<F>[0]>;
export type TuiPromptBody = Omit<Params<TuiClient["session"]["promptAsync"]>, "sessionID" | "directory">;
export type TuiPermissionReply = Params<TuiClient["permission"]["reply"]>["reply"];

const inDirectory = (directory: string | undefined) => (directory ? { directory } : {});

export function readSession(client: TuiClient, sessionID: string) {
  return client.session.get({ sessionID });
}

export function readChildren(client: TuiClient, sessionID: string) {
  return client.session.children({ sessionID });
}

export function readMessages(client: TuiClient, sessionID: string) {
  return client.session.messages({ sessionID });
}

/** Replaces the session's whole metadata (OpenCode does not merge it). */
export function updateMetadata(client: TuiClient, sessionID: string, metadata: Record<string, unknown>) {
  return client.session.update({ sessionID, metadata });
}

export function sendPromptAsync(client: TuiClient, sessionID: string, body: TuiPromptBody, directory?: string) {
  return client.session.promptAsync({ sessionID, ...inDirectory(directory), ...body });
}

export function listPermissions(client: TuiClient) {
  return client.permission.list();
}

/** A request is pending in the instance serving its session: a worktree child's, in the worktree's (the project's instance answers 404). */
export function replyPermission(client: TuiClient, requestID: string, reply: TuiPermissionReply, directory?: string) {
  return client.permission.reply({ requestID, reply, ...inDirectory(directory) });
}

export function listQuestions(client: TuiClient) {
  return client.question.list();
}

export function replyQuestion(client: TuiClient, requestID: string, answers: string[][], directory?: string) {
  return client.question.reply({ requestID, answers, ...inDirectory(directory) });
}

export function rejectQuestion(client: TuiClient, requestID: string, directory?: string) {
  return client.question.reject({ requestID, ...inDirectory(directory) });
}

/** The tool ids the instance offers (each plugin's tools; a name twice where two plugins register it). */
export function readToolIds(client: TuiClient) {
  return client.tool.ids();
}

/** The instance's merged config (its `plugin` list, in the order OpenCode loads them). */
export function readConfig(client: TuiClient) {
  return client.config.get();
}
