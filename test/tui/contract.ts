/**
 * Stand-in for the server half in the contract-level TUI scenarios: creates real child sessions
 * carrying `metadata.offshoot` exactly as the server half does (POST /session), updates it
 * (PATCH /session/:id), prompts the child so a real agent loop runs in it, and aborts it.
 */
import type { PublishedTaskState } from "../../src/task-state.js";
import type { OpencodeServer } from "../e2e/harness/opencode.js";

/** What the server half publishes (the TUI's scenarios use no owner process). */
export type TaskMeta = Omit<PublishedTaskState, "ownerPid">;

async function call(server: OpencodeServer, method: string, path: string, body?: unknown): Promise<any> {
  const res = await fetch(`${server.url}${path}?directory=${encodeURIComponent(server.directory)}`, {
    method,
    headers: { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: HTTP ${res.status} ${text.slice(0, 300)}`);
  return text ? JSON.parse(text) : undefined;
}

export class FakeServerHalf {
  private metas = new Map<string, TaskMeta>();
  private n = 0;
  constructor(private server: OpencodeServer) {}

  /** A child session of `parentID` for a task (what `background_task` creates). */
  async createTask(parentID: string, o: { description: string; agent?: string }): Promise<{ id: string; meta: TaskMeta }> {
    const meta: TaskMeta = {
      v: 1,
      taskId: `bg_test${++this.n}`,
      parentSessionID: parentID,
      description: o.description,
      forked: true,
      agent: o.agent ?? "general",
      status: "running",
      startedAt: Date.now(),
    };
    const s = await call(this.server, "POST", "/session", { parentID, title: `Background (forked): ${o.description}`, metadata: { offshoot: meta } });
    this.metas.set(s.id, meta);
    return { id: s.id, meta };
  }

  /** Update the task's metadata (status changes, permission waits). */
  async update(childID: string, patch: Partial<TaskMeta>): Promise<TaskMeta> {
    const meta = { ...this.metas.get(childID)!, ...patch };
    this.metas.set(childID, meta);
    const s = await call(this.server, "PATCH", `/session/${childID}`, { metadata: { offshoot: meta } });
    if (s?.metadata?.offshoot?.status !== meta.status) throw new Error(`PATCH did not store the metadata: ${JSON.stringify(s?.metadata)}`);
    return meta;
  }

  /** Abort the child's agent loop (what the server half does for a cancel request of /tasks). */
  async abort(childID: string): Promise<void> {
    await call(this.server, "POST", `/session/${childID}/abort`);
  }

  /** Start the child's agent loop (returns at once). */
  async prompt(childID: string, text: string, agent?: string): Promise<void> {
    await call(this.server, "POST", `/session/${childID}/prompt_async`, { agent, parts: [{ type: "text", text }] });
  }
}
