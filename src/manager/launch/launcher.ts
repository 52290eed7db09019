// Launching and resuming a task: the child session (a real child: parentID set, so the TUI lists
// it), the fork context for a forked one, the prompt. A task that can run now has all of it before
// the launch returns, and any failure removes the child and records nothing; a queued one is
// recorded at once and its child created right after (see launchTask).
//
// Launches of one parent turn share what they read: the agent list and, for forks, the parent's
// messages (32 launches in one turn read each once).

import { basename, dirname } from "node:path";
import type { ToolContext } from "../../host/types.js";
import { AGENT_LIST_FRESH_MS, LAUNCH_SHARE_MS } from "../../constants.js";
import { toolNames, withToolNames } from "../../tool-names.js";
import { expectSystem } from "../../native/request-check.js";
import { buildForkContext } from "../../fork/index.js";
import type { ForkContext, SessionMessage } from "../../fork/types.js";
import { type NativeLaunch, nativeSummary } from "../../native/launch.js";
import { nativeDirective } from "../../native/preamble.js";
import type { PluginOptions } from "../../options.js";
import { MESSAGES, childTitle } from "../../prompts.js";
import { listAgents } from "../../host/app.js";
import { type Client, abortQuietly, call, getMessages, log } from "../../host/client.js";
import { createSession, deleteSession, disposeInstance, getSession } from "../../host/session.js";
import { callIdOf, modelFromToolContext } from "../../host/tool-context.js";
import { newTaskId } from "../task/ids.js";
import { sendTaskPrompt, storeForkContext } from "./prompt.js";
import { publishedState } from "../task/publish.js";
import type { ChildPlan, TaskEntry } from "../task/registry.js";
import type { Dispatch } from "../task/runner.js";
import type { Ending } from "../task/completion.js";
import { launchedFields } from "../task/transitions.js";
import type { BackgroundTask, ForkSummary, ModelRef, TaskFields, WorktreeInfo } from "../../task-record.js";
import { isLoaded, sessionDirectory, setSessionDirectory } from "../../worktree/hub.js";
import { type WorktreeHost, hostTask, unhostTask } from "../../worktree/lifecycle.js";
import { type FromRemote, type SandboxChoice, createWorktree, freeWorktree, hasDirectory, recreateWorktree, removeWorktree } from "../../worktree/worktree.js";
import { sandboxProbe } from "../../worktree/sandbox/probe.js";
import { chooseSandbox } from "../../worktree/sandbox/prepare.js";
import { withWorkplace, workplaceNote } from "../../worktree/isolation.txt.js";

export type ToolReply = { title: string; output: string; metadata: Record<string, unknown> };

type AgentInfo = { name: string; hidden?: boolean; model?: { providerID?: unknown; modelID?: unknown } };

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

/** The agents of the latest list read, per client, and when it was read. */
const knownAgents = new WeakMap<Client, { readAt: number; names: ReadonlySet<string>; models: ReadonlyMap<string, ModelRef> }>();

/** The model the agent's config names (from the latest agent list read, by checkAgent), if any. */
export function agentModelOf(client: Client, agent: string): ModelRef | undefined {
  return knownAgents.get(client)?.models.get(agent);
}

function agentModels(list: AgentInfo[]): Map<string, ModelRef> {
  const models = new Map<string, ModelRef>();
  for (const a of list) {
    const { providerID, modelID } = a.model ?? {};
    if (typeof providerID === "string" && providerID && typeof modelID === "string" && modelID) models.set(a.name, { providerID, modelID });
  }
  return models;
}

/**
 * Checks the agent before anything is created; the error lists the agents there are. An agent seen
 * in a list read less than AGENT_LIST_FRESH_MS ago passes without reading it again; any other is
 * checked against a fresh list (read once per parent turn).
 */
