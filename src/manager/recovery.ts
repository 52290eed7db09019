// Start-up: the tasks a stopped OpenCode process left running. Their agent loops died with that
// process, so each ends now (completed if its answer was already there, interrupted otherwise) with
// the time it really ran. All of them end first; then their notices go out (noReply) and NO parent
// is woken: a restart alone never starts a model turn.

import { getBusySessions } from "./client.js";
import type { TaskManager } from "./task-manager.js";
import { isActive, isRunning } from "./types.js";

export async function recoverAfterRestart(manager: TaskManager): Promise<void> {
  const entries = manager.registry.entries();
  const stopped = entries.filter((e) => isRunning(e.task.status));
  const parents = manager.registry.parents();
  if (stopped.length === 0 && manager.notices.parentsWithOutstanding().length === 0) return;
  const busy = await getBusySessions(manager.client);
  for (const parent of parents) manager.notices.recordParentState(parent, busy.has(parent));
  await Promise.all(
    stopped.map(async ({ task }) => {
      // A child still busy belongs to a loop that is alive after all: its events will end it.
      if (busy.has(task.sessionID)) return;
      await manager.checkCompletion(task, { processStopped: true }, { wake: false, deliver: false });
    }),
  );
  // What ended here is reported by its notice; it is not news for a later wake.
  for (const { task } of stopped) if (!isActive(task.status)) task.reportedRun = task.run;
  await manager.save();
  await Promise.all(parents.map((parent) => manager.notices.flush(parent)));
}
