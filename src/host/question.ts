// The question tool's answer route, which the v1 client lacks.

import { describeError } from "./client.js";
import type { Client } from "./types.js";

/**
 * Sends the answers (one list per question) with the plugin's own client: the v1 client has no
 * question call, so the request goes through its HTTP layer (same server, directory and headers).
 * `directory`: the instance where the question waits (a worktree task's child), else the default one.
 */
export async function replyToQuestion(client: Client, requestID: string, answers: string[][], directory?: string): Promise<void> {
  const http = (client as unknown as { _client?: { post(options: object): Promise<{ error?: unknown; response?: Response }> } })._client;
  if (!http) throw new Error("this OpenCode client cannot answer questions");
  const result = await http.post({
    url: "/question/{requestID}/reply",
    path: { requestID },
    body: { answers },
    // a worktree task's question waits in its worktree's instance
    ...(directory ? { query: { directory } } : {}),
    headers: { "Content-Type": "application/json" },
  });
  const status = result.response?.status;
  if (result.error !== undefined || (status !== undefined && status >= 400)) {
    throw new Error(`HTTP ${status ?? "error"}: ${describeError(result.error ?? result.response?.statusText)}`);
  }
}
