/**
 * The task model of the TUI half: what the TUI knows about background tasks, built only from
 * what the server sends (session infos with `metadata.offshoot`, tool parts, assistant message
 * usage, permission and question events). Pure: no host imports, so it is unit-tested directly.
 *
 * Every input method is total (never throws) and O(1) amortised per event; listing the tasks
 * of one session is O(k log k) in its own tasks.
 */
import {
  isMoving,
  isOpen,
  meaningOf,
  parseOffshootMeta,
  parsePermission,
  parseQuestion,
  type OffshootMeta,
  type PermissionWait,
  type QuestionWait,
} from "./meta.js";

export interface LastTool {
  tool: string;
  /** The tool part's title once known (e.g. the command), else a short input summary. */
  detail?: string;
  state: "pending" | "running" | "completed" | "error";
}

export interface Usage {
  /** Tokens charged in full (uncached input, cache writes, output, reasoning) summed over the child's assistant messages. */
  tokens: number;
  /** Tokens read from the cache, apart (not in `tokens`). */
  cacheRead: number;
  cost: number;
}

export interface Task {
  /** The child session. */
  sessionID: string;
  meta: OffshootMeta;
  title?: string;
  lastTool?: LastTool;
  /** Undefined until one assistant message reported tokens. */
  usage?: Usage;
  /** The permission the child waits for, if any (from events, else from the metadata). */
  permission?: PermissionWait;
  /** The question the child asked and waits to have answered, if any (from events, else from the metadata). */
  question?: QuestionWait;
  /** When the TUI first saw the task (ms). */
  seenAt: number;
  /** What became of the last /tasks action a person took on it here (the dialog shows it; a toast alone can be missed). */
  lastAction?: LastAction;
}

/**
 * A /tasks action on a task (take, discard, continue, raise the budget, cancel) and what became of it:
 * `pending` until the server half answers, then `done` or `refused`, or `unconfirmed` when no answer
 * came in time. `title` is short ("Budget raised"); `detail` says more (the server's answer, or why not).
 */
export interface LastAction {
  state: "pending" | "done" | "refused" | "unconfirmed";
  title: string;
  detail?: string;
}

export type Notice =
  { kind: "ended"; task: Task } | { kind: "permission"; task: Task; permission: PermissionWait } | { kind: "question"; task: Task; question: QuestionWait };

/** The notice of a child that starts to wait for a permission, or for an answer to its question. */
const permissionNotice = (task: Task, permission: PermissionWait): Notice => ({ kind: "permission", task, permission });
const questionNotice = (task: Task, question: QuestionWait): Notice => ({ kind: "question", task, question });

interface Entry {
  sessionID: string;
  meta: OffshootMeta;
  title?: string;
  lastTool?: LastTool;
  lastToolAt: number;
  lastToolPart?: string;
  usageByMessage: Map<string, Usage>;
  usage?: Usage;
  seenAt: number;
  lastAction?: LastAction;
}

export interface SessionInfoLike {
  id?: unknown;
  parentID?: unknown;
  title?: unknown;
  metadata?: unknown;
}

function inputSummary(input: unknown): string | undefined {
  if (!input || typeof input !== "object") return undefined;
  const o = input as Record<string, unknown>;
  for (const k of ["description", "command", "filePath", "path", "pattern", "url", "query"]) {
    const v = o[k];
    if (typeof v === "string" && v.trim()) return v.trim().split("\n")[0];
  }
  return undefined;
}

export class TaskStore {
  private tasks = new Map<string, Entry>();
  private byParent = new Map<string, Set<string>>();
  /** Pending permission requests per session, from `permission.asked` (cleared by `permission.replied`). */
  private asked = new Map<string, Map<string, PermissionWait>>();
  /** Pending questions per session, from `question.asked` (cleared by `question.replied` / `question.rejected`). */
  private questions = new Map<string, Map<string, QuestionWait>>();
  /** Request ids known to be answered (so stale metadata does not bring them back). */
  private answered = new Set<string>();
  private listeners = new Set<() => void>();
  private noticeListeners = new Set<(n: Notice) => void>();
  private version = 0;

  constructor(private now: () => number = Date.now) {}

