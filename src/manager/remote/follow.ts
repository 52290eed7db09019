// Following a task that runs on a remote (docs/remote.md). What the remote's plugin publishes in its
// child's metadata (task-state.ts PublishedTaskState) is the task's state there; this process reads
// it (on every event of the remote's stream about the child, on every (re)connect, and on every tick
// of the reconcile) and mirrors it: the permission or question its child waits on, its usage and tool
// calls. A run counts as ended here only once the remote's stored state says so AND its branch was
// fetched here and checked (git's object checks, its tip descends from the base): then it ends through
// the task's step, as a local run does (one notice, one wake). A cut in the middle changes nothing:
// the state is read again when the remote answers. Reading is pure (readRemoteState, followStep);
// `checkRemote` is the job of the task's mailbox that acts on it.

import { parsePermission, parseQuestionAsked } from "../../child-waits.js";
import { RemoteCallError, type RemoteTransport } from "../../host/remote.js";
import { log } from "../../host/client.js";
import { type BackgroundTask, TASK_STATUSES, type Usage, isOpen, meaningOf } from "../../task-record.js";
import type { PermissionWait, QuestionWait } from "../../task-state.js";
import type { SessionMessage } from "../../fork/types.js";
import { fetchBranch } from "../../worktree/remote.js";
import { chargedTokens } from "../../format.js";
import { type EndStatus, readChildOutcome } from "../task/completion.js";
import type { TaskEntry } from "../task/registry.js";
import type { RemoteHost } from "./host.js";
import type { RemoteLinks } from "./links.js";
import { REMOTE } from "./remote.txt.js";

/** A remote task's state there, as its child's metadata says it (what this process reads of it). */
export interface RemoteState {
  status: string;
  run: number;
  error?: string;
  completedAt?: number;
  permission?: PermissionWait;
  question?: QuestionWait;
  usage?: Usage;
  toolCalls?: number;
  lastTool?: string;
  worktree?: { directory?: string; removed?: string; pushed?: string; pushError?: string; wrapped?: number };
}

const num = (v: unknown): number | undefined => (typeof v === "number" && Number.isFinite(v) && v >= 0 ? v : undefined);
const str = (v: unknown, max = 10_000): string | undefined => (typeof v === "string" && v.length > 0 ? v.slice(0, max) : undefined);

function usageOf(v: unknown): Usage | undefined {
  if (!v || typeof v !== "object") return undefined;
  const o = v as Record<string, unknown>;
  const keys = ["input", "output", "reasoning", "cacheRead", "cacheWrite", "cost"] as const;
  if (!keys.every((k) => num(o[k]) !== undefined)) return undefined;
  return Object.fromEntries(keys.map((k) => [k, o[k] as number])) as unknown as Usage;
}

/** The remote task's published state in its child's metadata, read defensively (a remote is trusted no more than its answers). */
export function readRemoteState(metadata: unknown): RemoteState | undefined {
  const raw = metadata && typeof metadata === "object" ? (metadata as Record<string, unknown>).offshoot : undefined;
  if (!raw || typeof raw !== "object") return undefined;
  const o = raw as Record<string, unknown>;
  const status = str(o.status, 40);
  if (o.v !== 1 || !status) return undefined;
  const w = o.worktree && typeof o.worktree === "object" ? (o.worktree as Record<string, unknown>) : undefined;
  return {
    status,
    run: num(o.run) ?? 1,
    ...(str(o.error) ? { error: str(o.error) } : {}),
    ...(num(o.completedAt) !== undefined ? { completedAt: num(o.completedAt) } : {}),
    ...(parsePermission(o.permission) ? { permission: parsePermission(o.permission) } : {}),
    ...(parseQuestionAsked(o.question) ? { question: parseQuestionAsked(o.question) } : {}),
    ...(usageOf(o.usage) ? { usage: usageOf(o.usage) } : {}),
    ...(num(o.toolCalls) !== undefined ? { toolCalls: num(o.toolCalls) } : {}),
    ...(str(o.lastTool, 200) ? { lastTool: str(o.lastTool, 200) } : {}),
    ...(w
      ? {
          worktree: {
            ...(str(w.directory, 4096) ? { directory: str(w.directory, 4096) } : {}),
            ...(str(w.removed, 40) ? { removed: str(w.removed, 40) } : {}),
            ...(str(w.pushed, 100) ? { pushed: str(w.pushed, 100) } : {}),
            ...(str(w.pushError, 2000) ? { pushError: str(w.pushError, 2000) } : {}),
            ...(num(w.wrapped) !== undefined ? { wrapped: num(w.wrapped) } : {}),
          },
        }
      : {}),
  };
}

