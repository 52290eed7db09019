// Fork files of children deleted while OpenCode was not running: removed once after start-up.
// Only a session the server says is gone (404) loses its file; any other answer keeps it.

import { promises as fs } from "node:fs";
import type { ForkStore } from "./store.js";

/** `true` / `false` when the server says so; `undefined` when it could not be asked. */
export type SessionExists = (sessionID: string) => Promise<boolean | undefined>;

/** Removes the fork files of sessions that no longer exist; returns the ids it removed. Never throws. */
export async function sweepForkFiles(store: ForkStore, exists: SessionExists): Promise<string[]> {
  let names: string[];
  try {
    names = await fs.readdir(store.dir);
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const name of names) {
    const id = name.endsWith(".json") ? name.slice(0, -".json".length) : undefined;
    if (!id || !store.pathOf(id)) continue;
    const alive = await exists(id).catch(() => undefined);
    if (alive !== false) continue;
    await store.remove(id).catch(() => {});
    removed.push(id);
  }
  return removed;
}