export async function checkAgent(client: Client, agent: string, ctx: Pick<ToolContext, "sessionID" | "messageID">): Promise<string | undefined> {
  const known = knownAgents.get(client);
  if (known && Date.now() - known.readAt < AGENT_LIST_FRESH_MS && known.names.has(agent)) return undefined;
  const agents = await agentLists.get(turnKey(ctx), async () => {
    const list = ((await call("listing agents", listAgents(client))) ?? []) as AgentInfo[];
    knownAgents.set(client, { readAt: Date.now(), names: new Set(list.map((a) => a.name)), models: agentModels(list) });
    return list;
  });
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
  /** the model chosen with `model` (model-choice.ts); without it the caller's */
  model?: ModelRef;
  variant?: string;
  /** "worktree": the task works in its own git worktree and branch (src/worktree) */
  isolation?: "shared" | "worktree";
  /** hosts a person allowed this worktree task's commands to reach (besides the option `sandboxNetwork`'s) */
  network?: readonly string[];
  /** a remote parent's launch through its relay session here (requests/relay.ts): its id, its base, its text fork, its containment */
  relayed?: RelayedLaunch;
  /** background_task's `remote`: the task runs on that remote (../remote/launch.ts) */
  remote?: string;
}

/** What a launch asked for from another machine brings (remote-protocol.ts `launch`). */
export interface RelayedLaunch {
  taskId: string;
  /** the commit the parent sent through the shared git remote: the branch starts there */
  from: FromRemote;
  /** a text fork: the context the parent built (a native fork cannot share a cache across machines) */
  fork?: { text: string; summary: ForkSummary };
  /** refused unless the child runs in an OS sandbox here, whatever allowUnsandboxedWorktrees says */
  requireSandbox: boolean;
}

export type { ChildPlan };

/**
 * What the launch room takes from the manager (task-manager.ts): its client and clock, the queue's
 * decision, the steps of a launch and of a resume, the end of a task that cannot start, the budget's
 * word before a queued start. Nothing here writes a task's status: the manager's methods do
 * (task/step.ts, through its runner).
 */
export interface LaunchHost extends WorktreeHost, Dispatch {
  readonly client: Client;
  /** work that goes on after the call that started it returned (the manager's whenIdle waits for it) */
  background(work: Promise<unknown>): void;
  now(): number;
  readonly isDisposed: boolean;
  readonly project: { directory: string; id: string } | undefined;
  readonly options: Pick<
    PluginOptions,
    "userAnswerTools" | "allowUnsandboxedWorktrees" | "sandboxWritable" | "sandboxNetwork" | "sandboxPassEnv" | "worktreeSetup" | "worktreeSetupTimeoutSeconds"
  >;
  readonly queue: { claim(task: BackgroundTask): string | undefined; release(task: BackgroundTask): void };
  get(id: string): BackgroundTask | undefined;
  beginLaunch(task: BackgroundTask, childPlan?: ChildPlan): TaskEntry;
  commitLaunch(task: BackgroundTask): Promise<void>;
  abandonLaunch(task: BackgroundTask): void;
  createChildLater(entry: TaskEntry): void;
  beginResume(task: BackgroundTask, fields: Pick<BackgroundTask, "callID" | "agent" | "model">): Promise<void>;
  runOrQueue(task: BackgroundTask, prompt: string): Promise<"run" | "wait">;
  rollbackResume(task: BackgroundTask, previous: BackgroundTask): Promise<void>;
  /** Records the worktree a resume made again from the task's branch (task/step.ts `worktree-recreated`). */
  recordWorktree(task: BackgroundTask, worktree: WorktreeInfo): Promise<void>;
  /** the run's end, once (the edge `finish`): a queued task that cannot start */
  finish(task: BackgroundTask, ending: Ending): Promise<void>;
  /** the parent's budget allows the start (session-budget.ts), else the task is paused */
  readonly budget: { mayStart(entry: TaskEntry): Promise<boolean> };
  /** a paused task that runs on a remote goes on there with `prompt` (../remote/actions.ts): undefined, or why not */
  continueRemote(entry: TaskEntry, prompt: string): Promise<string | undefined>;
  /** a task that waited here for a slot of its remote is launched there (../remote/launch.ts): undefined, or why not */
  startRemote(entry: TaskEntry): Promise<string | undefined>;
}

