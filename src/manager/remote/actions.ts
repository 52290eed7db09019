// What agents and people ask of a task that runs on a remote, sent there: a cancel (kept and sent
// later while the remote cannot be reached: the run ends here only once the remote says so), a
// message into it (refused while the remote cannot be reached, with the reason), a new run, an answer
// to its child's question or permission (answered in the child's own instance there), and, once its
// work was taken or discarded here, the removal of everything it left there and on the shared git
// remote: its worktree and branch there, its refs on the shared remote, its relay and child sessions.

import { log } from "../../host/client.js";
import { RemoteCallError, type RemoteTransport } from "../../host/remote.js";
import { MESSAGES } from "../../prompts.js";
import { type BackgroundTask, type RemoteInfo, isOpen } from "../../task-record.js";
import type { Outcome } from "../../task-state.js";
import { DISCARD } from "../../worktree/discard.txt.js";
import { deleteRemoteRefs } from "../../worktree/remote.js";
import { removeWorktree } from "../../worktree/worktree.js";
import type { ToolReply } from "../launch/launcher.js";
import type { TaskEntry } from "../task/registry.js";
import type { RemoteAsk } from "./follow.js";
import type { RemoteHost } from "./host.js";
import type { RemoteLinks } from "./links.js";
import { ask, requestId } from "./relay-client.js";
import { REMOTE } from "./remote.txt.js";
import type { RelayAnswer } from "../../remote-protocol.js";

export class RemoteActions implements RemoteAsk {
  constructor(
    private readonly host: RemoteHost,
    private readonly links: RemoteLinks,
  ) {}

  private transportOf(remote: RemoteInfo): RemoteTransport {
    const transport = this.links.transport(remote.name);
    if ("error" in transport) throw new RemoteCallError("unreachable", transport.error);
    return transport;
  }

  /** The cancel, sent there (the check's: a kept cancel). Throws when there is no answer. */
  async cancel(transport: RemoteTransport, task: BackgroundTask, reason: string): Promise<void> {
    const remote = task.remote!;
    const answer = await ask(transport, remote.relay, remote.root, { kind: "cancel", id: requestId("cancel"), taskId: task.id, reason });
    if (answer.error) log(this.host.client, "warn", `offshoot: remote "${remote.name}" refused the cancel of task ${task.id}: ${answer.error}`);
  }

  /** The pause, sent there (the check's: this process's budget paused the task here). Throws when there is no answer. */
  async pause(transport: RemoteTransport, task: BackgroundTask, reason: string): Promise<void> {
    const remote = task.remote!;
    const answer = await ask(transport, remote.relay, remote.root, { kind: "pause", id: requestId("pause"), taskId: task.id, reason });
    if (answer.error) log(this.host.client, "warn", `offshoot: remote "${remote.name}" refused the pause of task ${task.id}: ${answer.error}`);
  }

  /**
   * A paused task's turn to go on (a person raised the budget and continued it: launch/queued.ts):
   * it continues there in place, with `prompt`. Undefined when it does; else why not (it stays paused).
   */
  async continueThere(entry: TaskEntry, prompt: string): Promise<string | undefined> {
    const { task } = entry;
    const remote = task.remote!;
    try {
      const answer = await ask(this.transportOf(remote), remote.relay, remote.root, { kind: "continue", id: requestId("continue"), taskId: task.id, prompt });
      this.links.reached(remote.name);
      // (a pause never delivered there: it runs on there, and goes on here too)
      if (answer.error && !/, not paused$/.test(answer.error)) return REMOTE.continueRefused(task.id, remote.name, answer.error);
      return undefined;
    } catch (error) {
      if (error instanceof RemoteCallError && error.kind === "unreachable") this.links.unreachable(remote.name, error.message);
      return REMOTE.continueRefused(task.id, remote.name, (error as Error).message);
    }
  }

