// The protocol between a parent's process (A, the one that launched a remote task) and the remote
// OpenCode server running this same plugin (B). A cannot call B's plugin, and B's plugin opens no
// listener: A writes a one-shot request into a relay session on B, in B's clone of the project
// (`metadata.offshootRelay.request`, as the TUI half writes `offshootRequest` into a child), and B's
// plugin, which hears the session's `session.updated` event, acts once per request id and writes its
// answer there (`metadata.offshootRelay.answered`, which drops the request). The relay session is
// the remote task's parent on B. What B's task does after that, A reads from B's child's published
// state (`metadata.offshoot`, task-state.ts) and its branch on the shared git remote. Pure.

import { DESCRIPTION_MAX_CHARS, PROMPT_MAX_CHARS } from "./constants.js";

/** The key of the relay session's metadata. */
export const RELAY_KEY = "offshootRelay";

/** A text fork's context travels as text (a native fork cannot share a cache across machines). */
export const FORK_TEXT_MAX_CHARS = 2_000_000;

/** The shared git remote's ref that carries a task's base (the snapshot of what the parent saw) to B. */
export function baseRefOf(taskId: string): string {
  // (beside the branch, not below it: `offshoot/<id>` is a branch, so it cannot also be a directory of refs)
  return `refs/heads/offshoot/${taskId}-base`;
}

/** The shared git remote's ref of a task's branch, pushed by B once each run is committed. */
export function branchRefOf(taskId: string): string {
  return `refs/heads/offshoot/${taskId}`;
}

/** What a text fork inherited, as the task's record says it (task-record.ts ForkSummary, kind "text"). */
export interface RelayForkSummary {
  kind: "text";
  keptMessages: number;
  totalMessages: number;
  chars: number;
  fromCompaction: boolean;
}

/** A request of A to B, one kind per row. */
export type RelayRequest =
  | {
      /** launch the task on B: a worktree made from `base` (fetched from `gitRemote`), its child prompted */
      kind: "launch";
      id: string;
      taskId: string;
      description: string;
      prompt: string;
      agent: string;
      /** "provider/model" (or "#variant"): as B's config names it; absent: B's agent's or default model */
      model?: string;
      /** a text fork: the preamble and context block A built, and what it says of it */
      fork?: { text: string; summary: RelayForkSummary };
      base: string;
      parentHead: string;
      gitRemote: string;
      /** refuse unless the child runs in an OS sandbox on B */
      requireSandbox: boolean;
      network?: string[];
    }
  | { kind: "cancel"; id: string; taskId: string; reason: string }
  | { kind: "steer"; id: string; taskId: string; prompt: string }
  /** A's session budget is reached: the running task pauses after its step (its run has not ended) */
  | { kind: "pause"; id: string; taskId: string; reason: string }
  /** a person raised A's budget and continued it: the paused task goes on in place with `prompt` */
  | { kind: "continue"; id: string; taskId: string; prompt: string }
  | { kind: "resume"; id: string; taskId: string; prompt: string; agent?: string }
  | { kind: "push"; id: string; taskId: string }
  | { kind: "discard"; id: string; taskId: string };

export type RelayKind = RelayRequest["kind"];

/** B's task as its answer names it. */
export interface RelayTask {
  id: string;
  session: string;
  directory: string;
  containment: string;
  run: number;
  status: string;
}

/** B's answer to one request: what it did (`ok`, with its task), or why not (`error`). */
export interface RelayAnswer {
  id: string;
  ok?: string;
  error?: string;
  task?: RelayTask;
}

export interface RelayMetadata {
  v: 1;
  request?: RelayRequest;
  answered?: RelayAnswer;
}

const TASK_ID = /^bg_[0-9a-z]{8}$/;
const REQUEST_ID = /^[A-Za-z0-9_-]{1,100}$/;
const str = (v: unknown, max: number): v is string => typeof v === "string" && v.length > 0 && v.length <= max;

