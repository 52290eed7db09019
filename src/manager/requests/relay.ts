// What a remote parent asks of this process (the engine side of docs/remote.md). A parent on another
// machine (A) cannot call this plugin: it writes one request at a time into a relay session here, in
// this clone of the project (remote-protocol.ts), and the `session.updated` event brings it here
// (event-decide.ts). Each request id is acted on once; the answer goes into the relay session's
// metadata, which drops the request. The relay session is the task's parent here: the task is an
// ordinary worktree task of this process (its worktree, its sandbox, its runs committed on its
// branch and published in its child's metadata), but for three things: its branch starts at the commit
// A sent through the shared git remote, each run's branch is pushed back there once committed
// (worktree/lifecycle.ts), and its parent is never woken (nobody reads the relay session's turns).
// What each kind does is one row of ACTIONS.

import { call, log } from "../../host/client.js";
import { updateSession } from "../../host/session.js";
import type { ToolContext } from "../../host/types.js";
import { RELAY_KEY, type RelayAnswer, type RelayKind, type RelayRequest, type RelayTask } from "../../remote-protocol.js";
import { type BackgroundTask, isOpen, meaningOf } from "../../task-record.js";
import { discardTask } from "../../worktree/discard.js";
import { pushBranch } from "../../worktree/remote.js";
import { type LaunchHost, type ToolReply, checkAgent, launchTask, resumeTask } from "../launch/launcher.js";
import { resolveModelChoice } from "../launch/model-choice.js";
import type { TaskEntry } from "../task/registry.js";
import { cancelTasks, discardHost } from "./cancel.js";
import type { RequestsHost } from "./host.js";
import { steerTask } from "./steer.js";

/** What the relay's requests take of the manager: a launch's host and the requests room's. */
export type RelayHost = LaunchHost & RequestsHost;

type Outcome = Omit<RelayAnswer, "id">;

/** How long a launch that had to wait in this process's queue waits for its child to be created, for the answer to name it. */
const CHILD_WAIT_MS = 15_000;

/** The tool context a relayed launch or resume runs with: the relay session is the caller. */
function relayContext(relay: string, request: RelayRequest, agent: string): ToolContext {
  return {
    sessionID: relay,
    messageID: `relay_${request.id}`,
    callID: request.id,
    agent,
    directory: "",
    worktree: "",
    abort: new AbortController().signal,
    metadata: () => {},
    ask: async () => {},
  } as unknown as ToolContext;
}

/** The task of this relay a request names (another parent's task is not this relay's to touch). */
function taskOf(host: RelayHost, relay: string, taskId: string): TaskEntry | undefined {
  host.tasksOf(relay); // (a settled task is read from the history on demand)
  const entry = host.registry.get(taskId);
  return entry?.task.parentSessionID === relay ? entry : undefined;
}

function taskAnswer(task: BackgroundTask): RelayTask {
  return {
    id: task.id,
    session: task.sessionID,
    directory: task.worktree?.directory ?? "",
    containment: task.worktree?.containment ?? "text",
    run: task.run,
    status: task.status,
  };
}

const replyText = (reply: ToolReply | string): string => (typeof reply === "string" ? reply : reply.output);
const failed = (reply: ToolReply | string) => typeof reply === "string" && reply.startsWith("Error");

