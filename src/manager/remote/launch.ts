// A worktree task launched on a remote (background_task's `remote`; docs/remote.md). In order, and
// nothing is created on the remote before every check passed:
// 1. the remote is known, its password's variable is set, this repository has the shared git remote;
// 2. the snapshot of what the parent sees (HEAD plus uncommitted changes: worktree.ts snapshotFor,
//    as a local worktree launch makes it) is made;
// 3. the remote answers as healthy with this password, and its directory is a git repository (GET
//    /vcs: a directory that does not exist would silently make a `global` session there);
// 4. a text fork's context is built here (a native fork cannot share a prompt cache across machines:
//    it becomes a text fork, and the reply says so);
//    past the remote's own limit (remotes.<name>.concurrency), the task waits here, queued, with its
//    mirror child (8.) and nothing made there; its turn (launch/queued.ts) goes on from 5.;
// 5. the snapshot is pushed to the shared git remote (`refs/heads/offshoot/<id>-base`);
// 6. a relay session is made in the remote's clone, and the launch asked of the remote's plugin
//    through it (remote-protocol.ts): it fetches the commit, makes the worktree from it, sandboxes and
//    prompts the child, and answers with its child session and containment;
// 7. a containment weaker than asked for is refused (the task cancelled and discarded there);
// 8. a mirror child session is made here (the sidebar, /tasks and the subagent view list it), and the
//    task is saved and followed (follow.ts).
// Any failure undoes what was made, in reverse, and the launch fails with the reason.

import { join, relative } from "node:path";
import { call, log } from "../../host/client.js";
import { RemoteCallError } from "../../host/remote.js";
import { createSession } from "../../host/session.js";
import { callIdOf, modelFromToolContext } from "../../host/tool-context.js";
import type { ToolContext } from "../../host/types.js";
import { MESSAGES, childTitle } from "../../prompts.js";
import { RELAY_KEY, type RelayForkSummary } from "../../remote-protocol.js";
import type { BackgroundTask, RemoteInfo, TaskFields, WorktreeInfo } from "../../task-record.js";
import { deleteRemoteRefs, hasGitRemote, pushBase } from "../../worktree/remote.js";
import { branchOf, snapshotFor, worktreesHome } from "../../worktree/worktree.js";
import { type ChildPlan, type LaunchInput, type ToolReply, planInheritance } from "../launch/launcher.js";
import { modelName } from "../launch/model-choice.js";
import { newTaskId } from "../task/ids.js";
import { publishedState } from "../task/publish.js";
import type { TaskEntry } from "../task/registry.js";
import type { RemoteActions } from "./actions.js";
import type { RemoteHost } from "./host.js";
import type { RemoteLinks } from "./links.js";
import { ask, requestId } from "./relay-client.js";
import { REMOTE } from "./remote.txt.js";

/** What a remote launch takes besides the room's host: the links, the actions (to undo a launch the remote made). */
export interface RemoteLaunchParts {
  links: RemoteLinks;
  actions: RemoteActions;
}

