// The version 2 (or 1) task file `<projectID>.json` read and written whole, as plugins before the
// store's directory (src/store/task-files.ts) did. The plugin itself only moves such a file in
// (src/store/migration.ts); tests and the store bench use these to lay one down and read it back,
// through the same reader, lock and atomic write the store uses.

import { basename, dirname } from "node:path";
import { removeDeadWritersTemps, writeFileAtomically } from "../src/atomic-file.js";
import { withLock, withLockRetried } from "../src/store/lock.js";
import { readStore, serialize } from "../src/store/task-list-file.js";
import { errorCode } from "../src/store/fs-read.js";
import type { BackgroundTask } from "../src/task-record.js";
import { promises as fs } from "node:fs";

export type LoadResult = { tasks: BackgroundTask[]; warnings: string[] };

/**
 * Reads the task file. Never throws: whatever cannot be used is set aside (with a warning) and the
 * rest loads. Also removes temp files left by writers that died mid-save.
 */
export async function loadStore(path: string): Promise<LoadResult> {
  const warnings: string[] = [];
  await removeDeadWritersTemps(dirname(path), `${basename(path)}.`).catch(() => {});
  try {
    await fs.lstat(path);
  } catch (error) {
    if (errorCode(error) === "ENOENT") return { tasks: [], warnings };
  }
  try {
    // Under the lock, what is set aside is also removed from the file (so it is set aside once).
    const read = await withLock(path, async () => {
      const result = await readStore(path, true);
      if (result.cleaned) await writeFileAtomically(path, serialize(result.tasks));
      return result;
    });
    return { tasks: read.tasks, warnings: [...warnings, ...read.warnings] };
  } catch (error) {
    // Locked by a live writer for longer than we wait, or the clean-up failed: read, touch nothing.
    warnings.push(`task file ${path}: ${(error as Error).message}; read it without cleaning it up`);
    const read = await readStore(path, false).catch((e: Error) => ({ tasks: [], warnings: [`could not read task file ${path}: ${e.message}`] }));
    return { tasks: read.tasks, warnings: [...warnings, ...read.warnings] };
  }
}

/**
 * Saves these tasks. The file's valid tasks that are not passed (another OpenCode process's tasks on
 * the same project) are kept; its bad entries are set aside, never an obstacle. A failed attempt is
 * retried a few times, then the error is thrown.
 */
export async function saveStore(path: string, tasks: readonly BackgroundTask[]): Promise<void> {
  await withLockRetried(path, async () => {
    const onDisk = await readStore(path, true);
    const ours = new Set(tasks.map((t) => t.id));
    const theirs = onDisk.tasks.filter((t) => !ours.has(t.id));
    await writeFileAtomically(path, serialize([...theirs, ...tasks]));
  });
}
