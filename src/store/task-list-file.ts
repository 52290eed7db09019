// A task list file: one JSON file of task records, shared by every OpenCode process on the project.
// It is the format of the store's `open.json` (task-files.ts, the store of several files, writes it)
// and of the old per-project task file `<projectID>.json` (legacyTaskFile; migration.ts moves it in).
//
// - Versioned (`{ version: 2, tasks }`); version 1 files are migrated entry by entry.
// - Read entry by entry with the record schema: a bad entry is set aside in `<file>.corrupt-<time>`
//   (with the reason) and the good ones load. A file that cannot be used at all (not a regular file,
//   too big, not JSON, unknown version) is renamed aside whole. Nothing is ever deleted.
// - Written atomically (temp file + fsync + rename, mode 0600, directory 0700) under a lock file that
//   names its owner (lock.ts); a dead owner's lock is taken at once. Symlinks are never followed.

import { promises as fs, type Stats } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { NOFOLLOW_CREATE } from "../atomic-file.js";
import { ForkSummarySchema, TaskRecordSchema, type BackgroundTask } from "../task-record.js";
import { errorCode, kindOf, readRegularFile } from "./fs-read.js";

export const STORE_VERSION = 2;
/** A bigger file is not read (nor allocated): it is set aside. */
export const MAX_STORE_BYTES = 64 * 1024 * 1024;

/** `$XDG_DATA_HOME` (or ~/.local/share) / opencode/plugins/offshoot/<projectID>.json, as OpenCode lays out its data. */
export function legacyTaskFile(projectID: string, env: NodeJS.ProcessEnv = process.env): string {
  const dataHome = env.XDG_DATA_HOME || join(env.HOME || homedir(), ".local", "share");
  return join(dataHome, "opencode", "plugins", "offshoot", `${projectID}.json`);
}

export function serialize(tasks: readonly BackgroundTask[]): string {
  return JSON.stringify({ version: STORE_VERSION, tasks }, null, 2);
}

// ─── reading ───

export type ReadResult = { tasks: BackgroundTask[]; warnings: string[]; /** bad entries were set aside: the file should be rewritten */ cleaned?: boolean };

/**
 * Reads and validates the file. With `mutate` (only under the lock), what cannot be used is set
 * aside: the whole file renamed, or its bad entries copied to a `.corrupt-<time>` file.
 */
export async function readStore(path: string, mutate: boolean): Promise<ReadResult> {
  let stat: Stats;
  try {
    stat = await fs.lstat(path);
  } catch (error) {
    if (errorCode(error) === "ENOENT") return { tasks: [], warnings: [] };
    throw error;
  }
  if (!stat.isFile()) return setFileAside(path, `is ${kindOf(stat)}, not a regular file`, mutate);
  if (stat.size > MAX_STORE_BYTES) return setFileAside(path, `is ${stat.size} bytes, over the ${MAX_STORE_BYTES} byte limit`, mutate);
  let text: string;
  try {
    text = await readRegularFile(path, MAX_STORE_BYTES);
  } catch (error) {
    return setFileAside(path, `could not be read (${(error as Error).message})`, mutate);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    return setFileAside(path, `is not valid JSON (${(error as Error).message})`, mutate);
  }
  const file = parsed as { version?: unknown; tasks?: unknown };
  if (!isObject(parsed) || (file.version !== 1 && file.version !== STORE_VERSION) || !Array.isArray(file.tasks)) {
    return setFileAside(path, `is not an offshoot task file of version 1 or ${STORE_VERSION}`, mutate);
  }

  const tasks: BackgroundTask[] = [];
  const bad: { index: number; reason: string; entry: unknown }[] = [];
  const ids = new Set<string>();
  file.tasks.forEach((entry: unknown, index) => {
    const result = TaskRecordSchema.safeParse(file.version === 1 ? migrateV1(entry) : entry);
    if (!result.success) bad.push({ index, reason: describeIssues(result.error.issues), entry });
    else if (ids.has(result.data.id)) bad.push({ index, reason: `a second task with id ${result.data.id}`, entry });
    else {
      ids.add(result.data.id);
      tasks.push(result.data);
    }
  });
  if (bad.length === 0) return { tasks, warnings: [] };
  const summary =
    bad
      .slice(0, 5)
      .map((b) => `#${b.index}: ${b.reason}`)
      .join("; ") + (bad.length > 5 ? `; and ${bad.length - 5} more` : "");
  const what = `${bad.length} bad task ${bad.length === 1 ? "entry" : "entries"} in ${path} (${summary})`;
  if (!mutate) return { tasks, warnings: [`ignored ${what}`] };
  const aside = await freeAsideName(path);
  const copy = { source: path, setAsideAt: new Date().toISOString(), version: file.version, entries: bad };
  const handle = await fs.open(aside, NOFOLLOW_CREATE, 0o600);
  try {
    await handle.writeFile(JSON.stringify(copy, null, 2), "utf8");
  } finally {
    await handle.close();
  }
  return { tasks, warnings: [`set aside ${what} in ${aside}; the other ${tasks.length} loaded`], cleaned: true };
}

async function setFileAside(path: string, reason: string, mutate: boolean): Promise<ReadResult> {
  if (!mutate) return { tasks: [], warnings: [`task file ${path} ${reason}; it will be set aside at the next save`] };
  const aside = await freeAsideName(path);
  await fs.rename(path, aside);
  return { tasks: [], warnings: [`task file ${path} ${reason}; moved it to ${aside} and started with no tasks`] };
}

/** `<file>.corrupt-<time>`, with a random suffix in the rare case that name is taken. */
export async function freeAsideName(path: string): Promise<string> {
  const name = `${path}.corrupt-${Date.now()}`;
  const taken = await fs.lstat(name).then(
    () => true,
    () => false,
  );
  return taken ? `${name}-${randomBytes(4).toString("hex")}` : name;
}

/** A version 1 entry in the version 2 shape: no prompt, the fork stats summed up, reportedRun added. */
function migrateV1(entry: unknown): unknown {
  if (!isObject(entry)) return entry;
  const { prompt: _prompt, forkStats, ...rest } = entry as Record<string, unknown>;
  const migrated: Record<string, unknown> = { ...rest };
  if (migrated.reportedRun === undefined) migrated.reportedRun = migrated.notifiedRun;
  if (isObject(forkStats) && migrated.fork === undefined) {
    const s = forkStats as Record<string, unknown>;
    const fork = ForkSummarySchema.safeParse({
      kind: "text",
      keptMessages: s.finalCount,
      totalMessages: s.originalCount,
      chars: s.totalChars,
      fromCompaction: s.compactionDetected,
    });
    if (fork.success) migrated.fork = fork.data;
  }
  return migrated;
}

function describeIssues(issues: readonly { path: readonly PropertyKey[]; message: string }[]): string {
  return issues
    .slice(0, 3)
    .map((i) => (i.path.length ? `${i.path.map(String).join(".")}: ${i.message}` : i.message))
    .join(", ");
}

// ─── small helpers ───

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