/**
 * Launches a task. One that can run now gets its child and its prompt before this returns (any
 * failure removes the child and records nothing). One that must wait is registered and saved as
 * `queued` and this returns at once: its child is created right after, one at a time
 * (TaskManager.createChildLater), so a turn of many launches does not wait for the server to create
 * children that have nothing to do yet.
 */
export async function launchTask(manager: LaunchHost, input: LaunchInput, ctx: ToolContext): Promise<ToolReply> {
  const client = manager.client;
  const now = manager.now();
  const callerModel = modelFromToolContext(ctx);
  const model = input.native ? input.native.model : (input.model ?? callerModel); // a native child runs on exactly the caller's model
  const draft: TaskFields = {
    id: input.relayed?.taskId ?? newTaskId((id) => manager.get(id) !== undefined),
    sessionID: "",
    parentSessionID: ctx.sessionID,
    callID: callIdOf(ctx),
    description: input.description,
    agent: input.agent,
    model,
    ...(input.variant ? { variant: input.variant } : {}),
    parentAgent: ctx.agent,
    parentModel: callerModel,
    isForked: input.fork,
    ownerPid: process.pid,
    status: "queued",
    run: 1,
    notifiedRun: 0,
    reportedRun: 0,
    createdAt: now,
    startedAt: now,
    toolCalls: 0,
    // (launched by a remote parent: its runs' branch goes back through the shared git remote, its parent is never woken)
    ...(input.relayed ? { relay: { gitRemote: input.relayed.from.gitRemote } } : {}),
  };
  const plan: ChildPlan = { title: childTitle(input.description, input.fork) };
  await planInheritance(manager, input, ctx, draft, plan);
  // isolation "worktree": the worktree exists before the child (a failure here creates nothing), and
  // the child's first prompt says where it works (a native fork: in its directive, after the parent's prefix)
  if (input.isolation === "worktree") {
    if (!manager.project) throw new Error("this OpenCode instance did not say which project it serves; a worktree task cannot be made");
    const options = input.relayed?.requireSandbox ? { ...manager.options, allowUnsandboxedWorktrees: false } : manager.options;
    const sandbox = await sandboxFor(options, input.network ?? []);
    draft.worktree = await createWorktree({
      projectDir: manager.project.directory,
      projectID: manager.project.id,
      taskId: draft.id,
      sandbox,
      ready: manager.options,
      ...(input.network?.length ? { network: input.network } : {}),
      onCacheLeftOut: cacheLeftOutLogger(manager.client, draft.id),
      ...(input.relayed ? { from: input.relayed.from } : {}),
    });
    const facts = sandbox ? { caches: sandbox.taskCaches ?? "", hosts: sandbox.hosts ?? [] } : undefined;
    if (input.native) {
      plan.native = { ...input.native, workplace: workplaceNote(draft.worktree, facts) };
      input = { ...input, native: plan.native };
    } else input = { ...input, prompt: withWorkplace(draft.worktree, input.prompt, facts) };
  }
  try {
    return await launchPlanned(manager, input, ctx, draft, plan);
  } catch (error) {
    unhostTask(draft);
    if (draft.worktree)
      await removeWorktree(draft.worktree).catch((e) => log(client, "warn", `removing the worktree of a failed launch failed: ${(e as Error).message}`));
    throw error;
  }
}

/**
 * The OS sandbox a worktree task runs in (sandbox/probe.ts), or none where the machine has none and
 * the user accepted text-level containment; otherwise the launch is refused with the reason and the fix.
 */
async function sandboxFor(
  options: Pick<PluginOptions, "allowUnsandboxedWorktrees" | "sandboxWritable" | "sandboxNetwork" | "sandboxPassEnv">,
  network: readonly string[],
): Promise<SandboxChoice | undefined> {
  const probe = await sandboxProbe();
  if (probe.kind === "ready") return chooseSandbox(probe, options, network);
  if (options.allowUnsandboxedWorktrees) return undefined;
  throw new Error(`${probe.reason}. To fix: ${probe.fix}`);
}

/** The log line for a cache of `sandboxWritable` whose real path leads into the checkout or its git directory (worktree.ts). */
function cacheLeftOutLogger(client: Client, taskId: string) {
  return (dir: string, why: string) =>
    log(client, "warn", `offshoot: option "sandboxWritable": ${dir} left out of task ${taskId}'s sandbox: ${why}, which a sandboxed child must not write.`);
}