/** Launches the task on its remote (or queues it here for a slot of it); the reply, or a thrown error with the reason (nothing left behind). */
export async function launchRemote(host: RemoteHost, parts: RemoteLaunchParts, input: LaunchInput, ctx: ToolContext): Promise<ToolReply> {
  const name = input.remote!;
  const { links } = parts;
  const { options, project, transport } = reach(host, links, name);

  const id = newTaskId((taken) => host.get(taken) !== undefined);
  const snapshot = await snapshotFor(project.directory, id);
  if (!(await hasGitRemote(snapshot.repo, options.gitRemote))) throw new Error(REMOTE.noGitRemote(options.gitRemote));
  // B is asked before anything is made there: its password, then its directory
  try {
    await transport.health();
    const vcs = await transport.vcs(options.directory);
    if (vcs.branch === null) throw new Error(REMOTE.noDirectory(name, options.directory));
    links.reached(name);
  } catch (error) {
    if (error instanceof RemoteCallError && error.kind === "unreachable") links.unreachable(name, error.message);
    throw error;
  }

  const now = host.now();
  const callerModel = modelFromToolContext(ctx);
  const draft: TaskFields = {
    id,
    sessionID: "",
    parentSessionID: ctx.sessionID,
    callID: callIdOf(ctx),
    description: input.description,
    agent: input.agent,
    // (the remote's agent or default model, unless one was chosen: the one it names there)
    ...(input.model ? { model: input.model } : {}),
    ...(input.variant ? { variant: input.variant } : {}),
    parentAgent: ctx.agent,
    parentModel: callerModel,
    isForked: input.fork,
    ownerPid: process.pid,
    // (queued until it has a slot of its remote: decided below, before anything is made there)
    status: "queued",
    run: 1,
    notifiedRun: 0,
    reportedRun: 0,
    createdAt: now,
    startedAt: now,
    toolCalls: 0,
    remoteWait: {
      name,
      base: snapshot.base,
      parentHead: snapshot.parentHead,
      repo: snapshot.repo,
      projectDir: snapshot.projectDir,
      ...(input.network?.length ? { network: [...input.network] } : {}),
    },
  };
  // a fork's context is built here and travels as text (a native fork becomes a text fork)
  const plan: ChildPlan = { title: childTitle(input.description, input.fork) };
  // (a fork on the caller's own agent and model would be native here)
  const fallback = input.fork && (input.native || (input.agent === ctx.agent && !input.model)) ? REMOTE.nativeBecomesText : input.fallback;
  // (the reason is kept in the fork's summary: the reply, the list and the notice say it)
  await planInheritance(host, { ...input, native: undefined, fallback }, ctx, draft, plan);

  // its remote's limit (remotes.<name>.concurrency): past it, the task waits here, in the queue, and is
  // launched there when its turn comes (startQueuedRemote); nothing is made there or on the shared remote before
  const wait = host.queue.claim(draft);
  if (wait) return queueHere(host, draft, plan, input, ctx, wait);
  try {
    const made = await makeThere(host, parts, draft, { prompt: input.prompt, forkText: plan.forkText });
    let child;
    try {
      // the mirror child here: what the sidebar, /tasks and the subagent view list; its state is the task's
      const running = { ...draft, status: "running" as const, remote: made.remote, worktree: made.worktree, remoteWait: undefined };
      child = await createMirror(host, ctx.sessionID, plan.title, running);
    } catch (error) {
      await made.undo();
      throw error;
    }
    Object.assign(draft, { status: "running", sessionID: child, remote: made.remote, worktree: made.worktree, remoteWait: undefined });
  } finally {
    host.queue.release(draft);
  }
  const task: BackgroundTask = draft;
  host.beginLaunch(task);
  await host.commitLaunch(task);
  ctx.metadata({ title: plan.title, metadata: { sessionId: task.sessionID, taskId: task.id } });
  return {
    title: plan.title,
    output: MESSAGES.launched(task),
    metadata: { sessionId: task.sessionID, taskId: task.id, forked: task.isForked, remote: name },
  };
}

/** The task waits here for a slot of its remote: its mirror child made, registered and saved as `queued` (its fork's context kept in its plan). */
async function queueHere(host: RemoteHost, draft: TaskFields, plan: ChildPlan, input: LaunchInput, ctx: ToolContext, wait: string): Promise<ToolReply> {
  Object.assign(draft, { queuedPrompt: input.prompt, queuedBecause: wait });
  // (it claimed no slot: nothing to release)
  draft.sessionID = await createMirror(host, ctx.sessionID, plan.title, draft);
  const task: BackgroundTask = draft;
  host.beginLaunch(task, plan);
  await host.commitLaunch(task);
  ctx.metadata({ title: plan.title, metadata: { sessionId: task.sessionID, taskId: task.id } });
  return {
    title: plan.title,
    output: MESSAGES.launched(task),
    metadata: { sessionId: task.sessionID, taskId: task.id, forked: task.isForked, queued: true, remote: input.remote! },
  };
}

/**
 * A task that waited here for a slot of its remote, launched there now that its turn came
 * (launch/queued.ts): as a launch that had a slot at once, from the snapshot made at its launch.
 * Undefined once it runs there (its `remote` and `worktree` written); else why not (nothing left there).
 */
export async function startQueuedRemote(host: RemoteHost, parts: RemoteLaunchParts, entry: TaskEntry): Promise<string | undefined> {
  const { task } = entry;
  const plan = entry.runtime.childPlan;
  // (a plain task's prompt is in its record; a fork's context lived in this process, not in the task file)
  if (task.isForked && !plan?.forkText) return REMOTE.forkLost;
  try {
    const made = await makeThere(host, parts, task, { prompt: task.queuedPrompt ?? "", forkText: plan?.forkText });
    await host.dispatch(entry, { kind: "remote-started", remote: made.remote, worktree: made.worktree });
    if (entry.task.remote) return undefined;
    // (cancelled while it was being made there: undone there)
    await made.undo();
    return `it ended (${entry.task.status}) while it was being launched there`;
  } catch (error) {
    return (error as Error).message;
  }
}

