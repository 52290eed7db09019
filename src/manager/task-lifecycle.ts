import type { ToolContext } from "@opencode-ai/plugin";
import { BACKGROUND_TASK_TOOL } from "../constants.js";
import { buildForkContext } from "../fork/index.js";
import { type NativeLaunch, nativePromptBody, nativeSummary } from "../native/launch.js";
import { MESSAGES, childTitle } from "../prompts.js";
import { type Client, call, callIdOf, getMessages, log, modelFromToolContext } from "./client.js";
import { newTaskId } from "./ids.js";
import type { TaskManager } from "./task-manager.js";
import { type BackgroundTask, isActive } from "./types.js";

export type ToolReply = { title: string; output: string; metadata: Record<string, unknown> };

/** The tools a child may not use: a background task does its work itself. */
export const CHILD_DENIED_TOOLS = {
  [BACKGROUND_TASK_TOOL]: false,
  background_output: false,
  background_cancel: false,
  background_list: false,
} as const;

type AgentInfo = { name: string; hidden?: boolean };

/** Checks the agent before anything is created; the error lists the agents there are. */
export async function checkAgent(client: Client, agent: string): Promise<string | undefined> {
  const agents = ((await call("listing agents", client.app.agents())) ?? []) as AgentInfo[];
  if (agents.some((a) => a.name === agent)) return undefined;
  const names = agents.filter((a) => !a.hidden).map((a) => a.name);
  return MESSAGES.unknownAgent(agent, names);
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

/**
 * Creates the child session (a real child: parentID set, so the TUI lists it), gives a fork its
 * context, sends the prompt. Any failure after the child exists removes the child and records nothing.
 */
export async function launchTask(manager: TaskManager, input: LaunchInput, ctx: ToolContext): Promise<ToolReply> {
  const client = manager.client;
  const title = childTitle(input.description, input.fork);
  const native = input.native;
  // A native child gets the parent's permission: the tool list depends on it.
  const permission = native ? await parentPermission(client, ctx.sessionID) : undefined;
  const created = await call(
    "creating the child session",
    client.session.create({ body: { parentID: ctx.sessionID, title, ...(permission ? { permission } : {}) } as { parentID: string; title: string } }),
  );
  const now = manager.now();
  const task: BackgroundTask = {
    id: newTaskId((id) => manager.get(id) !== undefined),
    sessionID: created.id,
    parentSessionID: ctx.sessionID,
    callID: callIdOf(ctx),
    description: input.description,
    agent: input.agent,
    model: modelFromToolContext(ctx),
    parentAgent: ctx.agent,
    parentModel: modelFromToolContext(ctx),
    isForked: input.fork,
    ownerPid: process.pid,
    status: "running",
    run: 1,
    notifiedRun: 0,
    reportedRun: 0,
    createdAt: now,
    startedAt: now,
    toolCalls: 0,
  };
  ctx.metadata({ title, metadata: { sessionId: task.sessionID, taskId: task.id } });
  manager.beginLaunch(task);
  try {
    if (native) {
      native.registry.register(task.sessionID, native.rootSessionID, native.snapshot.json);
      task.fork = nativeSummary(native);
    } else if (input.fork) await injectForkContext(manager, task, task.callID);
    task.startedAt = manager.now();
    await call(
      "sending the task prompt",
      client.session.promptAsync({
        path: { id: task.sessionID },
        body: native
          ? // the server takes `variant` (v2 API); the v1 client's type lacks it
            (nativePromptBody(native, input.prompt) as unknown as { agent: string; parts: [{ type: "text"; text: string }] })
          : { agent: task.agent, model: task.model, tools: { ...CHILD_DENIED_TOOLS }, parts: [{ type: "text", text: input.prompt }] },
      }),
    );
    // Persisted after the prompt is on its way (the first request reads the registry in memory).
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

async function injectForkContext(manager: TaskManager, task: BackgroundTask, callID: string): Promise<void> {
  const messages = await getMessages(manager.client, task.parentSessionID);
  const context = buildForkContext(messages, { excludeCallID: callID });
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
  await call("aborting the child session", client.session.abort({ path: { id: sessionID } })).catch(() => {});
  await call("deleting the child session", client.session.delete({ path: { id: sessionID } })).catch((error) =>
    log(client, "warn", `could not delete child session ${sessionID}: ${(error as Error).message}`),
  );
}

/** Sends a follow-up prompt to the child of a finished task; the task becomes `resumed`. */
export async function resumeTask(manager: TaskManager, task: BackgroundTask, input: { prompt: string; agent: string }, ctx: ToolContext): Promise<ToolReply> {
  const previous = { ...task };
  await manager.beginResume(task, { callID: callIdOf(ctx), agent: input.agent, model: task.model ?? modelFromToolContext(ctx) });
  ctx.metadata({ title: childTitle(task.description, task.isForked), metadata: { sessionId: task.sessionID, taskId: task.id } });
  try {
    await call(
      "sending the follow-up prompt",
      manager.client.session.promptAsync({
        path: { id: task.sessionID },
        body:
          task.fork?.kind === "native"
            ? ({ agent: task.agent, model: task.model, ...(task.fork.variant ? { variant: task.fork.variant } : {}), parts: [{ type: "text", text: input.prompt }] } as {
                agent: string;
                parts: [{ type: "text"; text: string }];
              })
            : { agent: task.agent, model: task.model, tools: { ...CHILD_DENIED_TOOLS }, parts: [{ type: "text", text: input.prompt }] },
      }),
    );
  } catch (error) {
    Object.assign(task, previous);
    await manager.save();
    throw error;
  }
  return { title: `Resumed: ${task.description}`, output: MESSAGES.resumed(task), metadata: { sessionId: task.sessionID, taskId: task.id, resumed: true } };
}

/** Aborts running tasks of the caller; each becomes `cancelled` (its parent notified once). */
export async function cancelTasks(manager: TaskManager, tasks: BackgroundTask[]): Promise<{ cancelled: BackgroundTask[]; failed: string[] }> {
  const cancelled: BackgroundTask[] = [];
  const failed: string[] = [];
  for (const task of tasks) {
    if (!isActive(task.status)) continue;
    // Set before the abort: its idle event may end the task before the abort call returns.
    task.cancelledByParent = true;
    try {
      await call(`aborting task ${task.id}`, manager.client.session.abort({ path: { id: task.sessionID } }));
      await manager.finish(task, "cancelled", "cancelled by the parent session");
      cancelled.push(task);
    } catch (error) {
      task.cancelledByParent = undefined;
      failed.push(`${task.id}: ${(error as Error).message}`);
    }
  }
  return { cancelled, failed };
}
