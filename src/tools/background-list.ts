import { tool } from "@opencode-ai/plugin";
import { TOOL_DESCRIPTIONS, taskDuration } from "../prompts.js";
import type { TaskManager } from "../manager/task-manager.js";
import { type BackgroundTask, isActive } from "../manager/types.js";
import { forkLine } from "../native/describe.js";
import { BACKGROUND_LIST_ARGS, parseToolArgs } from "./args.js";

function cell(text: string): string {
  return text.replace(/\|/g, "\\|").replace(/\s+/g, " ");
}

function idCell(task: BackgroundTask): string {
  const marks = [task.isForked ? "(forked)" : "", task.run > 1 ? "(resumed)" : ""].filter(Boolean);
  return [task.id, ...marks].join(" ");
}

export function formatTaskTable(tasks: BackgroundTask[], now: number): string {
  const rows = tasks.map(
    (t) => `| ${idCell(t)} | ${cell(t.description)} | ${cell(t.agent)} | ${t.status} | ${taskDuration(t, now)} | ${t.toolCalls} |`,
  );
  const count = (pred: (t: BackgroundTask) => boolean) => tasks.filter(pred).length;
  const totals = `Total: ${tasks.length} · running ${count((t) => isActive(t.status))} · completed ${count((t) => t.status === "completed")} · error ${count((t) => t.status === "error")} · cancelled ${count((t) => t.status === "cancelled")}`;
  // Which fork each forked child got, one line each (the table stays narrow).
  const forks = tasks.flatMap((t) => {
    const line = forkLine(t.fork);
    return line ? [`- ${t.id}: ${line}`] : [];
  });
  return [
    "| id | description | agent | status | duration | tool calls |",
    "|---|---|---|---|---|---|",
    ...rows,
    "",
    totals,
    ...(forks.length ? ["Forks:", ...forks] : []),
  ].join("\n");
}

export function createBackgroundListTool(manager: TaskManager) {
  return tool({
    description: TOOL_DESCRIPTIONS.background_list,
    args: BACKGROUND_LIST_ARGS,
    async execute(raw, ctx) {
      const parsed = parseToolArgs("background_list", BACKGROUND_LIST_ARGS, raw);
      if (!parsed.ok) return parsed.error;
      const args = parsed.value;
      await manager.ready();
      const all = manager.tasksOf(ctx.sessionID);
      const tasks = args.status === "running" ? all.filter((t) => isActive(t.status)) : args.status ? all.filter((t) => t.status === args.status) : all;
      if (tasks.length === 0) return all.length === 0 ? "This session has no background tasks." : `No ${args.status} tasks (this session has ${all.length}).`;
      return formatTaskTable(tasks, manager.now());
    },
  });
}