  /** Called after every change (the views re-read then). */
  subscribe(fn: () => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /** Called when a task ends or starts to wait for a permission or an answer (live changes only). */
  onNotice(fn: (n: Notice) => void): () => void {
    this.noticeListeners.add(fn);
    return () => this.noticeListeners.delete(fn);
  }

  get changes(): number {
    return this.version;
  }

  private changed() {
    this.version++;
    for (const fn of this.listeners) {
      try {
        fn();
      } catch {
        /* a listener never breaks the model */
      }
    }
  }

  private notify(n: Notice) {
    for (const fn of this.noticeListeners) {
      try {
        fn(n);
      } catch {
        /* ignore */
      }
    }
  }

  /**
   * A session info (from `session.created|updated`, `session.children`, `session.get`).
   * `quiet`: a snapshot read (not a live change): no notices.
   */
  upsertSession(info: SessionInfoLike | undefined, opts: { quiet?: boolean } = {}): boolean {
    if (!info || typeof info.id !== "string") return false;
    const meta = parseOffshootMeta(info.metadata);
    if (!meta) return false;
    const id = info.id;
    const prev = this.tasks.get(id);
    const title = typeof info.title === "string" ? info.title : prev?.title;
    if (prev) {
      const wasOpen = isOpen(prev.meta.status);
      const prevPermission = this.permissionOf(prev);
      const prevQuestion = this.questionOf(prev);
      if (prev.meta.parentSessionID !== meta.parentSessionID) this.unindex(id, prev.meta.parentSessionID);
      prev.meta = meta;
      prev.title = title;
      this.index(id, meta.parentSessionID);
      if (!isMoving(meta.status)) {
        this.asked.delete(id);
        this.questions.delete(id);
      }
      this.changed();
      if (!opts.quiet) {
        if (wasOpen && !isOpen(meta.status)) this.notify({ kind: "ended", task: this.view(prev) });
        const permission = this.permissionOf(prev);
        if (permission && permission.id !== prevPermission?.id) this.notify({ kind: "permission", task: this.view(prev), permission });
        const question = this.questionOf(prev);
        if (question && question.id !== prevQuestion?.id) this.notify({ kind: "question", task: this.view(prev), question });
      }
      return true;
    }
    const entry: Entry = { sessionID: id, meta, title, lastToolAt: 0, usageByMessage: new Map(), seenAt: this.now() };
    this.tasks.set(id, entry);
    this.index(id, meta.parentSessionID);
    this.changed();
    if (!opts.quiet) {
      const permission = this.permissionOf(entry);
      if (permission) this.notify({ kind: "permission", task: this.view(entry), permission });
      const question = this.questionOf(entry);
      if (question) this.notify({ kind: "question", task: this.view(entry), question });
    }
    return true;
  }

  removeSession(id: unknown) {
    if (typeof id !== "string") return;
    const prev = this.tasks.get(id);
    this.asked.delete(id);
    this.questions.delete(id);
    if (!prev) return;
    this.tasks.delete(id);
    this.unindex(id, prev.meta.parentSessionID);
    this.changed();
  }

  /** A `message.part.updated` part: tool parts of a task's child set its "last tool". */
  partUpdated(part: unknown, at?: number) {
    if (!part || typeof part !== "object") return;
    const p = part as Record<string, unknown>;
    if (p.type !== "tool" || typeof p.sessionID !== "string" || typeof p.tool !== "string") return;
    const entry = this.tasks.get(p.sessionID);
    if (!entry) return;
    const state = (p.state && typeof p.state === "object" ? p.state : {}) as Record<string, unknown>;
    // an OpenCode tool part's own state (not a task's status)
    const s: LastTool["state"] = state.status === "running" || state.status === "completed" || state.status === "error" ? state.status : "pending";
    const t = typeof at === "number" ? at : this.now();
    // Parts of older calls can be updated late (e.g. completed after a newer one started):
    // only the newest call (by start time when known) counts as "what it does now".
    const time = state.time && typeof state.time === "object" ? (state.time as Record<string, unknown>).start : undefined;
    const startedAt = typeof time === "number" ? time : t;
    const samePart = typeof p.id === "string" && p.id === entry.lastToolPart;
    if (entry.lastTool && !samePart && startedAt < entry.lastToolAt) return;
    const detail = (typeof state.title === "string" && state.title.trim() ? state.title.trim().split("\n")[0] : undefined) ?? inputSummary(state.input);
    entry.lastTool = { tool: p.tool, detail, state: s };
    entry.lastToolAt = samePart ? Math.min(entry.lastToolAt, startedAt) : startedAt;
    entry.lastToolPart = typeof p.id === "string" ? p.id : undefined;
    this.changed();
  }

  /** A `message.updated` info: assistant messages of a task's child add to its usage. */
  messageUpdated(info: unknown) {
    if (!info || typeof info !== "object") return;
    const m = info as Record<string, unknown>;
    if (m.role !== "assistant" || typeof m.sessionID !== "string" || typeof m.id !== "string") return;
    const entry = this.tasks.get(m.sessionID);
    if (!entry) return;
    const t = (m.tokens && typeof m.tokens === "object" ? m.tokens : undefined) as Record<string, unknown> | undefined;
    const n = (v: unknown) => (typeof v === "number" && Number.isFinite(v) ? v : 0);
    const cache = (t?.cache && typeof t.cache === "object" ? t.cache : {}) as Record<string, unknown>;
    // charged in full as the server half counts them (format.ts chargedTokens); cache reads apart
    const tokens = t ? n(t.input) + n(cache.write) + n(t.output) + n(t.reasoning) : 0;
    const cacheRead = n(cache.read);
    const cost = n(m.cost);
    if (tokens === 0 && cacheRead === 0 && cost === 0 && !entry.usageByMessage.has(m.id)) return;
    const prev = entry.usageByMessage.get(m.id) ?? { tokens: 0, cacheRead: 0, cost: 0 };
    const total = entry.usage ?? { tokens: 0, cacheRead: 0, cost: 0 };
    entry.usage = { tokens: total.tokens - prev.tokens + tokens, cacheRead: total.cacheRead - prev.cacheRead + cacheRead, cost: total.cost - prev.cost + cost };
    entry.usageByMessage.set(m.id, { tokens, cacheRead, cost });
    this.changed();
  }

  /** A /tasks action on the task was sent, or its outcome is known (kept until the next action on it). */
  actionOutcome(sessionID: string, action: LastAction) {
    const entry = this.tasks.get(sessionID);
    if (!entry) return;
    entry.lastAction = { state: action.state, title: action.title, ...(action.detail ? { detail: action.detail } : {}) };
    this.changed();
  }

  /** `permission.asked` properties. */
  permissionAsked(props: unknown, opts: { quiet?: boolean } = {}) {
    if (!props || typeof props !== "object") return;
    const p = props as Record<string, unknown>;
    this.waitAsked(this.asked, p.sessionID, parsePermission(p), (e) => this.permissionOf(e), permissionNotice, opts);
  }

  /** `permission.replied` properties (or our own reply). */
  permissionReplied(props: unknown) {
    if (!props || typeof props !== "object") return;
    const p = props as Record<string, unknown>;
    const requestID = typeof p.requestID === "string" ? p.requestID : typeof p.permissionID === "string" ? p.permissionID : undefined;
    this.waitAnswered(this.asked, requestID, p.sessionID);
  }

  /** `question.asked` properties. */
  questionAsked(props: unknown, opts: { quiet?: boolean } = {}) {
    if (!props || typeof props !== "object") return;
    const sessionID = (props as Record<string, unknown>).sessionID;
    this.waitAsked(this.questions, sessionID, parseQuestion(props), (e) => this.questionOf(e), questionNotice, opts);
  }

  /** `question.replied` / `question.rejected` properties (or our own reply). */
  questionAnswered(props: unknown) {
    if (!props || typeof props !== "object") return;
    const p = props as Record<string, unknown>;
    this.waitAnswered(this.questions, typeof p.requestID === "string" ? p.requestID : undefined, p.sessionID);
  }

  private questionOf(e: Entry): QuestionWait | undefined {
    return this.waitOf(e, this.questions, e.meta.question);
  }

  private permissionOf(e: Entry): PermissionWait | undefined {
    return this.waitOf(e, this.asked, e.meta.permission);
  }

  /**
   * A wait for a person the child is in (a permission or a question), kept per session until it is
   * answered; a task that had none before is noticed (unless `quiet`: a snapshot read).
   */
  private waitAsked<W extends { id: string }>(
    waits: Map<string, Map<string, W>>,
    sessionID: unknown,
    wait: W | undefined,
    current: (e: Entry) => W | undefined,
    notice: (task: Task, wait: W) => Notice,
    opts: { quiet?: boolean },
  ) {
    if (typeof sessionID !== "string" || !wait || this.answered.has(wait.id)) return;
    let m = waits.get(sessionID);
    if (!m) waits.set(sessionID, (m = new Map()));
    if (m.has(wait.id)) return;
    const entry = this.tasks.get(sessionID);
    const before = entry ? current(entry) : undefined;
    m.set(wait.id, wait);
    if (!entry) return;
    this.changed();
    if (!opts.quiet && !before) this.notify(notice(this.view(entry), wait));
  }

  /** A wait answered (its reply's event, or our own reply): never shown again. */
  private waitAnswered(waits: Map<string, Map<string, unknown>>, requestID: string | undefined, session: unknown) {
    if (!requestID) return;
    this.answered.add(requestID);
    const sessionID = typeof session === "string" ? session : undefined;
    const maps = sessionID ? [waits.get(sessionID)] : [...waits.values()];
    for (const m of maps) m?.delete(requestID);
    if (sessionID && waits.get(sessionID)?.size === 0) waits.delete(sessionID);
    this.changed();
  }

  /** The wait a moving task's child is in: the first its events asked that is still open, else its metadata's (unless answered). */
  private waitOf<W extends { id: string }>(e: Entry, waits: Map<string, Map<string, W>>, meta: W | undefined): W | undefined {
    if (!isMoving(e.meta.status)) return undefined;
    const m = waits.get(e.sessionID);
    if (m) for (const w of m.values()) return w;
    return meta && !this.answered.has(meta.id) ? meta : undefined;
  }

  private index(id: string, parent: string) {
    let s = this.byParent.get(parent);
    if (!s) this.byParent.set(parent, (s = new Set()));
    s.add(id);
  }

  private unindex(id: string, parent: string) {
    const s = this.byParent.get(parent);
    s?.delete(id);
    if (s && s.size === 0) this.byParent.delete(parent);
  }

  private view(e: Entry): Task {
    return {
      sessionID: e.sessionID,
      meta: e.meta,
      title: e.title,
      lastTool: e.lastTool,
      usage: e.usage,
      permission: this.permissionOf(e),
      question: this.questionOf(e),
      seenAt: e.seenAt,
      ...(e.lastAction ? { lastAction: e.lastAction } : {}),
    };
  }

  /** The task whose child session is `sessionID`. */
  task(sessionID: string): Task | undefined {
    const e = this.tasks.get(sessionID);
    return e ? this.view(e) : undefined;
  }

  /** Whether the store knows usage or a last tool for the child (else the loader reads its messages once). */
  hasActivity(sessionID: string): boolean {
    const e = this.tasks.get(sessionID);
    return !!e && (e.lastTool !== undefined || e.usage !== undefined);
  }

  /**
   * Tasks of one parent session: active ones first (those waiting for a person first,
   * then oldest start first), then finished ones (newest end first).
   */
  tasksOf(parentSessionID: string): Task[] {
    const ids = this.byParent.get(parentSessionID);
    if (!ids) return [];
    const out: Task[] = [];
    for (const id of ids) {
      const e = this.tasks.get(id);
      if (e) out.push(this.view(e));
    }
    return out.sort(compareTasks);
  }
}

export function compareTasks(a: Task, b: Task): number {
  const aa = isOpen(a.meta.status);
  const ba = isOpen(b.meta.status);
  if (aa !== ba) return aa ? -1 : 1;
  if (aa) {
    const ap = a.permission || a.question || meaningOf(a.meta.status).waitsForPerson ? 0 : 1;
    const bp = b.permission || b.question || meaningOf(b.meta.status).waitsForPerson ? 0 : 1;
    if (ap !== bp) return ap - bp;
    return (a.meta.startedAt || a.seenAt) - (b.meta.startedAt || b.seenAt);
  }
  return (b.meta.completedAt ?? b.meta.startedAt) - (a.meta.completedAt ?? a.meta.startedAt);
}

/**
 * The directory whose OpenCode instance serves the task's child: a worktree task's worktree, else
 * undefined (the TUI's own). Its permission and question requests are pending in that instance only
 * (the project's answers a reply with 404), and a message to it goes there too.
 */
export function instanceOf(t: Task): string | undefined {
  return t.meta.worktree?.directory;
}