/** What the child inherits: a native fork's registration and the parent's permission, or the text fork's context. */
export async function planInheritance(
  manager: Pick<LaunchHost, "client" | "options">,
  input: LaunchInput,
  ctx: ToolContext,
  draft: TaskFields,
  plan: ChildPlan,
): Promise<void> {
  const native = input.native;
  if (input.relayed?.fork) {
    // a remote parent's text fork: the context it built there travels as text
    plan.forkText = input.relayed.fork.text;
    draft.fork = input.relayed.fork.summary;
  } else if (native) {
    plan.native = native;
    plan.permission = await parentPermissions.get(turnKey(ctx), () => parentPermission(manager.client, ctx.sessionID));
    draft.fork = nativeSummary(native);
  } else if (input.fork) {
    const context = await turnForkContext(manager, ctx);
    plan.forkText = `${withToolNames(context.preamble)}\n\n${context.text}`;
    draft.fork = textForkSummary(context, input.fallback);
  }
}

async function launchPlanned(manager: LaunchHost, input: LaunchInput, ctx: ToolContext, draft: TaskFields, plan: ChildPlan): Promise<ToolReply> {
  const client = manager.client;
  const native = input.native;
  // Runs now or waits in the queue: decided before anything is created, so the child is published right.
  // A native child's prompt is the directive with the task (a queued one keeps it for later).
  // The record is still being created (registered just below): it starts with these, no edge (transitions.ts).
  const wait = manager.queue.claim(draft);
  const task: BackgroundTask = Object.assign(draft, launchedFields(wait, native ? nativeDirective(input.prompt, native.workplace) : input.prompt));
  const entry = manager.beginLaunch(task, wait ? plan : undefined);
  if (wait) {
    await manager.commitLaunch(task);
    manager.createChildLater(entry);
    ctx.metadata({ title: plan.title, metadata: { taskId: task.id } });
    // Answers a turn of the event loop after its save: a launch of this turn that runs (an earlier call:
    // the queue hands out free slots in call order) and shares the save answers first. OpenCode
    // finishes a turn's calls one by one in the order they answer, so the call that started first is
    // not kept waiting behind every queued one.
    await afterThisTurnOfTheLoop();
    return { title: plan.title, output: MESSAGES.launched(task), metadata: { taskId: task.id, forked: task.isForked, queued: true } };
  }
  manager.queue.release(task); // registered as running: it counts itself now
  try {
    await createChild(manager, entry, plan);
    ctx.metadata({ title: plan.title, metadata: { sessionId: task.sessionID, taskId: task.id } });
    await manager.dispatch(entry, { kind: "prompt-sending" });
    await sendTaskPrompt(client, task, input.prompt, { what: "sending the task prompt", native });
    persistNativeFork(manager, task, plan);
  } catch (error) {
    manager.abandonLaunch(task);
    if (task.sessionID) await discardChild(client, task.sessionID, plan);
    throw error;
  }
  await manager.commitLaunch(task);
  return {
    title: plan.title,
    output: MESSAGES.launched(task),
    metadata: { sessionId: task.sessionID, taskId: task.id, forked: task.isForked },
  };
}

/** Resolves once the callbacks already due in this turn of the event loop have run (see launchPlanned). */
function afterThisTurnOfTheLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * Creates the task's child (published with the task's state) and gives it what it inherits: the
 * fork context message, or the native fork's registration. The child is the task's only once all
 * of that worked; on a failure it is removed and the error thrown.
 */
