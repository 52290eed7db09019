// The move from the version 2 (or 1) task file `<projectID>.json` beside the store's directory, at
// start-up, under the store's lock: settled tasks appended to the history, the others merged into
// open.json, then the old file renamed `<projectID>.json.migrated`. That copy is removed by a later
// start that reads the new layout cleanly (task-files.ts open: no warning, no bad or torn line).

import { promises as fs } from "node:fs";
import { basename, dirname, join } from "node:path";
import { writeFileAtomically } from "../atomic-file.js";
import { appendLines, historyLine } from "./history.js";
import { isSettled } from "./retention.js";
import { readStore, serialize } from "./task-list-file.js";
import { withLock } from "./lock.js";

/** The paths of a project's store (task-files.ts). */
export interface StoreFiles {
  readonly legacyPath: string;
  readonly dir: string;
  readonly openPath: string;
  readonly historyPath: string;
}

/**
 * The version 2 task file, moved in once: settled tasks to the history, the others to open.json,
 * then the old file is renamed `<file>.migrated` (removed by a later clean start:
 * removeMigratedCopies). On any failure the old file is left as it was, the warning says so, and
 * the next start tries again (repeating a half-done move duplicates nothing: the newest line of a
 * task wins, and open.json is merged by id).
 */
export async function moveLegacyFile(files: StoreFiles, warnings: string[]): Promise<"nothing to move" | "moved" | "left"> {
  if (!(await fs.lstat(files.legacyPath).catch(() => undefined))) return "nothing to move";
  const leftAsItWas = (what: string) =>
    `could not move the task file ${files.legacyPath} to ${files.dir}/ (${what}); it is left as it was, and moving it is tried again at the next start`;
  let legacy;
  try {
    // (bad entries are copied aside, a file that cannot be used at all is renamed aside, as before)
    legacy = await withLock(files.legacyPath, () => readStore(files.legacyPath, true));
  } catch (error) {
    warnings.push(leftAsItWas((error as Error).message));
    return "left";
  }
  warnings.push(...legacy.warnings);
  if (!(await fs.lstat(files.legacyPath).catch(() => undefined))?.isFile()) return "left"; // set aside whole
  try {
    const settled = legacy.tasks.filter(isSettled);
    const open = legacy.tasks.filter((t) => !isSettled(t));
    await appendLines(
      files.historyPath,
      settled.map((t) => historyLine(t, t.completedAt ?? t.startedAt)),
    );
    const onDisk = await readStore(files.openPath, true);
    const ids = new Set(open.map((t) => t.id));
    await writeFileAtomically(files.openPath, serialize([...onDisk.tasks.filter((t) => !ids.has(t.id)), ...open]));
    let backup = `${files.legacyPath}.migrated`;
    if (await fs.lstat(backup).catch(() => undefined)) backup = `${backup}-${Date.now()}`;
    await fs.rename(files.legacyPath, backup);
    warnings.push(
      `moved ${legacy.tasks.length} tasks from ${files.legacyPath} to ${files.dir}/; the old file is kept as ${backup} until a later start reads the new layout cleanly`,
    );
    return "moved";
  } catch (error) {
    warnings.push(leftAsItWas((error as Error).message));
    return "left";
  }
}

/** Removes the old task file's copies `<file>.migrated` (and `<file>.migrated-<time>`): regular files only. */
export async function removeMigratedCopies(legacyPath: string): Promise<void> {
  const base = `${basename(legacyPath)}.migrated`;
  const names = await fs.readdir(dirname(legacyPath)).catch(() => [] as string[]);
  for (const name of names) {
    if (name !== base && !(name.startsWith(`${base}-`) && /^[0-9]+$/.test(name.slice(base.length + 1)))) continue;
    const path = join(dirname(legacyPath), name);
    if ((await fs.lstat(path).catch(() => undefined))?.isFile()) await fs.unlink(path).catch(() => {});
  }
}
