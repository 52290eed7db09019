// Fork files after start-up, once: the temp files of writers killed mid-write removed (a live
// process's write in progress stays), version 1 files moved in, the forks of tasks retention dropped
// removed, the forks of children deleted while OpenCode was not running removed (only a session the
// server says is gone, 404; any other answer keeps it), then the segments no fork names any more.

import { removeDeadWritersTemps } from "../atomic-file.js";
import type { ForkStore } from "./store.js";

/** `true` / `false` when the server says so; `undefined` when it could not be asked. */
export type SessionExists = (sessionID: string) => Promise<boolean | undefined>;

/** Removes the fork files of sessions that no longer exist; returns the ids it removed. Never throws. */
export async function sweepForkFiles(store: ForkStore, exists: SessionExists): Promise<string[]> {
  const removed: string[] = [];
  for (const id of await store.children().catch(() => [] as string[])) {
    const alive = await exists(id).catch(() => undefined);
    if (alive !== false) continue;
    await store.remove(id).catch(() => {});
    removed.push(id);
  }
  return removed;
}

/** The whole upkeep after start-up. Never throws; what went wrong is logged. */
export async function maintainForkFiles(
  store: ForkStore,
  droppedSessions: readonly string[],
  exists: SessionExists,
  log: (message: string) => void,
): Promise<void> {
  try {
    for (const dir of [store.dir, store.segmentsDir]) await removeDeadWritersTemps(dir);
    const { failed } = await store.migrateLegacy();
    if (failed.length)
      log(
        `native fork: could not move ${failed.length} old fork file(s) to ${store.dir}: ${failed.slice(0, 5).join("; ")}; they are left as they were and still used`,
      );
    for (const id of droppedSessions) await store.remove(id).catch(() => {});
    await sweepForkFiles(store, exists);
    await store.removeUnusedSegments();
  } catch (error) {
    log(`native fork: the upkeep of fork files failed: ${(error as Error).message}`);
  }
}

/** The forks of tasks retention dropped while OpenCode runs (../store/task-files.ts, maintain), then the segments no fork names any more. Never throws. */
export async function removeDroppedForks(store: ForkStore, droppedSessions: readonly string[], log: (message: string) => void): Promise<void> {
  try {
    for (const id of droppedSessions) await store.remove(id).catch(() => {});
    await store.removeUnusedSegments();
  } catch (error) {
    log(`native fork: removing the fork files of dropped tasks failed: ${(error as Error).message}`);
  }
}
