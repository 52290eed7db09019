// The v1 client's session calls, one small function each. Each returns the client's own result
// (`{ data, error, response }`): the caller wraps it in `call(what, …)` with its own wording.
// `directory`: the instance serving the session (a worktree task's child), else the default one.

import type { Client } from "./types.js";

type Params<F extends (...args: never[]) => unknown> = NonNullable<Parameters<F>[0]>;
export type CreateSessionBody = NonNullable<Params<Client["session"]["create"]>["body"]>;
export type PromptBody = Params<Client["session"]["prompt"]>["body"];
export type PromptAsyncBody = Params<Client["session"]["promptAsync"]>["body"];
export type UpdateSessionBody = Params<Client["session"]["update"]>["body"];

const inDirectory = (directory: string | undefined) => (directory ? { query: { directory } } : {});

export function createSession(client: Client, body: CreateSessionBody, directory?: string) {
  return client.session.create({ body, ...inDirectory(directory) });
}

export function getSession(client: Client, sessionID: string) {
  return client.session.get({ path: { id: sessionID } });
}

export function deleteSession(client: Client, sessionID: string) {
  return client.session.delete({ path: { id: sessionID } });
}

export function abortSession(client: Client, sessionID: string, directory?: string) {
  return client.session.abort({ path: { id: sessionID }, ...inDirectory(directory) });
}

/** A prompt the server answers before the call returns (with `noReply: true`: only stored). */
export function prompt(client: Client, sessionID: string, body: PromptBody, directory?: string) {
  return client.session.prompt({ path: { id: sessionID }, ...inDirectory(directory), body });
}

/** A prompt that starts the session's loop; the call returns once the server took it. */
export function promptAsync(client: Client, sessionID: string, body: PromptAsyncBody, directory?: string) {
  return client.session.promptAsync({ path: { id: sessionID }, ...inDirectory(directory), body });
}

export function updateSession(client: Client, sessionID: string, body: UpdateSessionBody) {
  return client.session.update({ path: { id: sessionID }, body });
}

/** Sessions of the default instance; `query`: only those updated since `start`, at most `limit`. */
export function listSessions(client: Client, query?: { start: number; limit: number }) {
  return client.session.list((query ? { query } : undefined) as never);
}

/**
 * Drops OpenCode's instance of a directory: the next request naming it boots a new one (config and
 * plugins read again). For a directory made again at the path of one that was gone, whose instance
 * was booted meanwhile without the config that lived there.
 */
export function disposeInstance(client: Client, directory: string) {
  return client.instance.dispose({ query: { directory } });
}
