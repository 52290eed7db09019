// Requests from the TUI half (it cannot call this half, and the plugin opens no listener): the TUI
// writes `metadata.offshootRequest` into a task's child session (task-state.ts), and the
// `session.updated` event brings it here (event-decide.ts reads it), from the project's instance or,
// for a worktree child, through the worktree hub. Each request id is acted on once; the answer is
// published with the task's state, which also drops the request from the metadata. What each kind
// does is one row of ACTIONS.

import type { Outcome, RequestKind, TaskRequest } from "../../task-state.js";
import { discardTask } from "../../worktree/discard.js";
import { log } from "../../host/client.js";
import { TASK_REQUEST_CONFIRM_MS } from "../../constants.js";
import { cancelTasks, discardHost } from "./cancel.js";
import type { TaskEntry } from "../task/registry.js";
import { CONTINUE_PROMPT } from "../spend/session-budget.js";
import { takeTask } from "./take.js";
import { isOpen, meaningOf } from "../../task-record.js";
import type { RequestsHost } from "./host.js";

/** What each kind of request does (a new kind is one more row). */
const ACTIONS: { readonly [K in RequestKind]: (host: RequestsHost, entry: TaskEntry, request?: TaskRequest) => Promise<Outcome> } = {
  /** an ended worktree task's worktree and branch removed */
  discard: async (host, entry) => {
    const { task } = entry;
    if (isOpen(task.status)) return { error: `task ${task.id} is still ${task.status}: cancel it first, then discard it` };
    return task.remote ? host.remote.discard(entry) : discardTask(discardHost(host), task);
  },
  /** an ended worktree task's changes applied to the parent's working tree (take.ts), by a person: files that run on their own too (the TUI showed them) */
  take: async (host, { task }) => {
    if (isOpen(task.status)) return { error: `task ${task.id} is still ${task.status}: wait for it to end (or cancel it), then take its changes` };
    return takeTask(host, task, { person: true });
  },
  /** a paused or interrupted task goes on in place (session-budget.ts continueTask) */
  continue: async (host, entry) => {
    // (an interrupted remote task goes on there as a new run, in its worktree there; a paused one goes on
    // in place, as here: session-budget.ts, and its turn sends it there: launch/queued.ts)
    if (entry.task.remote && meaningOf(entry.task.status).followUp !== "continue") {
      if (!meaningOf(entry.task.status).continuable)
        return { error: `task ${entry.task.id} is ${entry.task.status}: only a paused or interrupted task is continued` };
      const reply = await host.remote.resume(entry, { prompt: CONTINUE_PROMPT, agent: entry.task.agent, callID: `tui_continue_${Date.now().toString(36)}` });
      return reply.output.startsWith("Error")
        ? { error: reply.output.replace(/^Error: /, "") }
        : { ok: `task ${entry.task.id} continues on remote "${entry.task.remote.name}"` };
    }
    const outcome = await host.budget.continueTask(entry, CONTINUE_PROMPT);
    return "error" in outcome ? outcome : { ok: `task ${entry.task.id} continues in place` };
  },
  /** a person raised the budget of the task's parent session by one more budget */
  "raise-budget": (host, entry) => host.budget.raise(entry.task.parentSessionID),
  /** a person cancelled a task that has not ended (running, queued, or paused: an abort alone cannot end a queued or paused one) */
  cancel: async (host, { task }) => {
    if (!isOpen(task.status)) return { error: `task ${task.id} has already ended (${task.status})` };
    const { failed, notes } = await cancelTasks(host, [task], "cancelled from /tasks");
    return failed.length ? { error: `could not cancel it: ${failed.join("; ")}` } : { ok: notes[0] ?? `task ${task.id} cancelled` };
  },
  /** a person's reply to the permission a remote task's child waits on there (the TUI cannot reach that server: it asks here) */
  permission: async (host, entry, request) => {
    const { task } = entry;
    if (!task.remote) return { error: `task ${task.id} runs here: answer its permission in its child session` };
    if (!request?.requestID || !request.reply) return { error: "the request names no permission and no reply" };
    return host.remote.replyPermission(entry, request.requestID, request.reply);
  },
};

/** Request ids already acted on, per manager (a few per user action; never a per-event cost). */
const handled = new WeakMap<object, Set<string>>();

/** A request in a child's metadata (`parent`: the parent its metadata names), acted on once. */
export async function onRequest(manager: RequestsHost, sessionID: string, request: TaskRequest, parent: string | undefined): Promise<void> {
  let seen = handled.get(manager);
  if (!seen) handled.set(manager, (seen = new Set()));
  if (seen.has(request.id)) return;
  seen.add(request.id);

  let entry = manager.registry.ofChild(sessionID);
  if (!entry && parent !== undefined) {
    manager.tasksOf(parent); // a settled task is read from the history on demand
    entry = manager.registry.ofChild(sessionID);
  }
  if (!entry) {
    log(manager.client, "warn", `offshoot: ${request.kind} request ${request.id} for session ${sessionID} ignored: no task of this process runs in it`);
    return;
  }
  if (request.child !== undefined) {
    // written into a parent session: only about that parent's own task, and only while the TUI still waits for its answer
    // (the TUI removes it once answered; one it could not remove must not act again at a later update of the parent)
    if (entry.task.parentSessionID !== parent)
      return log(manager.client, "warn", `offshoot: ${request.kind} request ${request.id} ignored: ${sessionID} is not a child of ${parent}`);
    if (Date.now() - (request.at ?? 0) > TASK_REQUEST_CONFIRM_MS) return;
  }
  const action = Object.hasOwn(ACTIONS, request.kind) ? ACTIONS[request.kind] : undefined;
  const outcome: Outcome = action
    ? await action(manager, entry, request).catch((error: Error) => ({ error: error.message }))
    : { error: `this server does not know the request "${String(request.kind)}"` };
  const failed = "error" in outcome;
  log(manager.client, failed ? "warn" : "info", `offshoot: ${request.kind} request ${request.id}${failed ? ` refused: ${outcome.error}` : `: ${outcome.ok}`}`);
  // (published with the task's state, which also drops the request from the metadata)
  await manager.dispatch(entry, {
    kind: "request-answered",
    answer: failed ? { id: request.id, error: outcome.error } : { id: request.id, message: outcome.ok.split("\n")[0]! },
  });
}
