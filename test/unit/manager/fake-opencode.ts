/**
 * An in-memory stand-in for the v1 client OpenCode hands to plugins, for unit tests of the lifecycle.
 * Responses are cloned from shapes recorded on the real server (test/fixtures/recorded/, npm run record-fixtures) and events
 * use the recorded envelope; the end-to-end suite proves the same scenarios against the real server.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Event } from "@opencode-ai/sdk/v2";
import type { SessionMessage } from "../../../src/fork/types.js";
import type { Client } from "../../../src/host/client.js";

const samples = join(import.meta.dirname, "../../fixtures/recorded");
const load = (name: string) => JSON.parse(readFileSync(join(samples, name), "utf8"));
const CHILD_SESSION = load("session.create.child.json").data;
const NO_REPLY = load("session.prompt.noReply.json").data;
const ABORTED = load("session.messages.aborted.json").data as SessionMessage[];
const BAD_AGENT = load("session.prompt.badAgent.json");
const FULL = load("session.messages.full.json").data as SessionMessage[];

type Result = { data?: unknown; error?: unknown; response: { status: number; statusText: string } };
type Call = { method: string; options: any };
type SessionState = { info: any; messages: SessionMessage[]; busy: boolean };
export type Reply = {
  text?: string;
  tools?: { tool: string; input: Record<string, unknown>; output: string }[];
  error?: { name: string; data: { message: string } };
};

let counter = 0;
const nextId = (prefix: string) => `${prefix}_${(++counter).toString(36).padStart(6, "0")}fake${Math.random().toString(36).slice(2, 8)}`;
const clone = <T>(v: T): T => structuredClone(v);

export class FakeOpencode {
  readonly calls: Call[] = [];
  readonly sessions = new Map<string, SessionState>();
  readonly toasts: any[] = [];
  readonly logs: any[] = [];
  agents = [
    { name: "build", mode: "primary" },
    { name: "plan", mode: "primary" },
    { name: "general", mode: "subagent" },
    { name: "explore", mode: "subagent" },
    { name: "title", mode: "primary", hidden: true },
  ];
  /** the plugin's event hook; events are delivered to it asynchronously like the real server does */
  sink: ((event: Event) => Promise<void>) | undefined;
  /** when set, a prompted child answers by itself after the prompt */
  autoReply: ((sessionID: string, prompt: string) => Reply | undefined) | undefined;
  private failures = new Map<string, { status: number; error: unknown }>();
  private pendingEvents: Promise<void>[] = [];

  constructor() {
    const self = this;
    const record = (method: string, fn: (o: any) => Result | Promise<Result>) => async (options: any) => {
      self.calls.push({ method, options: clone(options) });
      for (const waiter of [...self.callWaiters]) if (waiter.method === method && self.callsOf(method).length >= waiter.times) waiter.reached();
      const gate = self.gates.get(method);
      if (gate) await gate; // (no await otherwise: an ungated call runs at once, as before)
      const failure = self.failures.get(method);
      if (failure) {
        self.failures.delete(method);
        return { error: failure.error, response: { status: failure.status, statusText: "error" } };
      }
      return fn(options ?? {});
    };
    this.client = {
      session: {
        create: record("session.create", (o) => ok(this.createSession(o.body ?? {}))),
        get: record("session.get", (o) => {
          const s = this.sessions.get(o.path.id);
          return s ? ok(s.info) : fail(404, { name: "NotFoundError", data: { message: `Session not found: ${o.path.id}` } });
        }),
        messages: record("session.messages", (o) => {
          const s = this.sessions.get(o.path.id);
          return s ? ok(clone(s.messages)) : fail(404, { name: "NotFoundError", data: { message: "Session not found" } });
        }),
        prompt: record("session.prompt", (o) => this.prompt(o.path.id, o.body, false)),
        promptAsync: record("session.promptAsync", (o) => this.prompt(o.path.id, o.body, true)),
        list: record("session.list", () => ok([...this.sessions.values()].map((s) => clone(s.info)))),
        update: record("session.update", (o) => {
          const s = this.sessions.get(o.path.id);
          if (!s) return fail(404, { name: "NotFoundError", data: { message: `Session not found: ${o.path.id}` } });
          Object.assign(s.info, clone(o.body ?? {}));
          return ok(s.info);
        }),
        abort: record("session.abort", (o) => ok(this.abort(o.path.id))),
        delete: record("session.delete", (o) => ok(this.sessions.delete(o.path.id))),
        status: record("session.status", () => ok(Object.fromEntries([...this.sessions].filter(([, s]) => s.busy).map(([id]) => [id, { type: "busy" }])))),
      },
      // the provider list the real server answers for the e2e config (test/e2e/harness/opencode.ts)
      config: {
        providers: record("config.providers", () =>
          ok({
            providers: [
              { id: "mock", models: { "mock-model": { id: "mock-model", variants: {} }, "other-model": { id: "other-model", variants: { high: {} } } } },
            ],
          }),
        ),
      },
      app: {
        agents: record("app.agents", () => ok(clone(this.agents))),
        log: record("app.log", (o) => {
          this.logs.push(o.body);
          return ok(true);
        }),
      },
      // (the real server drops that directory's instance; the next request naming it boots a new one)
      instance: {
        dispose: record("instance.dispose", () => ok(true)),
      },
      tui: {
        showToast: record("tui.showToast", (o) => {
          this.toasts.push(o.body);
          return ok(true);
        }),
      },
      // the v1 client's HTTP layer: the plugin answers questions through it (the v1 client has no question call)
      _client: {
        post: record("http.post", (o) => {
          const match = /^\/question\/\{requestID\}\/reply$/.exec(o.url ?? "");
          const asked = match ? this.questions.get(o.path?.requestID) : undefined;
          if (!asked) return fail(404, { name: "NotFoundError", data: { message: `no pending request ${o.path?.requestID}` } });
          this.questions.delete(o.path.requestID);
          this.emit({ type: "question.replied", properties: { sessionID: asked.sessionID, requestID: o.path.requestID, answers: o.body.answers } });
          return ok(true);
        }),
      },
    } as unknown as Client;
  }

  readonly client: Client;

  private gates = new Map<string, Promise<void>>();
  /** pending questions by request id (the `question` tool of a child) */
  readonly questions = new Map<string, { sessionID: string }>();

  /** The child calls its `question` tool: `question.asked` with the recorded shape; returns the request id. */
  ask(sessionID: string, questions: unknown[]): string {
    const id = nextId("que");
    this.questions.set(id, { sessionID });
    this.emit({ type: "question.asked", properties: { id, sessionID, questions, tool: { messageID: nextId("msg"), callID: nextId("call") } } });
    return id;
  }

  /** Calls of `method` wait until the returned function is called (a slow server, on purpose). */
  hold(method: string): () => void {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    this.gates.set(method, gate);
    return () => {
      if (this.gates.get(method) === gate) this.gates.delete(method);
      release();
    };
  }

  private readonly callWaiters = new Set<{ method: string; times: number; reached: () => void }>();

  /** Resolves once `method` has been called `times` times (at once if it has been): where a held call has got to. */
  called(method: string, times = 1): Promise<void> {
    if (this.callsOf(method).length >= times) return Promise.resolve();
    return new Promise((resolve) => {
      const waiter = { method, times, reached: () => (this.callWaiters.delete(waiter), resolve()) };
      this.callWaiters.add(waiter);
    });
  }

  failNext(method: string, status = 500, error: unknown = BAD_AGENT.error): void {
    this.failures.set(method, { status, error });
  }

  callsOf(method: string): Call[] {
    return this.calls.filter((c) => c.method === method);
  }

  /** A parent session holding a real recorded history (the full sample), idle. */
  addParent(messages: SessionMessage[] = FULL): string {
    const info = clone(CHILD_SESSION);
    info.id = nextId("ses");
    delete info.parentID;
    info.title = "parent";
    const copy = clone(messages).map((m) => ({ ...m, info: { ...m.info, sessionID: info.id } }));
    this.sessions.set(info.id, { info, messages: copy as SessionMessage[], busy: false });
    return info.id;
  }

  createSession(body: { parentID?: string; title?: string; metadata?: unknown }): any {
    const info = clone(CHILD_SESSION);
    info.id = nextId("ses");
    info.parentID = body.parentID;
    info.title = body.title ?? "New session";
    if (body.metadata) info.metadata = clone(body.metadata);
    this.sessions.set(info.id, { info, messages: [], busy: false });
    return info;
  }

  children(parentID: string): any[] {
    return [...this.sessions.values()].filter((s) => s.info.parentID === parentID).map((s) => s.info);
  }

  private prompt(sessionID: string, body: any, async: boolean): Result {
    const session = this.sessions.get(sessionID);
    if (!session) return fail(404, { name: "NotFoundError", data: { message: "Session not found" } });
    if (body.agent && !this.agents.some((a) => a.name === body.agent)) return fail(500, BAD_AGENT.error);
    const message = clone(NO_REPLY);
    message.info.id = nextId("msg");
    message.info.sessionID = sessionID;
    message.info.time.created = Date.now();
    message.info.agent = body.agent ?? "build";
    if (body.model) message.info.model = body.model;
    message.parts = body.parts.map((p: any) => ({ ...p, id: nextId("prt"), sessionID, messageID: message.info.id }));
    session.messages.push(message);
    // The real server announces every stored part, the user's included.
    for (const part of message.parts) this.emit({ type: "message.part.updated", properties: { sessionID, part, time: Date.now() } });
    if (body.noReply) return ok(message);
    session.busy = true;
    this.emit({ type: "session.status", properties: { sessionID, status: { type: "busy" } } });
    const reply = this.autoReply?.(sessionID, body.parts.map((p: any) => p.text ?? "").join("\n"));
    if (reply) queueMicrotask(() => this.answer(sessionID, reply));
    return async ? { response: { status: 204, statusText: "No Content" } } : ok(message);
  }

  /** The child's model answers its latest prompt, then the session goes idle (as recorded). */
  answer(sessionID: string, reply: Reply): void {
    const session = this.sessions.get(sessionID)!;
    const lastUser = [...session.messages].reverse().find((m) => m.info.role === "user")!;
    const info: any = clone(FULL[1]!.info);
    Object.assign(info, { id: nextId("msg"), sessionID, parentID: lastUser.info.id, time: { created: Date.now(), completed: Date.now() } });
    if (reply.error) {
      info.error = reply.error;
      delete info.finish;
    }
    const parts: any[] = [];
    for (const t of reply.tools ?? []) {
      const part = {
        id: nextId("prt"),
        sessionID,
        messageID: info.id,
        type: "tool",
        callID: nextId("call"),
        tool: t.tool,
        state: { status: "completed", input: t.input, output: t.output, title: t.tool, metadata: {}, time: { start: 1, end: 2 } },
      };
      parts.push(part);
      this.emit({ type: "message.part.updated", properties: { sessionID, part, time: Date.now() } });
    }
    if (reply.text !== undefined) parts.push({ id: nextId("prt"), sessionID, messageID: info.id, type: "text", text: reply.text });
    session.messages.push({ info, parts } as SessionMessage);
    if (reply.error) this.emit({ type: "session.error", properties: { sessionID, error: reply.error } });
    this.goIdle(sessionID);
  }

  goIdle(sessionID: string): void {
    const session = this.sessions.get(sessionID);
    if (session) session.busy = false;
    this.emit({ type: "session.status", properties: { sessionID, status: { type: "idle" } } });
    this.emit({ type: "session.idle", properties: { sessionID } });
  }

  setBusy(sessionID: string, busy: boolean): void {
    this.sessions.get(sessionID)!.busy = busy;
    if (busy) this.emit({ type: "session.status", properties: { sessionID, status: { type: "busy" } } });
    else this.goIdle(sessionID);
  }

  private abort(sessionID: string): boolean {
    const session = this.sessions.get(sessionID);
    if (!session?.busy) return true;
    const aborted = clone(ABORTED[1]!);
    const lastUser = [...session.messages].reverse().find((m) => m.info.role === "user")!;
    Object.assign(aborted.info, { id: nextId("msg"), sessionID, parentID: lastUser.info.id });
    session.messages.push(aborted);
    this.emit({ type: "session.error", properties: { sessionID, error: (aborted.info as any).error } });
    this.goIdle(sessionID);
    return true;
  }

  emit(event: { type: string; properties: any }): void {
    const full = { id: nextId("evt"), ...event } as unknown as Event;
    const sink = this.sink;
    if (sink) this.pendingEvents.push(new Promise<void>((resolve) => setTimeout(() => void sink(full).finally(resolve), 0)));
  }

  /** the manager's `whenIdle` (set by setup.ts): settle waits for the work the events set off, too */
  idle: (() => Promise<void>) | undefined;

  /** Waits until every event emitted so far, and what they set off, has been handled (no sleeps). */
  async settle(): Promise<void> {
    for (let round = 0; round < 50; round++) {
      const pending = this.pendingEvents.splice(0);
      await Promise.all(pending);
      await this.idle?.();
      if (pending.length === 0 && this.pendingEvents.length === 0) return;
    }
  }

  userTexts(sessionID: string): string[] {
    return this.sessions
      .get(sessionID)!
      .messages.filter((m) => m.info.role === "user")
      .map((m) => m.parts.map((p: any) => p.text ?? "").join(""));
  }
}

function ok(data: unknown): Result {
  return { data, response: { status: 200, statusText: "OK" } };
}

function fail(status: number, error: unknown): Result {
  return { error, response: { status, statusText: "error" } };
}
