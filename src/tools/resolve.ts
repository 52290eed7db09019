import { REPLIES } from "./resolve.txt.js";
import { besideUs } from "../coexist/tool-names.js";
import { notOurs } from "../coexist/tool-names.txt.js";
import { resolveTaskId } from "../manager/task/ids.js";
import type { TaskService } from "../manager/task-service.js";
import type { BackgroundTask } from "../task-record.js";

/** Finds one of the calling session's tasks, or says plainly why not (never a guess). */
export function findCallerTask(
  service: Pick<TaskService, "tasksOf" | "droppedTask">,
  sessionID: string,
  query: string,
): { task: BackgroundTask } | { error: string } {
  const tasks = service.tasksOf(sessionID);
  const found = resolveTaskId(query, tasks);
  if (found.kind === "found") return { task: found.task };
  if (found.kind === "ambiguous") return { error: REPLIES.ambiguousTask(query, found.candidates) };
  const dropped = service.droppedTask(query, sessionID);
  if (dropped) return { error: REPLIES.pastHistory(dropped.id, dropped.session) };
  // another plugin's background tasks have ids like ours (oh-my-opencode's bg_…): say whose it could be
  const beside = besideUs();
  return { error: beside ? `${REPLIES.unknownTask(query, tasks)}\n${notOurs(query, beside.plugins, beside.taken)}` : REPLIES.unknownTask(query, tasks) };
}
