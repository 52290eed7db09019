// The one seam to another OpenCode server (a remote, "B"): every call a remote task makes to B goes
// through a RemoteTransport. The one implementation here speaks B's HTTP API (`opencode serve`) with
// HTTP Basic auth; OpenCode's workspace adaptors, once they leave their flag, can be another. Like the
// rest of host/, it imports nothing of ours.
//
// What B's API offers and its traps (../../docs/remote.md): every route takes `?directory=`; a
// directory that does not exist on B makes a `global` session silently (so B's directory is checked
// with GET /vcs first); the event streams carry no ids and no replay (so the state is read again on
// every connect); the password is shell access to B. Nothing here ever puts the password in a URL,
// an error or a log line: errors name the remote by its name only.

/** Where a remote is and how to log in; `password` read from the environment by the caller, never stored. */
export interface RemoteEndpoint {
  /** the remote's name, the only thing errors name */
  name: string;
  /** `https://…` or `http://` to a loopback address (checked by the options) */
  url: string;
  /** OpenCode's server user (default "opencode") */
  username?: string;
  password: string | undefined;
}

/** Why a call to a remote failed: it refused the password, it could not be reached, or it answered an error. */
export type RemoteFailure = "auth" | "unreachable" | "gone" | "http";

export class RemoteCallError extends Error {
  constructor(
    readonly kind: RemoteFailure,
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}

/** A session on the remote, as its API returns it (what a remote task reads of it). */
export interface RemoteSession {
  id: string;
  parentID?: string;
  directory?: string;
  metadata?: Record<string, unknown>;
}

/** One event of the remote's `/global/event` stream: the instance's directory and the bus event. */
export interface RemoteEvent {
  directory?: string;
  payload: { type: string; properties?: Record<string, unknown> };
}

/** Everything a remote task asks of the remote server. Each call throws a RemoteCallError. */
export interface RemoteTransport {
  readonly name: string;
  /** `GET /global/health`: the remote's OpenCode version (its password checked on the way) */
  health(): Promise<{ version: string }>;
  /** `GET /vcs?directory=`: the branch checked out there, null where there is no git repository (or no such directory) */
  vcs(directory: string): Promise<{ branch: string | null }>;
  createSession(directory: string, body: { title: string; parentID?: string; metadata?: Record<string, unknown> }): Promise<RemoteSession>;
  getSession(id: string, directory?: string): Promise<RemoteSession>;
  /** replaces the session's whole metadata (OpenCode does not merge it) */
  updateMetadata(id: string, directory: string, metadata: Record<string, unknown>): Promise<void>;
  deleteSession(id: string, directory: string): Promise<void>;
  messages(id: string, directory?: string): Promise<unknown[]>;
  children(id: string, directory: string): Promise<RemoteSession[]>;
  replyPermission(requestID: string, reply: "once" | "always" | "reject", directory: string): Promise<void>;
  replyQuestion(requestID: string, answers: string[][], directory: string): Promise<void>;
  /**
   * Follows `/global/event` until `signal` aborts or the stream ends (then it resolves; a failure to
   * connect rejects). `connected` is called once the remote answered.
   */
  events(onEvent: (event: RemoteEvent) => void, signal: AbortSignal, connected?: () => void): Promise<void>;
}

/** How long one call may take before it counts as unreachable. */
const CALL_TIMEOUT_MS = 20_000;

function authHeader(endpoint: RemoteEndpoint): Record<string, string> {
  if (!endpoint.password) return {};
  const token = Buffer.from(`${endpoint.username || "opencode"}:${endpoint.password}`).toString("base64");
  return { Authorization: `Basic ${token}` };
}

/** Why fetch failed, in words that never carry the URL (Node's fetch puts the address in `cause`). */
function unreachable(name: string, error: unknown): RemoteCallError {
  const cause = (error as { cause?: { code?: string } })?.cause;
  const code = cause?.code ?? (error as { name?: string })?.name;
  const why =
    code === "ECONNREFUSED"
      ? "connection refused"
      : code === "ECONNRESET" || code === "UND_ERR_SOCKET"
        ? "the connection was cut"
        : code === "TimeoutError" || code === "UND_ERR_CONNECT_TIMEOUT" || code === "AbortError"
          ? "no answer in time"
          : code === "ENOTFOUND" || code === "EAI_AGAIN"
            ? "its host name does not resolve"
            : "it could not be reached";
  return new RemoteCallError("unreachable", `remote "${name}" is unreachable: ${why}`);
}

/** The transport over B's HTTP API. */
export function httpRemote(endpoint: RemoteEndpoint, options: { timeoutMs?: number } = {}): RemoteTransport {
  const base = endpoint.url.replace(/\/+$/, "");
  const name = endpoint.name;
  const timeoutMs = options.timeoutMs ?? CALL_TIMEOUT_MS;

  async function request<T>(method: string, path: string, query: Record<string, string | undefined>, body?: unknown): Promise<T> {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) if (v !== undefined) params.set(k, v);
    const url = `${base}${path}${params.size ? `?${params}` : ""}`;
    let response: Response;
    try {
      response = await fetch(url, {
        method,
        headers: { ...authHeader(endpoint), ...(body !== undefined ? { "Content-Type": "application/json" } : {}), Accept: "application/json" },
        body: body !== undefined ? JSON.stringify(body) : undefined,
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (error) {
      throw unreachable(name, error);
    }
    const text = await response.text().catch(() => "");
    if (response.status === 401 || response.status === 403)
      throw new RemoteCallError("auth", `remote "${name}" refused the password (HTTP ${response.status})`, response.status);
    if (response.status === 404) throw new RemoteCallError("gone", `remote "${name}": ${method} ${path} found nothing (HTTP 404)`, 404);
    if (response.status >= 400) {
      const detail = text.replace(/\s+/g, " ").slice(0, 300);
      throw new RemoteCallError("http", `remote "${name}": ${method} ${path} failed (HTTP ${response.status})${detail ? `: ${detail}` : ""}`, response.status);
    }
    if (!text) return undefined as T;
    try {
      return JSON.parse(text) as T;
    } catch {
      return text as T;
    }
  }

  return {
    name,
    async health() {
      const data = await request<{ healthy?: boolean; version?: string }>("GET", "/global/health", {});
      if (!data || data.healthy !== true) throw new RemoteCallError("http", `remote "${name}" does not report itself healthy`);
      return { version: String(data.version ?? "") };
    },
    async vcs(directory) {
      const data = await request<{ branch?: string | null }>("GET", "/vcs", { directory });
      return { branch: typeof data?.branch === "string" && data.branch ? data.branch : null };
    },
    createSession: (directory, body) => request<RemoteSession>("POST", "/session", { directory }, body),
    getSession: (id, directory) => request<RemoteSession>("GET", `/session/${encodeURIComponent(id)}`, { directory }),
    async updateMetadata(id, directory, metadata) {
      await request("PATCH", `/session/${encodeURIComponent(id)}`, { directory }, { metadata });
    },
    async deleteSession(id, directory) {
      await request("DELETE", `/session/${encodeURIComponent(id)}`, { directory });
    },
    messages: async (id, directory) => (await request<unknown[]>("GET", `/session/${encodeURIComponent(id)}/message`, { directory })) ?? [],
    children: async (id, directory) => (await request<RemoteSession[]>("GET", `/session/${encodeURIComponent(id)}/children`, { directory })) ?? [],
    async replyPermission(requestID, reply, directory) {
      await request("POST", `/permission/${encodeURIComponent(requestID)}/reply`, { directory }, { reply });
    },
    async replyQuestion(requestID, answers, directory) {
      await request("POST", `/question/${encodeURIComponent(requestID)}/reply`, { directory }, { answers });
    },
    async events(onEvent, signal, connected) {
      let response: Response;
      try {
        response = await fetch(`${base}/global/event`, { headers: { ...authHeader(endpoint), Accept: "text/event-stream" }, signal });
      } catch (error) {
        if (signal.aborted) return;
        throw unreachable(name, error);
      }
      if (response.status === 401 || response.status === 403)
        throw new RemoteCallError("auth", `remote "${name}" refused the password (HTTP ${response.status})`, response.status);
      if (!response.ok || !response.body)
        throw new RemoteCallError("http", `remote "${name}": its event stream failed (HTTP ${response.status})`, response.status);
      connected?.();
      const reader = response.body.getReader();
      const decoder = new TextDecoder();
      let buffer = "";
      try {
        for (;;) {
          const { value, done } = await reader.read();
          if (done) return;
          buffer += decoder.decode(value, { stream: true });
          let cut: number;
          while ((cut = buffer.indexOf("\n\n")) >= 0) {
            const block = buffer.slice(0, cut);
            buffer = buffer.slice(cut + 2);
            const data = block
              .split("\n")
              .filter((line) => line.startsWith("data:"))
              .map((line) => line.slice(5).trimStart())
              .join("\n");
            if (!data) continue;
            try {
              const parsed = JSON.parse(data) as RemoteEvent;
              if (parsed && typeof parsed === "object" && parsed.payload && typeof parsed.payload.type === "string") onEvent(parsed);
            } catch {
              // (a line that is not an event: skipped)
            }
          }
          if (buffer.length > 4_000_000) buffer = ""; // (an event that never ends is not followed)
        }
      } catch (error) {
        if (signal.aborted) return;
        throw unreachable(name, error);
      } finally {
        reader.releaseLock?.();
      }
    },
  };
}
