import { REPLIES } from "./resolve.txt.js";
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
  return { error: REPLIES.unknownTask(query, tasks) };
}
