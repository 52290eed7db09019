// A worktree task launched on a remote (background_task's `remote`; docs/remote.md). In order, and
// nothing is created on the remote before every check passed:
// 1. the remote is known, its password's variable is set, its limit of tasks has room, this
//    repository has the shared git remote;
// 2. the snapshot of what the parent sees (HEAD plus uncommitted changes: worktree.ts snapshotFor,
//    as a local worktree launch makes it) is made;
// 3. the remote answers as healthy with this password, and its directory is a git repository (GET
//    /vcs: a directory that does not exist would silently make a `global` session there);
// 4. a text fork's context is built here (a native fork cannot share a prompt cache across machines:
//    it becomes a text fork, and the reply says so);
// 5. the snapshot is pushed to the shared git remote (`refs/heads/offshoot/<id>-base`);
// 6. a relay session is made in the remote's clone, and the launch asked of the remote's plugin
//    through it (remote-protocol.ts): it fetches the commit, makes the worktree from it, sandboxes and
//    prompts the child, and answers with its child session and containment;
// 7. a containment weaker than asked for is refused (the task cancelled and discarded there);
// 8. a mirror child session is made here (the sidebar, /tasks and the subagent view list it), and the
//    task is saved and followed (follow.ts).
// Any failure undoes what was made, in reverse, and the launch fails with the reason.

import { join, relative } from "node:path";
import { type Client, call, log } from "../../host/client.js";
import { RemoteCallError } from "../../host/remote.js";
import { createSession, deleteSession } from "../../host/session.js";
import { callIdOf, modelFromToolContext } from "../../host/tool-context.js";
import type { ToolContext } from "../../host/types.js";
import { MESSAGES, childTitle } from "../../prompts.js";
import { RELAY_KEY, type RelayForkSummary } from "../../remote-protocol.js";
import type { BackgroundTask, TaskFields } from "../../task-record.js";
import { isOpen } from "../../task-record.js";
import { deleteRemoteRefs, hasGitRemote, pushBase } from "../../worktree/remote.js";
import { branchOf, snapshotFor, worktreesHome } from "../../worktree/worktree.js";
import { type ChildPlan, type LaunchInput, type ToolReply, planInheritance } from "../launch/launcher.js";
import { modelName } from "../launch/model-choice.js";
import { newTaskId } from "../task/ids.js";
import { publishedState } from "../task/publish.js";
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

/** Launches the task on its remote; the reply, or a thrown error with the reason (nothing left behind). */
export async function launchRemote(host: RemoteHost, parts: RemoteLaunchParts, input: LaunchInput, ctx: ToolContext): Promise<ToolReply> {
  const name = input.remote!;
  const { links } = parts;
  const options = links.optionsOf(name);
  if (!options) throw new Error(REMOTE.unknownRemote(name, Object.keys(host.options.remotes)));
  const running = host.registry.entries().filter((e) => e.task.remote?.name === name && isOpen(e.task.status)).length;
  if (running >= options.concurrency) throw new Error(REMOTE.atLimit(name, running, options.concurrency));
  const project = host.project;
  if (!project) throw new Error(REMOTE.noProject);
  const transport = links.transport(name);
  if ("error" in transport) throw new Error(transport.error);

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
  const path = join(worktreesHome(), project.id, id);
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
    status: "running",
    run: 1,
    notifiedRun: 0,
    reportedRun: 0,
    createdAt: now,
    startedAt: now,
    toolCalls: 0,
  };
  // a fork's context is built here and travels as text (a native fork becomes a text fork)
  const plan: ChildPlan = { title: childTitle(input.description, input.fork) };
  // (a fork on the caller's own agent and model would be native here)
  const fallback = input.fork && (input.native || (input.agent === ctx.agent && !input.model)) ? REMOTE.nativeBecomesText : input.fallback;
  // (the reason is kept in the fork's summary: the reply, the list and the notice say it)
  await planInheritance(host, { ...input, native: undefined, fallback }, ctx, draft, plan);

  const undo: (() => Promise<unknown>)[] = [];
  const undoAll = async () => {
    for (const step of undo.reverse())
      await step().catch((error) => log(host.client, "warn", `offshoot: undoing a remote launch: ${(error as Error).message}`));
  };
  try {
    await pushBase(snapshot.repo, options.gitRemote, id, snapshot.base);
    undo.push(() => deleteRemoteRefs(snapshot.repo, options.gitRemote, id));
    const relay = await transport.createSession(options.directory, {
      title: `offshoot relay: ${input.description}`.slice(0, 200),
      metadata: { [RELAY_KEY]: { v: 1 } },
    });
    undo.push(() => transport.deleteSession(relay.id, options.directory));
    const answer = await ask(transport, relay.id, options.directory, {
      kind: "launch",
      id: requestId("launch"),
      taskId: id,
      description: input.description,
      prompt: input.prompt,
      agent: input.agent,
      ...(input.model ? { model: modelName(input.model, input.variant)! } : {}),
      ...(plan.forkText && draft.fork?.kind === "text" ? { fork: { text: plan.forkText, summary: draft.fork as RelayForkSummary } } : {}),
      base: snapshot.base,
      parentHead: snapshot.parentHead,
      gitRemote: options.gitRemote,
      requireSandbox: !options.allowUnsandboxed,
      ...(input.network?.length ? { network: [...input.network] } : {}),
    });
    if (answer.error || !answer.task) throw new Error(REMOTE.refusedLaunch(name, answer.error ?? "it did not name the task it made"));
    const made = answer.task;
    // (made there: a failure from here on cancels and discards it there before its relay goes)
    undo.push(async () => {
      await ask(transport, relay.id, options.directory, { kind: "cancel", id: requestId("cancel"), taskId: id, reason: "its launch was undone" });
      await ask(transport, relay.id, options.directory, { kind: "discard", id: requestId("discard"), taskId: id });
    });
    draft.worktree = {
      repo: snapshot.repo,
      path,
      directory: join(path, relative(snapshot.repo, snapshot.projectDir)),
      branch: branchOf(id),
      base: snapshot.base,
      parentHead: snapshot.parentHead,
      linked: [],
      containment: made.containment === "bwrap" || made.containment === "sandbox-exec" ? made.containment : "text",
    };
    draft.remote = { name, relay: relay.id, session: made.session, root: options.directory, directory: made.directory, run: made.run };
    // (its plugin there refuses it when asked to: one that made it anyway is undone)
    if (draft.worktree.containment === "text" && !options.allowUnsandboxed) throw new Error(REMOTE.notSandboxed(name));
    // the mirror child here: what the sidebar, /tasks and the subagent view list; its state is the task's
    const child = await call(
      "creating the child session",
      createSession(host.client, { parentID: ctx.sessionID, title: plan.title, metadata: { offshoot: publishedState(draft) } } as {
        parentID: string;
        title: string;
      }),
    );
    undo.push(() => removeMirror(host.client, child.id));
    draft.sessionID = child.id;
  } catch (error) {
    await undoAll();
    throw error;
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

async function removeMirror(client: Client, sessionID: string): Promise<void> {
  await call("deleting the child session", deleteSession(client, sessionID));
}
