// Launching and resuming a task: the child session (a real child: parentID set, so the TUI lists
// it), the fork context for a forked one, the prompt. Any failure after the child exists removes the
// child and records nothing.
//
// Launches of one parent turn share what they read: the agent list and, for forks, the parent's
// messages (32 launches in one turn read each once).

import type { ToolContext } from "@opencode-ai/plugin";
import { LAUNCH_SHARE_MS } from "../constants.js";
import { BACKGROUND_TASK_TOOL } from "../fork/constants.js";
import { buildForkContext } from "../fork/index.js";
import type { ForkContext, SessionMessage } from "../fork/types.js";
import { type NativeLaunch, nativeFollowUpExtras, nativePromptBody, nativeSummary } from "../native/launch.js";
import { nativeDirective } from "../native/preamble.js";
import { MESSAGES, childTitle } from "../prompts.js";
import { type Client, abortQuietly, call, callIdOf, getMessages, log, modelFromToolContext } from "./client.js";
import { newTaskId } from "./ids.js";
import { publishTaskState, publishedState } from "./publish.js";
import type { TaskManager } from "./task-manager.js";
import type { BackgroundTask } from "./types.js";

export type ToolReply = { title: string; output: string; metadata: Record<string, unknown> };

type AgentInfo = { name: string; hidden?: boolean };

/** One read shared by the launches of one parent turn (same session, same assistant message). */
class TurnShare<T> {
  private readonly reads = new Map<string, Promise<T>>();

  get(key: string, read: () => Promise<T>): Promise<T> {
    let pending = this.reads.get(key);
    if (!pending) {
      pending = read();
      this.reads.set(key, pending);
      // Kept briefly (the turn's parallel calls arrive together), and dropped at once on failure.
      const drop = () => this.reads.get(key) === pending && this.reads.delete(key);
      pending.then(() => setTimeout(drop, LAUNCH_SHARE_MS).unref?.(), drop);
    }
    return pending;
  }
}

const agentLists = new TurnShare<AgentInfo[]>();
const forkContexts = new TurnShare<ForkContext>();
const parentPermissions = new TurnShare<unknown>();

function turnKey(ctx: Pick<ToolContext, "sessionID" | "messageID">): string {
  return `${ctx.sessionID}:${ctx.messageID}`;
}

/** Checks the agent before anything is created; the error lists the agents there are. */
export async function checkAgent(client: Client, agent: string, ctx: Pick<ToolContext, "sessionID" | "messageID">): Promise<string | undefined> {
  const agents = await agentLists.get(turnKey(ctx), async () => ((await call("listing agents", client.app.agents())) ?? []) as AgentInfo[]);
  if (agents.some((a) => a.name === agent)) return undefined;
  return MESSAGES.unknownAgent(
    agent,
    agents.filter((a) => !a.hidden).map((a) => a.name),
  );
}

export interface LaunchInput {
  description: string;
  prompt: string;
  agent: string;
  fork: boolean;
  /** a native fork (src/native): the child's requests start with the parent's request */
  native?: NativeLaunch;
  /** why a fork asked for without an agent became a text fork */
  fallback?: string;
}

export async function launchTask(manager: TaskManager, input: LaunchInput, ctx: ToolContext): Promise<ToolReply> {
  const client = manager.client;
  const title = childTitle(input.description, input.fork);
  const now = manager.now();
  const model = modelFromToolContext(ctx);
  const draft: BackgroundTask = {
    id: newTaskId((id) => manager.get(id) !== undefined),
    sessionID: "",
    parentSessionID: ctx.sessionID,
    callID: callIdOf(ctx),
    description: input.description,
    agent: input.agent,
    model,
    parentAgent: ctx.agent,
    parentModel: model,
    isForked: input.fork,
    ownerPid: process.pid,
    status: "queued",
    run: 1,
    notifiedRun: 0,
    reportedRun: 0,
    createdAt: now,
    startedAt: now,
    toolCalls: 0,
  };
  const native = input.native;
  // A native child gets the parent's permission rules: its tool list depends on them.
  const permission = native ? await parentPermissions.get(turnKey(ctx), () => parentPermission(client, ctx.sessionID)) : undefined;
  // Runs now or waits in the queue: decided before anything is created, so the child is published right.
  // A native child's prompt is the directive with the task (a queued one keeps it for later).
  const wait = manager.queue.claim(draft);
  Object.assign(draft, wait ? { status: "queued", queuedPrompt: native ? nativeDirective(input.prompt) : input.prompt, queuedBecause: wait } : { status: "running" });
  const body = { parentID: ctx.sessionID, title, metadata: { offshoot: publishedState(draft) }, ...(permission ? { permission } : {}) };
  let created;
  try {
    created = await call("creating the child session", client.session.create({ body: body as { parentID: string; title: string } }));
  } finally {
    if (!wait) manager.queue.release(draft); // registered as running below, or failed
  }
  const task: BackgroundTask = { ...draft, sessionID: created.id };
  ctx.metadata({ title, metadata: { sessionId: task.sessionID, taskId: task.id } });
  manager.beginLaunch(task);
  const plain = { agent: task.agent, model: task.model, parts: [{ type: "text" as const, text: input.prompt }] };
  try {
    if (native) {
      native.registry.register(task.sessionID, native.rootSessionID, native.snapshot.json);
      task.fork = nativeSummary(native);
    } else if (input.fork) await injectForkContext(manager, task, ctx);
    task.startedAt = manager.now();
    if (!wait) {
      // The server takes `variant` (v2 API); the v1 client's type lacks it.
      const body = native ? (nativePromptBody(native, input.prompt) as typeof plain) : plain;
      await call("sending the task prompt", client.session.promptAsync({ path: { id: task.sessionID }, body }));
    }
    // Saved once the prompt is on its way (the child's first request reads the registry in memory).
    if (native) await native.registry.persist(task.sessionID, task.parentSessionID, native.rootSessionID, native.snapshot.json, now);
  } catch (error) {
    manager.abandonLaunch(task);
    await removeChild(client, task.sessionID);
    if (native) await native.registry.forget(task.sessionID).catch(() => {});
    throw error;
  }
  await manager.commitLaunch(task);
  return {
    title,
    output: MESSAGES.launched(task, input.fallback),
    metadata: { sessionId: task.sessionID, taskId: task.id, forked: task.isForked },
  };
}