/** The relay request in a session's metadata, if it is one B acts on (every field checked and bounded). */
export function parseRelayRequest(metadata: unknown): RelayRequest | undefined {
  const relay = metadata && typeof metadata === "object" ? (metadata as Record<string, unknown>)[RELAY_KEY] : undefined;
  const raw = relay && typeof relay === "object" ? (relay as Record<string, unknown>).request : undefined;
  if (!raw || typeof raw !== "object") return undefined;
  const o = raw as Record<string, unknown>;
  if (!str(o.id, 100) || !REQUEST_ID.test(o.id) || !str(o.taskId, 20) || !TASK_ID.test(o.taskId)) return undefined;
  const { id, taskId } = o;
  switch (o.kind) {
    case "launch": {
      if (!str(o.description, DESCRIPTION_MAX_CHARS * 4) || !str(o.prompt, PROMPT_MAX_CHARS) || !str(o.agent, 200)) return undefined;
      if (!str(o.base, 100) || !/^[0-9a-f]{40,64}$/.test(o.base) || !str(o.parentHead, 100) || !/^[0-9a-f]{40,64}$/.test(o.parentHead)) return undefined;
      if (!str(o.gitRemote, 100) || !/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(o.gitRemote) || typeof o.requireSandbox !== "boolean") return undefined;
      if (o.model !== undefined && !str(o.model, 400)) return undefined;
      if (o.network !== undefined && !(Array.isArray(o.network) && o.network.length <= 100 && o.network.every((h) => str(h, 300)))) return undefined;
      const fork = parseFork(o.fork);
      if (o.fork !== undefined && !fork) return undefined;
      return {
        kind: "launch",
        id,
        taskId,
        description: o.description,
        prompt: o.prompt,
        agent: o.agent,
        ...(o.model !== undefined ? { model: o.model as string } : {}),
        ...(fork ? { fork } : {}),
        base: o.base,
        parentHead: o.parentHead,
        gitRemote: o.gitRemote,
        requireSandbox: o.requireSandbox,
        ...(o.network !== undefined ? { network: [...(o.network as string[])] } : {}),
      };
    }
    case "cancel":
      return str(o.reason, 1000) ? { kind: "cancel", id, taskId, reason: o.reason } : undefined;
    case "steer":
    case "continue":
      return str(o.prompt, PROMPT_MAX_CHARS) ? { kind: o.kind, id, taskId, prompt: o.prompt } : undefined;
    case "pause":
      return str(o.reason, 1000) ? { kind: "pause", id, taskId, reason: o.reason } : undefined;
    case "resume":
      if (!str(o.prompt, PROMPT_MAX_CHARS) || (o.agent !== undefined && !str(o.agent, 200))) return undefined;
      return { kind: "resume", id, taskId, prompt: o.prompt, ...(o.agent !== undefined ? { agent: o.agent as string } : {}) };
    case "push":
    case "discard":
      return { kind: o.kind, id, taskId };
    default:
      return undefined;
  }
}

function parseFork(v: unknown): { text: string; summary: RelayForkSummary } | undefined {
  if (!v || typeof v !== "object") return undefined;
  const { text, summary } = v as Record<string, unknown>;
  if (!str(text, FORK_TEXT_MAX_CHARS) || !summary || typeof summary !== "object") return undefined;
  const s = summary as Record<string, unknown>;
  const n = (x: unknown) => typeof x === "number" && Number.isInteger(x) && x >= 0;
  if (s.kind !== "text" || !n(s.keptMessages) || !n(s.totalMessages) || !n(s.chars) || typeof s.fromCompaction !== "boolean") return undefined;
  return {
    text,
    summary: {
      kind: "text",
      keptMessages: s.keptMessages as number,
      totalMessages: s.totalMessages as number,
      chars: s.chars as number,
      fromCompaction: s.fromCompaction,
    },
  };
}

/** B's answer in the relay session's metadata to the request `id`, if it is there. */
export function relayAnswerOf(metadata: unknown, id: string): RelayAnswer | undefined {
  const relay = metadata && typeof metadata === "object" ? (metadata as Record<string, unknown>)[RELAY_KEY] : undefined;
  const raw = relay && typeof relay === "object" ? (relay as Record<string, unknown>).answered : undefined;
  if (!raw || typeof raw !== "object") return undefined;
  const o = raw as Record<string, unknown>;
  if (o.id !== id) return undefined;
  const t = o.task as Record<string, unknown> | undefined;
  const task =
    t && typeof t === "object" && str(t.id, 20) && str(t.session, 200) && str(t.directory, 4096) && typeof t.run === "number" && typeof t.status === "string"
      ? { id: t.id, session: t.session, directory: t.directory, containment: String(t.containment ?? ""), run: t.run, status: t.status }
      : undefined;
  return {
    id,
    ...(typeof o.ok === "string" ? { ok: o.ok.slice(0, 20_000) } : {}),
    ...(typeof o.error === "string" ? { error: o.error.slice(0, 20_000) } : {}),
    ...(task ? { task } : {}),
  };
}
