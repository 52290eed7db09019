/**
 * "Discard worktree and branch" (/tasks, on an ended worktree task): a `discard` request
 * (request.ts). Done when the server half publishes the worktree as removed.
 */
import type { Api } from "./host.js";
import { type RequestResult, sendRequest } from "./request.js";

export type DiscardResult = RequestResult;

export function requestDiscard(api: Pick<Api, "client" | "event">, sessionID: string): Promise<DiscardResult> {
  return sendRequest(api, sessionID, "discard", (meta) => Boolean(meta.worktree?.removed));
}
