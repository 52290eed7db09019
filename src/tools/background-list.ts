import { tool } from "../host/tool.js";
import { taskDuration, taskModel } from "../prompts.js";
import { DESCRIPTION, REPLIES } from "./background-list.txt.js";
import type { QuestionWait } from "../task-state.js";
import { NO_USAGE, addUsage } from "../manager/task/usage.js";
import { formatReceipt, formatUsage } from "../format.js";
import { oneLine } from "../text.js";
import type { TaskService } from "../manager/task-service.js";
import { type BackgroundTask, TASK_STATUSES, isMoving, meaningOf } from "../task-record.js";
import { forkLine } from "../native/describe.js";
import { BACKGROUND_LIST_ARGS, parseToolArgs } from "./args.js";
import { worktreeLines } from "../worktree/describe.js";

/** Each row's cells, then one indented line for what the task waits for or why it failed. */
function rowOf(
  task: BackgroundTask,
  now: number,
  waitingFor: string | undefined,
  question?: QuestionWait,
  siblings: readonly BackgroundTask[] = [],
  remoteNote?: string,
): { cells: string[]; detail?: string; fork?: string; receipt?: string; worktree: string[] } {
  const calls = `${task.toolCalls} call${task.toolCalls === 1 ? "" : "s"}${task.lastTool && isMoving(task.status) ? `, last ${oneLine(task.lastTool, 40).text}` : ""}`;
  const kind = [
    oneLine(task.agent, 40).text,
    task.isForked ? "forked" : "",
    task.run > 1 ? `run ${task.run}` : "",
    task.steers ? `steered ${task.steers}×` : "",
  ]
    .filter(Boolean)
    .join(", ");
  const detail = question
    ? REPLIES.listDetail(task, question)
    : waitingFor
      ? `⚠ waiting for permission: ${waitingFor} (answer it in the child session ${task.sessionID})`
      : meaningOf(task.status).waitsForPerson
        ? oneLine(task.error ?? task.status, 300).text
        : meaningOf(task.status).queued
          ? `queued: ${task.queuedBecause ?? "waiting for a free slot"}`
          : task.error && !isMoving(task.status)
            ? `${task.status}: ${oneLine(task.error, 300).text}`
            : undefined;
  return {
    cells: [
      task.id,
      waitingFor || question ? `${task.status}, waiting` : task.status,
      taskDuration(task, now),
      calls,
      formatUsage(task.usage) || "-",
      taskModel(task) ?? "-",
      `"${oneLine(task.description, 120).text}" (${kind})`,
    ],
    detail,
    fork: forkLine(task.fork),
    receipt: formatReceipt(task.isForked, task.receipt, !isMoving(task.status)),
    worktree: [
      ...worktreeLines(task.id, task.worktree, isMoving(task.status) ? "active" : "ended", siblings, task.remote),
      ...(remoteNote ? [remoteNote] : []),
    ],
  };
}

/** Plain aligned text that reads well in a terminal and to a model (no markdown table). */
export function formatTaskList(
  tasks: BackgroundTask[],
  now: number,
  waitingFor: (task: BackgroundTask) => string | undefined = () => undefined,
  questionOf: (task: BackgroundTask) => QuestionWait | undefined = () => undefined,
  /** all the parent's tasks (the overlap lines compare with them, listed or not) */
  siblings: readonly BackgroundTask[] = tasks,
  budgetLine?: string,
  /** a remote task whose remote does not answer now: the line that says so */
  remoteNote: (task: BackgroundTask) => string | undefined = () => undefined,
): string {
  const rows = tasks.map((t) => rowOf(t, now, waitingFor(t), questionOf(t), siblings, remoteNote(t)));
  const header = ["id", "status", "time", "tool calls", "usage", "model", "description"];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r.cells[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join("  ");
  const out = [line(header)];
  for (const r of rows) {
    out.push(line(r.cells));
    if (r.detail) out.push(`${" ".repeat(widths[0]! + 2)}${r.detail}`);
    // which fork a forked child got: "native: shares your prompt cache" or "context copy: …"
    if (r.fork) out.push(`${" ".repeat(widths[0]! + 2)}fork: ${r.fork}`);
    // the fork receipt: what the child's first request read from the cache
    if (r.receipt) out.push(`${" ".repeat(widths[0]! + 2)}${r.receipt}`);
    for (const line of r.worktree) out.push(`${" ".repeat(widths[0]! + 2)}${line}`);
  }
  const counts = TASK_STATUSES.map((status) => [status, tasks.filter((t) => t.status === status).length] as const).filter(([, n]) => n > 0);
  out.push("", `${tasks.length} task${tasks.length === 1 ? "" : "s"}: ${counts.map(([s, n]) => `${n} ${s}`).join(" · ")}`);
  const total = tasks.reduce((sum, t) => (t.usage ? addUsage(sum, t.usage) : sum), NO_USAGE);
  if (formatUsage(total)) out.push(`usage, all listed tasks: ${formatUsage(total)}`);
  if (budgetLine) out.push(budgetLine);
  return out.join("\n");
}

export function createBackgroundListTool(service: TaskService) {
  return tool({
    description: DESCRIPTION,
    args: BACKGROUND_LIST_ARGS,
    async execute(raw, ctx) {
      const parsed = parseToolArgs("background_list", BACKGROUND_LIST_ARGS, raw);
      if (!parsed.ok) return parsed.error;
      const args = parsed.value;
      await service.ready();
      const all = service.tasksOf(ctx.sessionID);
      const wanted = args.status;
      const tasks = wanted ? all.filter((t) => t.status === wanted || meaningOf(t.status).listedAs === wanted) : all;
      if (tasks.length === 0) return all.length === 0 ? "This session has no background tasks." : `No ${args.status} tasks (this session has ${all.length}).`;
      return formatTaskList(
        tasks,
        service.now(),
        (t) => service.waitingFor(t),
        (t) => service.questionOf(t),
        all,
        service.budgetLine(ctx.sessionID),
        (t) => service.remoteNote(t),
      );
    },
  });
}
