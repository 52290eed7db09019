// The plugin as loaded by the OpenCode instance of a task worktree (OpenCode loads the worktree's
// plugins a second time, in the same process, with `directory` = the worktree). It runs NO manager
// (the project's instance owns the task file and the task), offers no tools, and only: says it
// loaded (the proof that the worktree's config is there), hands the child's events to the owning
// manager, and refuses delegation inside the child.

import type { Hooks, PluginInput } from "../host/types.js";
import type { Event } from "../host/types.js";
import { delegationRefusal } from "../guard.js";
import { hostOf, markLoaded } from "./hub.js";

export function worktreeInstanceHooks(input: Pick<PluginInput, "directory">): Hooks {
  const directory = input.directory;
  markLoaded(directory);
  return {
    event: async ({ event }) => {
      await hostOf(directory)?.forward(event as unknown as Event);
    },
    "tool.execute.before": async (call) => {
      // an unknown owner (a directory no live task names) is refused too: nothing may delegate here
      const refusal = delegationRefusal(call.tool, call.sessionID, (id) => hostOf(directory)?.isChild(id) ?? true);
      if (refusal) throw new Error(refusal);
    },
  };
}
