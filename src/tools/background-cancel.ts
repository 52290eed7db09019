import { tool } from "@opencode-ai/plugin";
import { ARG_DESCRIPTIONS, MESSAGES, TOOL_DESCRIPTIONS } from "../prompts.js";
import { cancelTasks } from "../manager/task-lifecycle.js";
import type { TaskManager } from "../manager/task-manager.js";
import { isActive } from "../manager/types.js";
import { findCallerTask } from "./resolve.js";

export function createBackgroundCancelTool(manager: TaskManager) {
  return tool({
    description: TOOL_DESCRIPTIONS.background_cancel,
    args: {
      task_id: tool.schema.string().optional().describe(ARG_DESCRIPTIONS.task_id),
      all: tool.schema.boolean().optional().describe(ARG_DESCRIPTIONS.all),
    },
    async execute(args, ctx) {
      await manager.ready();
      let targets;
      if (args.task_id?.trim()) {
        const found = findCallerTask(manager, ctx.sessionID, args.task_id);
        if ("error" in found) return found.error;
        if (!isActive(found.task.status)) return `Task ${found.task.id} already ended (${found.task.status}); nothing to cancel.`;
        targets = [found.task];
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