const ACTIONS: { readonly [K in RelayKind]: (host: RelayHost, relay: string, request: Extract<RelayRequest, { kind: K }>) => Promise<Outcome> } = {
  /** a worktree task made from the commit A sent, its child prompted; answered with the task once its child exists */
  launch: async (host, relay, request) => {
    const known = host.get(request.taskId);
    if (known)
      return known.parentSessionID === relay
        ? { ok: "launched already", task: taskAnswer(known) } // (the same request again)
        : { error: `a task ${request.taskId} exists here already` };
    const ctx = relayContext(relay, request, request.agent);
    const agentError = await checkAgent(host.client, request.agent, ctx);
    if (agentError) return { error: agentError.replace(/^Error: /, "") };
    const choice = request.model ? await resolveModelChoice(host.client, request.model) : undefined;
    if (choice && "error" in choice) return { error: choice.error.replace(/^Error: /, "") };
    const reply = await launchTask(
      host,
      {
        description: request.description,
        prompt: request.prompt,
        agent: request.agent,
        fork: Boolean(request.fork),
        isolation: "worktree",
        ...(request.network?.length ? { network: request.network } : {}),
        ...(choice ?? {}),
        relayed: {
          taskId: request.taskId,
          from: { base: request.base, parentHead: request.parentHead, gitRemote: request.gitRemote },
          ...(request.fork ? { fork: { text: request.fork.text, summary: request.fork.summary } } : {}),
          requireSandbox: request.requireSandbox,
        },
      },
      ctx,
    );
    const task = host.get(request.taskId);
    if (!task) return { error: `the launch answered but no task ${request.taskId} is known: ${reply.output.slice(0, 500)}` };
    // (a launch that waits in this process's queue gets its child right after it returned)
    for (const until = Date.now() + CHILD_WAIT_MS; !task.sessionID && isOpen(task.status) && Date.now() < until;) await new Promise((r) => setTimeout(r, 50));
    if (!task.sessionID) return { error: `task ${task.id} got no child session here (${task.status}${task.error ? `: ${task.error}` : ""})` };
    return { ok: reply.output, task: taskAnswer(task) };
  },
  /** the task cancelled (its run ends as cancelled here: its branch committed and pushed, its state published) */
  cancel: async (host, relay, request) => {
    const entry = taskOf(host, relay, request.taskId);
    if (!entry) return { error: `no task ${request.taskId} of this relay` };
    if (!isOpen(entry.task.status)) return { ok: `task ${request.taskId} has already ended (${entry.task.status})`, task: taskAnswer(entry.task) };
    const { failed: why } = await cancelTasks(host, [entry.task], request.reason);
    return why.length ? { error: `could not cancel it: ${why.join("; ")}` } : { ok: `task ${request.taskId} cancelled`, task: taskAnswer(entry.task) };
  },
  /** a message into the running task (steer.ts: stored and counted, or why not) */
  steer: async (host, relay, request) => {
    const entry = taskOf(host, relay, request.taskId);
    if (!entry) return { error: `no task ${request.taskId} of this relay` };
    const reply = await steerTask(host, entry.task, request.prompt, undefined);
    if (reply === undefined) return { error: `task ${request.taskId} has ended (${entry.task.status}): resume it instead` };
    return failed(reply) ? { error: replyText(reply).replace(/^Error: /, "") } : { ok: replyText(reply), task: taskAnswer(entry.task) };
  },
  /** the running task paused after its step, as A's budget asks (session-budget.ts: its run has not ended) */
  pause: async (host, relay, request) => {
    const entry = taskOf(host, relay, request.taskId);
    if (!entry) return { error: `no task ${request.taskId} of this relay` };
    const outcome = await host.budget.pauseAsked(entry, request.reason);
    return "error" in outcome ? outcome : { ok: outcome.ok, task: taskAnswer(entry.task) };
  },
  /** the paused task goes on in place (a person raised A's budget and continued it there) */
  continue: async (host, relay, request) => {
    const entry = taskOf(host, relay, request.taskId);
    if (!entry) return { error: `no task ${request.taskId} of this relay` };
    if (meaningOf(entry.task.status).followUp !== "continue") return { error: `task ${request.taskId} is ${entry.task.status}, not paused` };
    const outcome = await host.budget.continueTask(entry, request.prompt);
    return "error" in outcome ? outcome : { ok: `task ${request.taskId} continues`, task: taskAnswer(entry.task) };
  },
  /** a new run of the ended task, in its worktree (made again from its branch when it was freed) */
  resume: async (host, relay, request) => {
    const entry = taskOf(host, relay, request.taskId);
    if (!entry) return { error: `no task ${request.taskId} of this relay` };
    const { task } = entry;
    if (meaningOf(task.status).open) return { error: `task ${request.taskId} has not ended (${task.status})` };
    const agent = request.agent ?? task.agent;
    const reply = await resumeTask(host, task, { prompt: request.prompt, agent }, relayContext(relay, request, agent));
    if (meaningOf(task.status).open) return { ok: reply.output, task: taskAnswer(task) };
    return { error: reply.output.replace(/^Error: /, "") };
  },
  /** its branch pushed to the shared git remote again (a push after a run's commit failed) */
  push: async (host, relay, request) => {
    const entry = taskOf(host, relay, request.taskId);
    const info = entry?.task.worktree;
    if (!entry || !info || !entry.task.relay) return { error: `no task ${request.taskId} of this relay` };
    if (info.removed) return { error: `its worktree and branch were removed (${info.removed})` };
    try {
      const head = await pushBranch(info.repo, entry.task.relay.gitRemote, info.branch);
      await host.dispatch(entry, { kind: "pushed", head });
      return { ok: `pushed ${info.branch} at ${head.slice(0, 12)}`, task: taskAnswer(entry.task) };
    } catch (error) {
      await host.dispatch(entry, { kind: "pushed", error: (error as Error).message });
      return { error: (error as Error).message };
    }
  },
  /** its worktree and branch removed here (it was taken or discarded by the parent) */
  discard: async (host, relay, request) => {
    const entry = taskOf(host, relay, request.taskId);
    if (!entry) return { ok: `no task ${request.taskId} of this relay: nothing to discard` };
    const outcome = await discardTask(discardHost(host), entry.task);
    return "error" in outcome ? { error: outcome.error } : { ok: outcome.ok.split("\n")[0]!, task: taskAnswer(entry.task) };
  },
};

/** Request ids already acted on, per manager. */
const handled = new WeakMap<object, Set<string>>();

/** A relay request (event-decide.ts), acted on once; its answer written into the relay session's metadata. Never throws. */
export async function onRelayRequest(host: RelayHost, relay: string, request: RelayRequest, metadata: Record<string, unknown>): Promise<void> {
  let seen = handled.get(host);
  if (!seen) handled.set(host, (seen = new Set()));
  if (seen.has(request.id)) return;
  seen.add(request.id);
  const action = ACTIONS[request.kind] as (host: RelayHost, relay: string, request: RelayRequest) => Promise<Outcome>;
  const outcome: Outcome = await action(host, relay, request).catch((error: Error) => ({ error: error.message }));
  log(
    host.client,
    outcome.error ? "warn" : "info",
    `offshoot: remote parent's ${request.kind} request ${request.id} for task ${request.taskId}${outcome.error ? ` refused: ${outcome.error}` : ": done"}`,
  );
  const answered: RelayAnswer = { id: request.id, ...outcome };
  const { [RELAY_KEY]: relayMeta, ...rest } = metadata;
  const next = { ...rest, [RELAY_KEY]: { ...(relayMeta as object), v: 1, request: undefined, answered } };
  await call(`answering the relay request ${request.id}`, updateSession(host.client, relay, { metadata: next } as never)).catch((error) =>
    log(host.client, "warn", `offshoot: ${(error as Error).message}`),
  );
}
