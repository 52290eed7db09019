import type { Plugin } from "@opencode-ai/plugin";
import type { Event } from "@opencode-ai/sdk/v2";
import { delegationRefusal } from "./manager/guard.js";
import { storePath } from "./manager/store.js";
import { log } from "./manager/client.js";
import { TaskManager } from "./manager/task-manager.js";
import { parseOptions } from "./options.js";
import { isOneShotRun } from "./run-mode.js";
import { createBackgroundCancelTool } from "./tools/background-cancel.js";
import { createBackgroundListTool } from "./tools/background-list.js";
import { createBackgroundOutputTool } from "./tools/background-output.js";
import { createBackgroundTaskTool } from "./tools/background-task.js";

/** Creates the task manager for this OpenCode instance and hands OpenCode the tools and the hooks. */
export const server: Plugin = async (input, rawOptions) => {
  const { options, warnings } = parseOptions(rawOptions);
  for (const warning of warnings) log(input.client, "warn", warning);
  const manager = new TaskManager({ client: input.client, storePath: storePath(input.project.id), oneShotRun: isOneShotRun(), options });
  // Start-up (reading the task file, recovering tasks left running) must not block plugin loading:
  // it calls the server, which is still loading us. It runs right after, or on first use.
  setTimeout(() => void manager.ready(), 0).unref?.();
  return {
    tool: {
      background_task: createBackgroundTaskTool(manager),
      background_output: createBackgroundOutputTool(manager),
      background_cancel: createBackgroundCancelTool(manager),
      background_list: createBackgroundListTool(manager),
    },
    // OpenCode passes v1-typed events; the v2 types match what the server really sends.
    event: ({ event }) => manager.handleEvent(event as unknown as Event),
    "tool.execute.before": async (call) => {
      // The one deliberate throw: OpenCode makes it the refused call's error result (see guard.ts).
      const refusal = delegationRefusal(call.tool, call.sessionID, (id) => manager.isChildSession(id));
      if (refusal) throw new Error(refusal);
    },
    dispose: () => manager.dispose(),
  };
};

export default { id: "offshoot", server };