  /** The branch pushed there again (its push after a run's commit failed). */
  async push(transport: RemoteTransport, task: BackgroundTask): Promise<void> {
    const remote = task.remote!;
    const answer = await ask(transport, remote.relay, remote.root, { kind: "push", id: requestId("push"), taskId: task.id });
    if (answer.error) throw new Error(`remote "${remote.name}" could not push its branch: ${answer.error}`);
  }

  /**
   * A cancel of a remote task (the parent's, a person's, a cap's): sent now, or kept and sent once
   * the remote answers again. The run ends here when the remote says so (its notice then). The reply's words.
   */
  async requestCancel(entry: TaskEntry, reason: string): Promise<string> {
    const remote = entry.task.remote!;
    try {
      await this.cancel(this.transportOf(remote), entry.task, reason);
      this.links.reached(remote.name);
      return REMOTE.cancelSent(remote.name);
    } catch (error) {
      if (!(error instanceof RemoteCallError) || error.kind !== "unreachable") throw error;
      this.links.unreachable(remote.name, error.message);
      await this.host.dispatch(entry, { kind: "remote-seen", remote: { ...remote, cancel: reason } });
      return REMOTE.cancelQueued(remote.name, error.message);
    }
  }

  /** A message into the running task there: stored there, or refused with the reason (never kept for later). */
  async steer(entry: TaskEntry, prompt: string): Promise<ToolReply | string> {
    const { task } = entry;
    const remote = task.remote!;
    let answer;
    try {
      answer = await ask(this.transportOf(remote), remote.relay, remote.root, { kind: "steer", id: requestId("steer"), taskId: task.id, prompt });
    } catch (error) {
      if (error instanceof RemoteCallError && error.kind === "unreachable") this.links.unreachable(remote.name, error.message);
      return MESSAGES.steerNotDelivered(task, REMOTE.steerUnreachable(remote.name, (error as Error).message));
    }
    if (answer.error) return MESSAGES.steerNotDelivered(task, REMOTE.steerRefused(remote.name, answer.error));
    return { title: `Message: ${task.description}`, output: MESSAGES.steered(task), metadata: { sessionId: task.sessionID, taskId: task.id, steered: true } };
  }

  /** A new run of the ended task there (a resume, or a person's Continue of an interrupted one). */
  async resume(entry: TaskEntry, input: { prompt: string; agent: string; callID: string }): Promise<ToolReply> {
    const { task } = entry;
    const remote = task.remote!;
    const refused = (why: string): ToolReply => ({
      title: `Not resumed: ${task.description}`,
      output: REMOTE.resumeRefused(task.id, remote.name, why),
      metadata: { taskId: task.id },
    });
    if (task.worktree?.removed || remote.cleaned)
      return { title: `Not resumed: ${task.description}`, output: MESSAGES.resumeWorktreeGone(task), metadata: { taskId: task.id } };
    let answer;
    try {
      answer = await ask(this.transportOf(remote), remote.relay, remote.root, {
        kind: "resume",
        id: requestId("resume"),
        taskId: task.id,
        prompt: input.prompt,
        agent: input.agent,
      });
    } catch (error) {
      return refused((error as Error).message);
    }
    if (answer.error || !answer.task) return refused(answer.error ?? "it did not say which run it started");
    await this.host.beginResume(task, { callID: input.callID, agent: input.agent, model: task.model });
    await this.host.dispatch(entry, { kind: "remote-seen", remote: { ...remote, run: answer.task.run, directory: answer.task.directory || remote.directory } });
    return { title: `Resumed: ${task.description}`, output: MESSAGES.resumed(task), metadata: { sessionId: task.sessionID, taskId: task.id, resumed: true } };
  }

  /** The answers to the question the child waits on there, sent to its instance there. */
  async answerQuestion(entry: TaskEntry, requestID: string, answers: string[][]): Promise<void> {
    const remote = entry.task.remote!;
    await this.transportOf(remote).replyQuestion(requestID, answers, remote.directory);
    await this.host.dispatch(entry, { kind: "question", question: undefined });
  }

