import { tool } from "../host/tool.js";
import { DESCRIPTION, REPLIES } from "./background-cancel.txt.js";
import type { TaskService } from "../manager/task-service.js";
import { isOpen } from "../task-record.js";
import { BACKGROUND_CANCEL_ARGS, parseToolArgs, taskIdArg } from "./args.js";
import { findCallerTask } from "./resolve.js";

export function createBackgroundCancelTool(service: TaskService) {
  return tool({
    description: DESCRIPTION,
    args: BACKGROUND_CANCEL_ARGS,
    async execute(raw, ctx) {
      const parsed = parseToolArgs("background_cancel", BACKGROUND_CANCEL_ARGS, raw);
      if (!parsed.ok) return parsed.error;
      const args = parsed.value;
      await service.ready();
      let targets;
      const taskId = args.task_id === undefined ? "" : taskIdArg(args.task_id);
      if (taskId) {
        const found = findCallerTask(service, ctx.sessionID, taskId);
        if ("error" in found) return found.error;
        if (args.discard) return service.discard(found.task);
        if (!isOpen(found.task.status)) return `Task ${found.task.id} already ended (${found.task.status}); nothing to cancel.`;
        targets = [found.task];
      } else if (args.discard) {
        return "Error: discard needs task_id: the worktree task whose worktree and branch to remove.";
      } else if (args.all) {
        targets = service.tasksOf(ctx.sessionID).filter((t) => isOpen(t.status));
        if (targets.length === 0) return REPLIES.nothingOpen;
      } else {
        return REPLIES.cancelNeedsTarget;
      }
      const was = new Map(targets.map((t) => [t.id, t.status]));
      const { cancelled, failed, notes } = await service.cancel(targets);
      // which it was: `all: true` cancels every task that has not ended (running, queued or paused);
      // a remote task's cancel was sent there or is kept, and its run ends once the remote says so
      const noteOf = (t: { id: string }) => notes.find((n) => n.startsWith(`task ${t.id}: `))?.slice(`task ${t.id}: `.length);
      const lines = cancelled.map((t) => {
        const note = noteOf(t);
        return note ? REPLIES.cancelAsked(t, was.get(t.id) ?? t.status, note) : REPLIES.cancelled(t, was.get(t.id) ?? t.status);
      });
      if (failed.length) lines.push(`Could not cancel:\n${failed.map((f) => `- ${f}`).join("\n")}`);
      return lines.join("\n") || "Nothing was cancelled.";
    },
  });
}
