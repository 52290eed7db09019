// Start-up: the tasks a stopped OpenCode process left running. Their agent loops died with that
// process, so each ends now (completed if its answer was already there, interrupted otherwise) with
// the time it really ran. All of them end first; then their notices go out (noReply) and NO parent
// is woken: a restart alone never starts a model turn. The busy snapshot read here is the oldest word
// on the parents by the time the notices go out: a user's turn that started meanwhile wins (parent/busy.ts).

import { edge } from "./task/step.js";
import type { Dispatch } from "./task/runner.js";
import { type Client, abortQuietly, call, log } from "../host/client.js";
import { listSessions } from "../host/session.js";
import { sessionDirectory } from "../worktree/hub.js";
import type { EndingContext } from "./task/completion.js";
import type { ParentNotices } from "./parent/notices.js";
import type { TaskRegistry } from "./task/registry.js";
import type { OrphanSearch } from "../store/processes.js";
import { type BackgroundTask, TaskRecordSchema, isMoving, isOpen, isWorking } from "../task-record.js";

/** What start-up's recovery takes from the manager (task-manager.ts). */
export interface RecoveryHost extends Dispatch {
  readonly client: Client;
  readonly registry: Pick<TaskRegistry, "entries" | "parents" | "get" | "ofChild" | "add">;
  readonly notices: Pick<ParentNotices, "readBusySessions" | "parentsWithOutstanding" | "input">;
  checkCompletion(task: BackgroundTask, context?: Partial<EndingContext>, options?: { wake?: boolean; deliver?: boolean }): Promise<void>;
}

/** At most this many sessions are read when looking for orphans since a dead process started. */
const ORPHAN_SEARCH_LIMIT = 10_000;

export async function recoverAfterRestart(manager: RecoveryHost): Promise<void> {
  const entries = manager.registry.entries();
  // Started from the queue but stopped before its child existed: it never ran, and keeps its prompt and place.
  for (const entry of entries) {
    if (isWorking(entry.task.status) && !entry.task.sessionID)
      void manager.dispatch(entry, edge("requeue", { queuedBecause: "OpenCode stopped before it started" }));
  }
  // (a remote task's loop runs there, not in the stopped process: it is followed again, remote/)
  const stopped = entries.filter((e) => isWorking(e.task.status) && !e.task.remote);
  const parents = manager.registry.parents();
  // (a remote task still running there ends later, in this process: its parent's busy state is read now, so its notice goes at once then)
  const remoteOpen = entries.some((e) => e.task.remote !== undefined && isOpen(e.task.status));
  if (stopped.length === 0 && !remoteOpen && manager.notices.parentsWithOutstanding().length === 0) return;
  const snapshot = await manager.notices.readBusySessions();
  await Promise.all(
    stopped.map(async ({ task }) => {
      // A child still busy belongs to a loop that is alive after all: its events will end it.
      if (snapshot.busy.has(task.sessionID)) return;
      await manager.checkCompletion(task, { processStopped: true }, { wake: false, deliver: false });
    }),
  );
  // What ended here is reported by its notice; it is not news for a later wake. (Each end saved
  // itself; these are written at once and their saves, asked for in this same turn, are one write.)
  await Promise.all(stopped.filter((e) => !isMoving(e.task.status)).map((entry) => manager.dispatch(entry, { kind: "reported" })));
  await Promise.all(parents.map((parent) => manager.notices.input(parent, { kind: "snapshot", snapshot })));
}

/**
 * A process killed in the middle of a launch leaves a child session that carries our metadata but
 * no task record (the record is saved when the launch commits). Such children of dead processes
 * are adopted as `interrupted` tasks: the parent gets a notice and can resume or ignore them, and
 * no session is left untracked.
 */
export async function adoptOrphans(
  manager: RecoveryHost,
  known: { has(sessionID: string): boolean },
  isAlive: (pid: number) => boolean,
  search: OrphanSearch = { kind: "unknown" },
): Promise<void> {
  // Only processes that died can have left orphans, and only among the sessions updated since they started (store/processes.ts).
  if (search.kind === "none") return;
  const query = search.kind === "since" ? { start: search.since, limit: ORPHAN_SEARCH_LIMIT } : undefined;
  const sessions = ((await call("listing sessions", listSessions(manager.client, query))) ?? []) as { id: string; parentID?: string; metadata?: unknown }[];
  for (const session of sessions) {
    if (!session.parentID || known.has(session.id) || manager.registry.ofChild(session.id)) continue;
    const state = orphanState(session.metadata);
    if (!state || state.parentSessionID !== session.parentID) continue;
    // The child of a queued task, created after its launch, whose record was not saved with it yet.
    const waiting = manager.registry.get(state.taskId);
    if (waiting && !waiting.task.sessionID && waiting.task.parentSessionID === session.parentID) {
      void manager.dispatch(waiting, { kind: "child-created", sessionID: session.id });
      continue;
    }
    if (waiting || isAlive(state.ownerPid)) continue;
    // A new record, created `interrupted` (not transitioned: there was no record to change).
    const task = TaskRecordSchema.safeParse({
      id: state.taskId,
      sessionID: session.id,
      parentSessionID: session.parentID,
      callID: `adopted_${state.taskId}`,
      description: state.description,
      agent: state.agent,
      isForked: state.forked,
      ownerPid: process.pid,
      status: "interrupted",
      run: 1,
      notifiedRun: 0,
      reportedRun: 1,
      createdAt: state.startedAt,
      startedAt: state.startedAt,
      completedAt: state.startedAt,
      error: "interrupted: OpenCode stopped while the task was being launched; resume it to run it",
      toolCalls: 0,
    });
    if (!task.success) continue;
    // (claimed by this process: the step saves the new record)
    void manager.dispatch(manager.registry.add(task.data, { fromFile: true }), { kind: "claimed", pid: process.pid });
    await abortQuietly(manager.client, session.id, sessionDirectory(session.id));
    log(manager.client, "warn", `adopted task ${task.data.id}: its launch was cut off by a stopped OpenCode process`);
  }
}

type OrphanState = { taskId: string; parentSessionID: string; description: string; agent: string; forked: boolean; ownerPid: number; startedAt: number };

function orphanState(metadata: unknown): OrphanState | undefined {
  const state = (metadata as { offshoot?: Partial<OrphanState> & { v?: number } } | undefined)?.offshoot;
  if (!state || state.v !== 1) return undefined;
  const ok =
    typeof state.taskId === "string" &&
    typeof state.parentSessionID === "string" &&
    typeof state.description === "string" &&
    typeof state.agent === "string" &&
    typeof state.ownerPid === "number" &&
    typeof state.startedAt === "number";
  return ok ? (state as OrphanState) : undefined;
}