  /** A person's reply to the permission the child waits on there (/tasks), sent to its instance there. */
  async replyPermission(entry: TaskEntry, requestID: string, reply: "once" | "always" | "reject"): Promise<Outcome> {
    const remote = entry.task.remote!;
    if (entry.runtime.permission?.id !== requestID) return { error: `task ${entry.task.id} does not wait on that permission (any more)` };
    try {
      await this.transportOf(remote).replyPermission(requestID, reply, remote.directory);
    } catch (error) {
      return { error: REMOTE.answerUnreachable(remote.name, (error as Error).message) };
    }
    await this.host.dispatch(entry, { kind: "permission", permission: undefined });
    return { ok: `${reply === "reject" ? "rejected" : "allowed"} ${entry.runtime.permission?.permission ?? "the permission"} on remote "${remote.name}"` };
  }

  /**
   * A discard: a task still running there is asked to cancel (discard it once it ended); an ended one
   * loses its branch here and everything it left there. What it did, or why not.
   */
  async discard(entry: TaskEntry): Promise<Outcome> {
    const { task } = entry;
    const remote = task.remote!;
    const info = task.worktree;
    if (!info) return { error: DISCARD.noWorktree(task.id) };
    if (isOpen(task.status)) {
      await this.requestCancel(entry, "discarded by its parent");
      return { error: REMOTE.discardOpen(task.id, remote.name) };
    }
    if (!info.removed) {
      try {
        await removeWorktree({ repo: info.repo, path: info.path, branch: info.branch, sandboxDir: undefined });
      } catch (error) {
        return { error: DISCARD.removeFailed(task.id, { branch: info.branch, path: info.path, freed: true }, (error as Error).message) };
      }
      await this.host.dispatch(entry, { kind: "worktree-removed", why: "discarded" });
    }
    const left = await this.cleanUp(entry);
    const where = { branch: info.branch, path: info.path, freed: true };
    const done = info.removed ? DISCARD.removedAlready(task.id, info.branch, info.removed) : DISCARD.discarded(task.id, where);
    return {
      ok: left
        ? `${done}\n${left}`
        : `${done}\nOn remote "${remote.name}": its worktree, branch and sessions were removed, and its refs on the shared git remote.`,
    };
  }

  /**
   * What an ended task left there goes: its worktree and branch there (its discard), its refs on the
   * shared git remote, its relay session (and its child with it). Undefined once done; else what is
   * left, and why (tried again at every reconcile until done).
   */
  async cleanUp(entry: TaskEntry): Promise<string | undefined> {
    const { task } = entry;
    const remote = task.remote;
    if (!remote || remote.cleaned || isOpen(task.status)) return undefined;
    const options = this.links.optionsOf(remote.name);
    if (!options) return `remote "${remote.name}" is no longer in the options: what the task left there stays`;
    try {
      const transport = this.transportOf(remote);
      const answer: RelayAnswer = await ask(transport, remote.relay, remote.root, { kind: "discard", id: requestId("discard"), taskId: task.id }).catch(
        (error) => {
          if (error instanceof RemoteCallError && error.kind === "gone") return { id: "", ok: "its relay session is gone" };
          throw error;
        },
      );
      if (answer.error && !/already removed|no task/.test(answer.error)) throw new Error(answer.error);
      await deleteRemoteRefs(task.worktree?.repo ?? "", options.gitRemote, task.id);
      await transport.deleteSession(remote.relay, remote.root).catch((error) => {
        if (!(error instanceof RemoteCallError && error.kind === "gone")) throw error;
      });
      this.links.reached(remote.name);
    } catch (error) {
      const why = `what task ${task.id} left on remote "${remote.name}" is not removed yet: ${(error as Error).message}; it is tried again later`;
      log(this.host.client, "warn", `offshoot: ${why}`);
      return why;
    }
    await this.host.dispatch(entry, { kind: "remote-cleaned" });
    return undefined;
  }
}