/** The parent session's permission rules (undefined when it has none or they cannot be read). */
async function parentPermission(client: Client, sessionID: string): Promise<unknown> {
  const parent = await call("reading the parent session", client.session.get({ path: { id: sessionID } })).catch(() => undefined);
  const permission = (parent as { permission?: unknown } | undefined)?.permission;
  return Array.isArray(permission) && permission.length ? permission : undefined;
}

/**
 * The parent's `background_task` calls still in flight are the forks of this very turn (this one and
 * its siblings): none of them is context for a child. Without them the context is the same for every
 * fork of the turn, so it is built once per turn.
 */
function withoutLaunchesInFlight(messages: readonly SessionMessage[]): SessionMessage[] {
  const inFlight = (p: SessionMessage["parts"][number]) =>
    p?.type === "tool" && p.tool === BACKGROUND_TASK_TOOL && (p.state?.status === "pending" || p.state?.status === "running");
  return messages.map((m) => (Array.isArray(m?.parts) && m.parts.some(inFlight) ? { ...m, parts: m.parts.filter((p) => !inFlight(p)) } : m));
}

async function injectForkContext(manager: TaskManager, task: BackgroundTask, ctx: ToolContext): Promise<void> {
  const context = await forkContexts.get(turnKey(ctx), async () =>
    buildForkContext(withoutLaunchesInFlight(await getMessages(manager.client, task.parentSessionID))),
  );
  if (!context.text) throw new Error("the fork context came out empty; refusing to start a forked task without context");
  await call(
    "injecting the fork context",
    manager.client.session.prompt({
      path: { id: task.sessionID },
      body: { noReply: true, agent: task.agent, model: task.model, parts: [{ type: "text", text: `${context.preamble}\n\n${context.text}` }] },
    }),
  );
  const { stats } = context;
  task.fork = { kind: "text", keptMessages: stats.finalCount, totalMessages: stats.originalCount, chars: stats.totalChars, fromCompaction: stats.compactionDetected };
}

/** Best effort: abort, then delete. A failure here is logged, never hidden behind the original error. */
async function removeChild(client: Client, sessionID: string): Promise<void> {
  await abortQuietly(client, sessionID);
  await call("deleting the child session", client.session.delete({ path: { id: sessionID } })).catch((error) =>
    log(client, "warn", `could not delete child session ${sessionID}: ${(error as Error).message}`),
  );
}

/** Sends a follow-up prompt to the child of a finished task; the task becomes `resumed`. */
export async function resumeTask(manager: TaskManager, task: BackgroundTask, input: { prompt: string; agent: string }, ctx: ToolContext): Promise<ToolReply> {
  const previous = { ...task };
  await manager.beginResume(task, { callID: callIdOf(ctx), agent: input.agent, model: task.model ?? modelFromToolContext(ctx) });
  ctx.metadata({ title: childTitle(task.description, task.isForked), metadata: { sessionId: task.sessionID, taskId: task.id } });
  if (manager.runOrQueue(task, input.prompt) === "queued") {
    await manager.save();
    return { title: `Resumed: ${task.description}`, output: MESSAGES.resumed(task), metadata: { sessionId: task.sessionID, taskId: task.id, resumed: true, queued: true } };
  }
  try {
    await call(
      "sending the follow-up prompt",
      manager.client.session.promptAsync({
        path: { id: task.sessionID },
        // a native fork repeats its variant and system: the prefix it shares with the parent depends on them
        body: { agent: task.agent, model: task.model, ...nativeFollowUpExtras(task.fork), parts: [{ type: "text", text: input.prompt }] } as {
          agent: string;
          parts: [{ type: "text"; text: string }];
        },
      }),
    );
  } catch (error) {
    Object.assign(task, previous);
    await manager.save();
    publishTaskState(manager.client, task);
    throw error;
  }
  return { title: `Resumed: ${task.description}`, output: MESSAGES.resumed(task), metadata: { sessionId: task.sessionID, taskId: task.id, resumed: true } };
}
