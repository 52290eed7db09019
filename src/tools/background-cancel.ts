import { tool } from "../host/tool.js";
import { MESSAGES, TOOL_DESCRIPTIONS } from "../prompts.js";
import { cancelTasks } from "../manager/cancel.js";
import type { TaskManager } from "../manager/task-manager.js";
import { isActive } from "../manager/types.js";
import { BACKGROUND_CANCEL_ARGS, parseToolArgs, taskIdArg } from "./args.js";
import { findCallerTask } from "./resolve.js";
import { discardTask } from "../worktree/discard.js";

export function createBackgroundCancelTool(manager: TaskManager) {
  return tool({
    description: TOOL_DESCRIPTIONS.background_cancel,
    args: BACKGROUND_CANCEL_ARGS,
    async execute(raw, ctx) {
      const parsed = parseToolArgs("background_cancel", BACKGROUND_CANCEL_ARGS, raw);
      if (!parsed.ok) return parsed.error;
      const args = parsed.value;
      await manager.ready();
      let targets;
      const taskId = args.task_id === undefined ? "" : taskIdArg(args.task_id);
      if (taskId) {
        const found = findCallerTask(manager, ctx.sessionID, taskId);
        if ("error" in found) return found.error;
        if (args.discard) return discardTask(manager, found.task);
        if (!isActive(found.task.status)) return `Task ${found.task.id} already ended (${found.task.status}); nothing to cancel.`;
        targets = [found.task];
      } else if (args.discard) {
        return "Error: discard needs task_id: the worktree task whose worktree and branch to remove.";
      } else if (args.all) {
        targets = manager.tasksOf(ctx.sessionID).filter((t) => isActive(t.status));
        if (targets.length === 0) return "No running background tasks in this session; nothing to cancel.";
      } else {
        return MESSAGES.cancelNeedsTarget;
      }
      const { cancelled, failed } = await cancelTasks(manager, targets);
      const lines = cancelled.map((t) => `Cancelled ${t.id} "${t.description}".`);
      if (failed.length) lines.push(`Could not cancel:\n${failed.map((f) => `- ${f}`).join("\n")}`);
      return lines.join("\n") || "Nothing was cancelled.";
    },
  });
}