export async function createChild(manager: LaunchHost, entry: TaskEntry, plan: Readonly<ChildPlan>): Promise<void> {
  const { client } = manager;
  const { task } = entry;
  const createdAs = task.status; // the state the child is created with (its metadata)
  const body = {
    parentID: task.parentSessionID,
    title: plan.title,
    metadata: { offshoot: publishedState(task) },
    ...(plan.permission ? { permission: plan.permission } : {}),
  };
  // A worktree task's child is created in the worktree's directory: OpenCode serves it with that
  // directory's instance (its own config, plugins and event bus), whose plugin hands its events here.
  const directory = task.worktree?.directory;
  if (task.worktree) hostTask(manager, task);
  const created = await call("creating the child session", createSession(client, body as { parentID: string; title: string }, directory));
  try {
    if (directory) {
      // Without its config there, the worktree's instance has no model and no plugins: the prompt would silently do nothing.
      if (!isLoaded(directory)) throw new Error(MESSAGES.worktreeWithoutConfig(directory));
      setSessionDirectory(created.id, directory);
    }
    if (plan.native) {
      // The snapshot is serialised later (its file: persistNativeFork; its first request: the hooks).
      plan.native.registry.register(created.id, plan.native.rootSessionID, plan.native.snapshot);
      expectSystem(created.id, plan.native.parentSessionID);
    } else if (plan.forkText) {
      await storeForkContext(client, task, created.id, plan.forkText, directory);
    }
  } catch (error) {
    await discardChild(client, created.id, plan);
    throw error;
  }
  // (a task that started or ended meanwhile is saved and published anew: task/step.ts `child-created`)
  await manager.dispatch(entry, { kind: "child-created", sessionID: created.id, createdAs });
}

/**
 * Writes a native child's fork file (what a restart reads), in the background: called once its
 * prompt went out (or, for a queued task, once its child exists), so the copy of the parent's
 * history is never on the tool call's path. A write that fails costs only a restart's native
 * context (the child then runs on what it has): logged, never thrown.
 */
export function persistNativeFork(host: LaunchHost, task: BackgroundTask, plan: Readonly<ChildPlan>): void {
  const native = plan.native;
  if (!native || !task.sessionID) return;
  const child = task.sessionID;
  // (a turn of the event loop later: the launch returns first)
  const written = new Promise<void>((resolve) => setImmediate(resolve))
    .then(() => native.registry.persist(child, task.parentSessionID, native.rootSessionID, native.snapshot, task.createdAt))
    .catch((error) => log(host.client, "warn", `writing the native fork file of task ${task.id} failed: ${(error as Error).message}`));
  host.background(written);
}

/** The parent session's permission rules (undefined when it has none or they cannot be read). */
async function parentPermission(client: Client, sessionID: string): Promise<unknown> {
  const parent = await call("reading the parent session", getSession(client, sessionID)).catch(() => undefined);
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
    p?.type === "tool" && p.tool === toolNames().task && (p.state?.status === "pending" || p.state?.status === "running");
  return messages.map((m) => (Array.isArray(m?.parts) && m.parts.some(inFlight) ? { ...m, parts: m.parts.filter((p) => !inFlight(p)) } : m));
}

/** The text fork context of this turn's forks (built once per turn); refused when it came out empty. */
async function turnForkContext(manager: Pick<LaunchHost, "client" | "options">, ctx: ToolContext): Promise<ForkContext> {
  const context = await forkContexts.get(turnKey(ctx), async () =>
    buildForkContext(withoutLaunchesInFlight(await getMessages(manager.client, ctx.sessionID)), { userAnswerTools: manager.options.userAnswerTools }),
  );
  if (!context.text) throw new Error("the fork context came out empty; refusing to start a forked task without context");
  return context;
}

function textForkSummary({ stats }: ForkContext, notNative: string | undefined): ForkSummary {
  return {
    ...(notNative ? { notNative: notNative.slice(0, NOT_NATIVE_MAX) } : {}),
    kind: "text",
    keptMessages: stats.finalCount,
    totalMessages: stats.originalCount,
    chars: stats.totalChars,
    fromCompaction: stats.compactionDetected,
  };
}

/** The longest reason kept for a fork that is not native (the task file's bound). */
const NOT_NATIVE_MAX = 1000;

/** A child that will not be used: removed, and its native registration forgotten. */
async function discardChild(client: Client, sessionID: string, plan: ChildPlan): Promise<void> {
  await removeChild(client, sessionID);
  if (plan.native) await plan.native.registry.forget(sessionID).catch(() => {});
}