/** What following the task does now, given its state there. */
export type FollowStep =
  /** its run there has not ended (or its end is not committed there yet) */
  | { kind: "wait" }
  /** its run there ended and its branch was pushed: fetch it, check it, then end here */
  | { kind: "fetch" }
  /** its run there ended with no branch to bring back (it changed nothing) */
  | { kind: "end" }
  /** its run there ended but its branch could not be pushed: ask for the push again */
  | { kind: "push"; why: string };

/** The step for the task's run here (pure). A state of an earlier run of the remote's task (before a resume reached it) is waited past. */
export function followStep(task: Pick<BackgroundTask, "remote">, state: RemoteState): FollowStep {
  const run = task.remote?.run ?? 1;
  if (meaningOf(state.status).open || state.run < run) return { kind: "wait" };
  const w = state.worktree;
  if (w?.removed) return { kind: "end" };
  if ((w?.wrapped ?? 0) < run) return { kind: "wait" }; // (its commit and push are still under way there)
  if (w?.pushed) return { kind: "fetch" };
  return { kind: "push", why: w?.pushError ?? "its branch was not pushed" };
}

/** The ended statuses a remote's state may name; another word is an error here. */
function endStatusOf(status: string): EndStatus {
  const known = (TASK_STATUSES as readonly string[]).includes(status);
  return (known && meaningOf(status).end ? status : "error") as EndStatus;
}

/** What a check found out about the remote (the links keep it for background_list and the stream). */
type Reached = { reached: true } | { reached: false; why: string };

/**
 * THE check of a remote task (a job of its mailbox): its state there read, mirrored, and its run
 * ended once its branch is here and checked. A cancel given while the remote was unreachable goes
 * first. Never throws: an unreachable remote is noted and the next check tries again.
 */
