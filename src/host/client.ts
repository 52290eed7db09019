import type { Client, SessionMessage, SessionStatus } from "./types.js";

export type { Client } from "./types.js";

/** A failed server call, phrased for the agent that will read it. */
export class ServerCallError extends Error {
  constructor(
    readonly what: string,
    readonly status: number | undefined,
    detail: string,
  ) {
    super(`${what} failed${status ? ` (HTTP ${status})` : ""}: ${detail}`);
  }
}

type CallResult<T> = { data?: T; error?: unknown; response?: Response };

export function describeError(error: unknown): string {
  if (error instanceof Error) return error.message;
  if (error && typeof error === "object") {
    const e = error as { name?: string; data?: { message?: string }; message?: string };
    const message = e.data?.message ?? e.message;
    if (message) return e.name ? `${e.name}: ${message}` : message;
    return JSON.stringify(error);
  }
  return String(error ?? "unknown error");
}

/** Awaits a v1 client call and returns its data, or throws a ServerCallError naming `what`. */
export async function call<T>(what: string, request: Promise<CallResult<T>>): Promise<T> {
  let result: CallResult<T>;
  try {
    result = await request;
  } catch (error) {
    throw new ServerCallError(what, undefined, describeError(error));
  }
  const status = result.response?.status;
  if (result.error !== undefined || (status !== undefined && status >= 400)) {
    throw new ServerCallError(what, status, describeError(result.error ?? result.response?.statusText));
  }
  return result.data as T;
}

/** The session is gone (deleted, or never existed): whatever concerned it is over, never retried. */
export function isSessionGone(error: unknown): boolean {
  return error instanceof ServerCallError && (error.status === 404 || error.status === 400);
}

/** Whether a session exists: false only when the server says it is gone, undefined when it cannot tell. */
export async function sessionExists(client: Client, sessionID: string): Promise<boolean | undefined> {
  try {
    await call(`reading session ${sessionID}`, client.session.get({ path: { id: sessionID } }));
    return true;
  } catch (error) {
    return isSessionGone(error) ? false : undefined;
  }
}

/** Stops a session's agent loop; best effort (a session already idle or gone is fine). */
/**
 * Aborts the session's loop, ignoring failures; a task without a child (empty id) has nothing to abort.
 * `directory`: the instance serving the session (a worktree task's child), else the default one.
 */
export async function abortQuietly(client: Client, sessionID: string, directory?: string): Promise<void> {
  if (!sessionID) return;
  await call(`aborting session ${sessionID}`, client.session.abort({ path: { id: sessionID }, ...(directory ? { query: { directory } } : {}) })).catch(
    () => {},
  );
}

export async function getMessages(client: Client, sessionID: string): Promise<SessionMessage[]> {
  const data = await call(`reading the messages of session ${sessionID}`, client.session.messages({ path: { id: sessionID } }));
  return (data ?? []) as unknown as SessionMessage[];
}

/**
 * Sessions that are busy or retrying; idle sessions are absent from the server's answer. Each OpenCode
 * instance knows only its own sessions: the instances of `directories` (active worktree tasks) are asked too.
 */
export async function getBusySessions(client: Client, directories: readonly string[]): Promise<Map<string, SessionStatus>> {
  const reads = [undefined, ...directories].map((directory) =>
    call("reading session status", client.session.status(directory ? { query: { directory } } : undefined)),
  );
  return new Map((await Promise.all(reads)).flatMap((data) => Object.entries((data ?? {}) as Record<string, SessionStatus>)));
}

export function log(client: Client, level: "debug" | "info" | "warn" | "error", message: string, extra?: Record<string, unknown>): void {
  client.app.log({ body: { service: "offshoot", level, message, extra } }).catch(() => {});
}