/** Best effort: abort, then delete. A failure here is logged, never hidden behind the original error. */
async function removeChild(client: Client, sessionID: string): Promise<void> {
  await abortQuietly(client, sessionID, sessionDirectory(sessionID));
  await call("deleting the child session", deleteSession(client, sessionID)).catch((error) =>
    log(client, "warn", `could not delete child session ${sessionID}: ${(error as Error).message}`),
  );
}

/** Sends a follow-up prompt to the child of a finished task; the task becomes `resumed`. */
export async function resumeTask(manager: LaunchHost, task: BackgroundTask, input: { prompt: string; agent: string }, ctx: ToolContext): Promise<ToolReply> {
  // a worktree task continues in its worktree; one whose worktree is gone has nowhere to continue
  if (task.worktree?.removed) return { title: `Not resumed: ${task.description}`, output: MESSAGES.resumeWorktreeGone(task), metadata: { taskId: task.id } };
  const previous = { ...task };
  // its directory was freed when its run was committed: made again from its branch before the prompt goes
  let remade: WorktreeInfo | undefined;
  if (task.worktree && !(await hasDirectory(task.worktree))) {
    try {
      remade = await remakeWorktree(manager, task, task.worktree);
    } catch (error) {
      return {
        title: `Not resumed: ${task.description}`,
        output: MESSAGES.resumeWorktreeNotRemade(task, (error as Error).message),
        metadata: { taskId: task.id },
      };
    }
  }
  await manager.beginResume(task, { callID: callIdOf(ctx), agent: input.agent, model: task.model ?? modelFromToolContext(ctx) });
  ctx.metadata({ title: childTitle(task.description, task.isForked), metadata: { sessionId: task.sessionID, taskId: task.id } });
  if ((await manager.runOrQueue(task, input.prompt)) === "wait") {
    return {
      title: `Resumed: ${task.description}`,
      output: MESSAGES.resumed(task),
      metadata: { sessionId: task.sessionID, taskId: task.id, resumed: true, queued: true },
    };
  }
  try {
    await sendTaskPrompt(manager.client, task, input.prompt, { what: "sending the follow-up prompt" });
  } catch (error) {
    await manager.rollbackResume(task, previous); // the task as it was before the resume
    if (remade) {
      // (its record says freed again: so is its directory)
      unhostTask(task);
      await freeWorktree(remade).catch((e) => log(manager.client, "warn", `freeing the worktree of a resume that failed: ${(e as Error).message}`));
    }
    throw error;
  }
  return { title: `Resumed: ${task.description}`, output: MESSAGES.resumed(task), metadata: { sessionId: task.sessionID, taskId: task.id, resumed: true } };
}

/**
 * Makes a freed worktree's directory again from the task's branch (worktree.ts recreateWorktree: the
 * same path, config links, a new sandbox where the machine has one), records it and hosts it: the
 * child's instance hears of it before its prompt goes. Throws a clear error; the task is unchanged.
 */
async function remakeWorktree(manager: LaunchHost, task: BackgroundTask, info: WorktreeInfo): Promise<WorktreeInfo> {
  const sandbox = await sandboxFor(manager.options, info.network ?? []);
  // (the worktree lives at <worktrees home>/<project id>/<task id>: its sandbox goes beside it, in the same project)
  const remade = await recreateWorktree(info, {
    projectID: basename(dirname(info.path)),
    taskId: task.id,
    sandbox,
    ready: manager.options,
    onCacheLeftOut: cacheLeftOutLogger(manager.client, task.id),
  });
  // OpenCode may hold an instance of that directory booted while it was gone (after a restart, an
  // update of the child's metadata boots one): no config there then, so no model and no plugin, and the
  // prompt would silently do nothing. Dropped: the prompt boots one from the directory as it is now.
  if (!isLoaded(remade.directory)) {
    try {
      await call("dropping the stale instance of its worktree", disposeInstance(manager.client, remade.directory));
    } catch (error) {
      await freeWorktree(remade).catch(() => {}); // (the task is as it was: freed)
      throw error;
    }
  }
  await manager.recordWorktree(task, remade);
  hostTask(manager, task);
  return remade;
}
