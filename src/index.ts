import type { Plugin } from "./host/types.js";
import type { Event } from "./host/types.js";
import { delegationRefusal } from "./guard.js";
import { legacyTaskFile } from "./store/task-list-file.js";
import { TaskManager } from "./manager/task-manager.js";
import { taskService } from "./manager/service.js";
import { parseOptions } from "./options.js";
import { loadedLine } from "./index.txt.js";
import { isOneShotRun } from "./run-mode.js";
import { createBackgroundCancelTool } from "./tools/background-cancel.js";
import { createBackgroundListTool } from "./tools/background-list.js";
import { createBackgroundOutputTool } from "./tools/background-output.js";
import { createBackgroundTaskTool } from "./tools/background-task.js";
import { createBackgroundTakeTool } from "./tools/background-take.js";
import { log, sessionExists } from "./host/client.js";
import { noticesBeforeUserWords } from "./manager/parent/turn-order.js";
import type { SessionMessage } from "./fork/types.js";
import { isInsideTaskWorktree } from "./worktree/worktree.js";
import { worktreeInstanceHooks } from "./worktree/instance.js";
import { shareForks } from "./worktree/hub.js";
import { createChildTools } from "./tools/child-tools.js";
import { namedTools } from "./tools/named.js";
import { sawSystem, sentSystem } from "./native/request-check.js";
import { type ToolNamesOption, checkToolNames, startNames } from "./coexist/tool-names.js";
import { OUR_PACKAGE } from "./coexist/plugins.js";
import { storeDir } from "./store-paths.js";

import { ForkStore, NativeForkRegistry, createNativeForkHooks, forksDir, legacyForksDir, maintainForkFiles, removeDroppedForks } from "./native/index.js";

/** Creates the task manager for this OpenCode instance and hands OpenCode the tools and the hooks. */
export const server: Plugin = async (input, rawOptions) => {
  // Loaded by the OpenCode instance of one of our task worktrees: no manager there (src/worktree/instance.ts).
  // It offers the same tools (a child's tool list is the parent's; a call there is refused).
  if (await isInsideTaskWorktree(input.directory)) return worktreeInstanceHooks(input, { tools: createChildTools() });
  const { options, warnings } = parseOptions(rawOptions, { checkout: input.worktree });
  for (const warning of warnings) log(input.client, "warn", warning);
  const path = legacyTaskFile(input.project.id);
  const manager = new TaskManager({
    client: input.client,
    legacyTaskFile: path,
    oneShotRun: isOneShotRun(),
    options,
    project: { directory: input.directory, id: input.project.id },
  });
  const forks = new NativeForkRegistry(new ForkStore(forksDir(path), legacyForksDir(path)));
  const nativeHooks = createNativeForkHooks(forks, (message) => log(input.client, "warn", message));
  // A native fork into a worktree is served by the worktree's instance: it finds the fork here (worktree/hub.ts).
  const unshareForks = shareForks(forks);
  // Start-up (reading the task file, recovering tasks left running) must not block plugin loading:
  // it calls the server, which is still loading us. It runs right after, or on first use; then,
  // once, the upkeep of fork files (native/sweep.ts).
  const upkeep = () =>
    maintainForkFiles(
      forks.store,
      manager.droppedSessions,
      (id) => sessionExists(input.client, id),
      (message) => log(input.client, "warn", message),
    );
  // which names our tools are offered under beside the other plugins (coexist/tool-names.ts): the
  // instance's tool list is read once it has loaded them all; a change restarts the instance once
  const names = {
    client: input.client,
    directory: input.directory,
    storeDir: storeDir(path),
    option: options.toolNames as ToolNamesOption,
    ourName: OUR_PACKAGE,
    oneShotRun: isOneShotRun(),
  };
  startNames(names.option, names.storeDir);
  setTimeout(() => void checkToolNames(names).then((restarting) => (restarting ? undefined : manager.ready().then(upkeep))), 0).unref?.();
  manager.onHistoryDropped = (sessions) => void removeDroppedForks(forks.store, sessions, (message) => log(input.client, "warn", message));
  // the tools see the manager only through the task service (manager/task-service.ts)
  const tasks = taskService(manager);
  const tool = namedTools({
    task: createBackgroundTaskTool(tasks, { registry: forks, maxTokens: options.nativeForkMaxTokens }),
    output: createBackgroundOutputTool(tasks),
    cancel: createBackgroundCancelTool(tasks),
    list: createBackgroundListTool(tasks),
    take: createBackgroundTakeTool(tasks),
  });
  log(input.client, "info", loadedLine(input.directory, Object.keys(tool)));
  return {
    tool,
    // OpenCode passes v1-typed events; the v2 types match what the server really sends.
    event: async ({ event }) => {
      const e = event as unknown as Event;
      // A deleted child takes its inherited context with it.
      if (e.type === "session.deleted") await forks.forget(e.properties.sessionID).catch(() => {});
      await manager.handleEvent(e);
    },
    "tool.execute.before": async (call) => {
      // The one deliberate throw: OpenCode makes it the refused call's error result (see guard.ts).
      const refusal = delegationRefusal(call.tool, call.sessionID, (id) => manager.isChildSession(id));
      if (refusal) throw new Error(refusal);
    },
    ...nativeHooks,
    // a native child's first request is checked against its parent's system prompt as sent (native/request-check.ts)
    "experimental.chat.system.transform": async (hookInput, output) => {
      if (hookInput?.sessionID && Array.isArray(output?.system)) sawSystem(hookInput.sessionID, output.system);
    },
    "chat.params": async (hookInput, output) => {
      await nativeHooks["chat.params"](hookInput, output);
      sentSystem(hookInput.sessionID);
    },
    // A child's request waits until its finished steps are counted and any stop or pause is done
    // (manager/step-gate.ts); a native child's requests start with its parent's (native/hooks.ts);
    // then, in every session, notices that sorted into a run of user messages go before the user's
    // words (turn-order.ts).
    "experimental.chat.messages.transform": async (hookInput, output) => {
      if (Array.isArray(output?.messages)) await manager.beforeModelRequest(output.messages as unknown as SessionMessage[]);
      await nativeHooks["experimental.chat.messages.transform"](hookInput, output);
      try {
        if (Array.isArray(output?.messages)) noticesBeforeUserWords(output.messages as unknown as SessionMessage[]);
      } catch (error) {
        log(input.client, "warn", `ordering notices before the user's words failed: ${(error as Error).message}`);
      }
    },
    dispose: () => {
      unshareForks();
      return manager.dispose();
    },
  };
};

export default { id: "offshoot", server };