export async function checkRemote(host: RemoteHost, links: RemoteLinks, entry: TaskEntry, ask: RemoteAsk): Promise<Reached> {
  const { task } = entry;
  const remote = task.remote;
  if (!remote || !isOpen(task.status) || entry.runtime.launching) return { reached: true };
  const transport = links.transport(remote.name);
  if ("error" in transport) return { reached: false, why: transport.error };
  try {
    if (remote.cancel !== undefined) {
      await ask.cancel(transport, task, remote.cancel);
      await host.dispatch(entry, { kind: "remote-seen", remote: { ...remote, cancel: undefined } });
    }
    const session = await transport.getSession(remote.session);
    const state = readRemoteState(session.metadata);
    if (!state) return { reached: true }; // (no state published there yet)
    await mirror(host, entry, state);
    // paused here (this process's budget), still moving there: the pause goes there (again, until it is)
    if (meaningOf(task.status).followUp === "continue" && meaningOf(state.status).moving)
      await ask.pause(transport, task, task.error ?? "paused by its parent's budget");
    const next = followStep(task, state);
    if (next.kind === "wait") return { reached: true };
    if (next.kind === "push") {
      await ask.push(transport, task).catch((error) => log(host.client, "warn", `offshoot: task ${task.id}: ${(error as Error).message}`));
      return { reached: true };
    }
    if (next.kind === "fetch") {
      const info = task.worktree!;
      const options = links.optionsOf(remote.name);
      if (!options) return { reached: false, why: REMOTE.unknownRemote(remote.name, []) };
      const fetched = await fetchBranch(info.repo, options.gitRemote, task.id, info.branch, info.base);
      if ("missing" in fetched) return { reached: true }; // (pushed, not seen yet on the shared remote: the next check)
      if ("refused" in fetched) {
        const why = REMOTE.refusedBranch(remote.name, fetched.refused);
        log(host.client, "warn", `offshoot: task ${task.id}: ${why}`);
        await host.dispatch(entry, { kind: "remote-seen", remote: { ...remote, refused: fetched.refused } });
        await host.finish(task, { status: "error", error: state.error ? `${state.error}; ${why}` : why, endedAt: state.completedAt });
        return { reached: true };
      }
    }
    const answer = await answerOf(transport, task).catch(() => "");
    // (stopped by a cap here: cancelled there, an error here with the cap's reason, as a local child's stop)
    const stopped = entry.runtime.stopReason && state.status === "cancelled" ? entry.runtime.stopReason : undefined;
    const ending = stopped
      ? { status: "error" as const, error: stopped }
      : { status: endStatusOf(state.status), ...(state.error ? { error: state.error } : {}) };
    await host.finish(task, { ...ending, answer, endedAt: state.completedAt });
    return { reached: true };
  } catch (error) {
    if (error instanceof RemoteCallError && error.kind === "gone") {
      await host.finish(task, { status: "error", error: REMOTE.gone(remote.name) });
      return { reached: true };
    }
    return { reached: false, why: (error as Error).message };
  }
}

/**
 * What the remote's state says of the child's waits and spend, mirrored on the task here; then this
 * process's caps and its parent's budget applied to what it spent (a step late: the remote publishes
 * its state after each step).
 */
async function mirror(host: RemoteHost, entry: TaskEntry, state: RemoteState): Promise<void> {
  const { runtime, task } = entry;
  const before = { toolCalls: task.toolCalls, charged: task.usage ? chargedTokens(task.usage) : 0, cost: task.usage?.cost ?? 0 };
  if ((runtime.permission?.id ?? "") !== (state.permission?.id ?? "")) await host.dispatch(entry, { kind: "permission", permission: state.permission });
  if ((runtime.question?.id ?? "") !== (state.question?.id ?? "")) await host.dispatch(entry, { kind: "question", question: state.question });
  await host.dispatch(entry, {
    kind: "remote-seen",
    ...(state.usage ? { usage: state.usage } : {}),
    ...(state.toolCalls !== undefined ? { toolCalls: state.toolCalls } : {}),
    ...(state.lastTool ? { lastTool: state.lastTool } : {}),
  });
  const spent = task.usage ? chargedTokens(task.usage) !== before.charged || task.usage.cost !== before.cost : false;
  if (spent || task.toolCalls !== before.toolCalls)
    await host.spendSeen(entry, { toolCallsBefore: before.toolCalls, spent, runEnded: !meaningOf(state.status).open });
}

/** The child's messages there (its answer, its progress). */
export async function remoteMessages(transport: RemoteTransport, task: BackgroundTask): Promise<SessionMessage[]> {
  const remote = task.remote!;
  return (await transport.messages(remote.session, remote.directory)) as SessionMessage[];
}

/** The child's final answer there. */
export async function answerOf(transport: RemoteTransport, task: BackgroundTask): Promise<string> {
  return readChildOutcome(await remoteMessages(transport, task)).answer;
}

/** The requests a check may send (actions.ts). */
export interface RemoteAsk {
  cancel(transport: RemoteTransport, task: BackgroundTask, reason: string): Promise<void>;
  pause(transport: RemoteTransport, task: BackgroundTask, reason: string): Promise<void>;
  push(transport: RemoteTransport, task: BackgroundTask): Promise<void>;
}
