import { tool } from "../host/tool.js";
import { DESCRIPTION } from "./background-take.txt.js";
import type { TaskService } from "../manager/task-service.js";
import { BACKGROUND_TAKE_ARGS, parseToolArgs, taskIdArg } from "./args.js";
import { findCallerTask } from "./resolve.js";

export function createBackgroundTakeTool(service: TaskService) {
  return tool({
    description: DESCRIPTION,
    args: BACKGROUND_TAKE_ARGS,
    async execute(raw, ctx) {
      const parsed = parseToolArgs("background_take", BACKGROUND_TAKE_ARGS, raw);
      if (!parsed.ok) return parsed.error;
      await service.ready();
      const found = findCallerTask(service, ctx.sessionID, taskIdArg(parsed.value.task_id));
      if ("error" in found) return found.error;
      return service.take(found.task, { keep: parsed.value.keep === true });
    },
  });
}
