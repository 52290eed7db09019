// What the tools answer when a task id does not name one of the caller's tasks (resolve.ts).

import type { BackgroundTask } from "../task-record.js";
import { taskLine } from "../prompts.js";

/** Why a task id names no task of the caller. */
export const REPLIES = {
  unknownTask: (query: string, tasks: BackgroundTask[]) =>
    tasks.length === 0
      ? `Error: no task "${query}": this session has no background tasks.`
      : `Error: no task "${query}" in this session. Its tasks:\n${tasks.map((t) => `- ${taskLine(t)}`).join("\n")}`,
  pastHistory: (id: string, childSession: string) =>
    `Error: task ${id} is past the history limit (plugin options historyDays / historyMax): the plugin no longer keeps it, so it cannot be resumed or read here.${childSession ? ` Its child session ${childSession} is still in OpenCode: open it to see what it did.` : ""}`,
  ambiguousTask: (query: string, candidates: BackgroundTask[]) =>
    `Error: "${query}" matches ${candidates.length} tasks; give more of the id:\n${candidates.map((t) => `- ${taskLine(t)}`).join("\n")}`,
} as const;
