import { promises as fs } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { randomBytes } from "node:crypto";
import type { BackgroundTask } from "./types.js";

type StoreFile = { version: 1; tasks: BackgroundTask[]; pendingWakes: string[] };

const LOCK_STALE_MS = 10_000;
const LOCK_WAIT_MS = 3_000;

/** `$XDG_DATA_HOME` (or ~/.local/share) / opencode/plugins/offshoot/<projectID>.json, as OpenCode lays out its data. */
export function storePath(projectID: string, env: NodeJS.ProcessEnv = process.env): string {
  const dataHome = env.XDG_DATA_HOME || join(env.HOME || homedir(), ".local", "share");
  return join(dataHome, "opencode", "plugins", "offshoot", `${projectID}.json`);
}

export function emptyStore(): StoreFile {
  return { version: 1, tasks: [], pendingWakes: [] };
}

function isStoreFile(value: unknown): value is StoreFile {
  const v = value as StoreFile;
  return Boolean(v) && v.version === 1 && Array.isArray(v.tasks) && Array.isArray(v.pendingWakes ?? []);
}

export type LoadResult = { store: StoreFile; warning?: string };

/** Reads the store; an unreadable file is renamed aside (never deleted) and a fresh store returned. */
export async function loadStore(path: string): Promise<LoadResult> {
  let raw: string;
  try {
    raw = await fs.readFile(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return { store: emptyStore() };
    return { store: emptyStore(), warning: `could not read ${path}: ${(error as Error).message}` };
  }
  try {
    const parsed: unknown = JSON.parse(raw);
    if (!isStoreFile(parsed)) throw new Error("not an offshoot task file (version 1)");
    return { store: { version: 1, tasks: parsed.tasks, pendingWakes: parsed.pendingWakes ?? [] } };
  } catch (error) {
    const aside = `${path}.corrupt-${Date.now()}`;
    await fs.rename(path, aside).catch(() => {});
    return { store: emptyStore(), warning: `task file ${path} was unreadable (${(error as Error).message}); moved it to ${aside} and started fresh` };
  }
}

async function writeAtomically(path: string, content: string): Promise<void> {
  await fs.mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const temp = `${path}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
  try {
    const handle = await fs.open(temp, "w", 0o600);
    try {
      await handle.writeFile(content, "utf8");
      await handle.sync();
    } finally {
      await handle.close();
    }
    await fs.rename(temp, path);
  } catch (error) {
    await fs.rm(temp, { force: true }).catch(() => {});
    throw error;
  }
}

/** An exclusive lock file, so two OpenCode processes on one project never interleave read-merge-write. */
async function withLock<T>(path: string, work: () => Promise<T>): Promise<T> {
  const lock = `${path}.lock`;
  await fs.mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (;;) {
    try {
      const handle = await fs.open(lock, "wx", 0o600);
      await handle.close();
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      const stat = await fs.stat(lock).catch(() => undefined);
      if (stat && Date.now() - stat.mtimeMs > LOCK_STALE_MS) {
        await fs.rm(lock, { force: true });
        continue;
      }
      if (Date.now() > deadline) throw new Error(`task file is locked by another process (${lock})`);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }
  try {
    return await work();
  } finally {
    await fs.rm(lock, { force: true }).catch(() => {});
  }
}

/**
 * Saves this process's tasks. Tasks in the file that this process does not know (another OpenCode
 * process on the same project) are kept, and so are pending wakes of parents it has no task of, so
 * no process erases another's.
 */
export async function saveStore(path: string, tasks: readonly BackgroundTask[], pendingWakes: readonly string[]): Promise<void> {
  await withLock(path, async () => {
    const { store: onDisk } = await loadStore(path);
    const ours = new Set(tasks.map((t) => t.id));
    const ourParents = new Set(tasks.map((t) => t.parentSessionID));
    const theirs = onDisk.tasks.filter((t) => !ours.has(t.id));
    const theirWakes = onDisk.pendingWakes.filter((parent) => !ourParents.has(parent));
    const file: StoreFile = { version: 1, tasks: [...theirs, ...tasks], pendingWakes: [...new Set([...theirWakes, ...pendingWakes])] };
    await writeAtomically(path, JSON.stringify(file, null, 2));
  });
}