/**
 * The task made there (steps 5 to 7 above): its snapshot pushed, its relay session made, the launch
 * asked of the remote's plugin, its containment checked. Where it runs there and its worktree here, and
 * how to undo it; a failure undoes what it made, in reverse, and throws the reason.
 */
async function makeThere(
  host: RemoteHost,
  parts: RemoteLaunchParts,
  task: Pick<BackgroundTask, "id" | "description" | "agent" | "model" | "variant" | "fork" | "remoteWait">,
  sent: { prompt: string; forkText?: string },
): Promise<{ remote: RemoteInfo; worktree: WorktreeInfo; undo: () => Promise<void> }> {
  const wait = task.remoteWait!;
  const { name } = wait;
  const { links } = parts;
  const { options, project, transport } = reach(host, links, name);
  const { id } = task;
  const undo: (() => Promise<unknown>)[] = [];
  const undoAll = async () => {
    for (const step of undo.reverse())
      await step().catch((error) => log(host.client, "warn", `offshoot: undoing a remote launch: ${(error as Error).message}`));
  };
  try {
    await pushBase(wait.repo, options.gitRemote, id, wait.base);
    undo.push(() => deleteRemoteRefs(wait.repo, options.gitRemote, id));
    const relay = await transport.createSession(options.directory, {
      title: `offshoot relay: ${task.description}`.slice(0, 200),
      metadata: { [RELAY_KEY]: { v: 1 } },
    });
    undo.push(() => transport.deleteSession(relay.id, options.directory));
    const answer = await ask(transport, relay.id, options.directory, {
      kind: "launch",
      id: requestId("launch"),
      taskId: id,
      description: task.description,
      prompt: sent.prompt,
      agent: task.agent,
      ...(task.model ? { model: modelName(task.model, task.variant)! } : {}),
      ...(sent.forkText && task.fork?.kind === "text" ? { fork: { text: sent.forkText, summary: task.fork as RelayForkSummary } } : {}),
      base: wait.base,
      parentHead: wait.parentHead,
      gitRemote: options.gitRemote,
      requireSandbox: !options.allowUnsandboxed,
      ...(wait.network?.length ? { network: [...wait.network] } : {}),
    });
    if (answer.error || !answer.task) throw new Error(REMOTE.refusedLaunch(name, answer.error ?? "it did not name the task it made"));
    const made = answer.task;
    // (made there: a failure from here on cancels and discards it there before its relay goes)
    undo.push(async () => {
      await ask(transport, relay.id, options.directory, { kind: "cancel", id: requestId("cancel"), taskId: id, reason: "its launch was undone" });
      await ask(transport, relay.id, options.directory, { kind: "discard", id: requestId("discard"), taskId: id });
    });
    const path = join(worktreesHome(), project.id, id);
    const worktree: WorktreeInfo = {
      repo: wait.repo,
      path,
      directory: join(path, relative(wait.repo, wait.projectDir)),
      branch: branchOf(id),
      base: wait.base,
      parentHead: wait.parentHead,
      linked: [],
      containment: made.containment === "bwrap" || made.containment === "sandbox-exec" ? made.containment : "text",
    };
    // (its plugin there refuses it when asked to: one that made it anyway is undone)
    if (worktree.containment === "text" && !options.allowUnsandboxed) throw new Error(REMOTE.notSandboxed(name));
    links.reached(name);
    return {
      remote: { name, relay: relay.id, session: made.session, root: options.directory, directory: made.directory, run: made.run },
      worktree,
      undo: undoAll,
    };
  } catch (error) {
    if (error instanceof RemoteCallError && error.kind === "unreachable") links.unreachable(name, error.message);
    await undoAll();
    throw error;
  }
}

/** The remote's options, this project and the transport to it; throws the reason when one is missing. */
function reach(host: RemoteHost, links: RemoteLinks, name: string) {
  const options = links.optionsOf(name);
  if (!options) throw new Error(REMOTE.unknownRemote(name, Object.keys(host.options.remotes)));
  const project = host.project;
  if (!project) throw new Error(REMOTE.noProject);
  const transport = links.transport(name);
  if ("error" in transport) throw new Error(transport.error);
  return { options, project, transport };
}

/** The mirror child here, with the task's state; its id. */
async function createMirror(host: RemoteHost, parentID: string, title: string, task: BackgroundTask): Promise<string> {
  const child = await call(
    "creating the child session",
    createSession(host.client, { parentID, title, metadata: { offshoot: publishedState(task) } } as { parentID: string; title: string }),
  );
  return child.id;
}
