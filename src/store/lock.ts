// The lock of a store file: `<file>.lock`, created exclusively, naming its owner (pid, host, time),
// so two OpenCode processes never interleave a read-merge-write. What a crash left is taken at once:
// a lock whose owner process on this host is dead; a hung writer's lock after LOCK_STALE_MS.

import { promises as fs } from "node:fs";
import { hostname } from "node:os";
import { dirname } from "node:path";
import { randomBytes } from "node:crypto";
import { NOFOLLOW_CREATE } from "../atomic-file.js";
import { processState } from "../process-state.js";
import { errorCode, readRegularFile, sleep } from "./fs-read.js";

/** A lock of a live owner older than this is taken: its writer hangs. */
const LOCK_STALE_MS = 10_000;
/** A lock whose owner cannot be read (being written, or garbage) older than this is taken. */
const LOCK_UNREADABLE_STALE_MS = 2_000;
/** How long one save attempt waits for a live writer's lock. */
const LOCK_WAIT_MS = 3_000;

type LockOwner = { pid: number; hostname: string; createdAt: number };

/** Pauses before the retries of a failed save; then it throws (the next change saves again). */
export const SAVE_RETRY_DELAYS_MS = [100, 300, 900];

/** withLock, retried after each pause of SAVE_RETRY_DELAYS_MS when the lock or `work` fails; then the last error is thrown. */
export async function withLockRetried<T>(path: string, work: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await withLock(path, work);
    } catch (error) {
      const delay = SAVE_RETRY_DELAYS_MS[attempt];
      if (delay === undefined) throw error;
      await sleep(delay);
    }
  }
}

/** Runs `work` holding `<file>.lock`, so two OpenCode processes never interleave read-merge-write. */
export async function withLock<T>(path: string, work: () => Promise<T>): Promise<T> {
  await fs.mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const release = await acquireLock(`${path}.lock`);
  try {
    return await work();
  } finally {
    await release();
  }
}

/** How many times in a row a lock that went (released, or taken from a dead or hung owner) is tried again at once. */
const AT_ONCE_MAX = 8;

async function acquireLock(lock: string): Promise<() => Promise<void>> {
  const deadline = Date.now() + LOCK_WAIT_MS;
  let atOnce = 0;
  for (let pause = 25; ; pause = Math.min(pause * 2, 400)) {
    const ino = await tryCreateLock(lock);
    // Released only if it is still ours (not taken over meanwhile as a hung writer's).
    if (ino !== undefined) return () => removeIfSame(lock, ino);
    const holder = await inspectLock(lock);
    const gone = !holder || (holder.takeable && (await takeOver(lock, holder.ino)));
    // A lock that is gone now is tried again at once, even past the deadline: the wait is for a live
    // writer, and on a slow disk the tries alone can outlast it (a start-up then gave up on a dead
    // process's lock it had just taken, and never tidied its store)
    if (gone && atOnce++ < AT_ONCE_MAX) continue;
    if (Date.now() >= deadline) throw new Error(`task file is locked by ${holder?.owner ?? "another writer"} (${lock})`);
    if (!gone) atOnce = 0;
    await sleep(Math.min(pause, Math.max(1, deadline - Date.now())));
  }
}

/** Creates the lock with O_EXCL and writes its owner; the new lock's inode, or undefined if one exists. */
async function tryCreateLock(lock: string): Promise<number | undefined> {
  let handle;
  try {
    handle = await fs.open(lock, NOFOLLOW_CREATE, 0o600);
  } catch (error) {
    if (errorCode(error) === "EEXIST") return undefined;
    throw error;
  }
  try {
    const owner: LockOwner = { pid: process.pid, hostname: hostname(), createdAt: Date.now() };
    await handle.writeFile(JSON.stringify(owner), "utf8");
    return (await handle.stat()).ino;
  } catch (error) {
    await fs.unlink(lock).catch(() => {});
    throw error;
  } finally {
    await handle.close();
  }
}

/** Who holds the lock, and whether it may be taken: a dead owner at once, a hung or unreadable one when old. */
async function inspectLock(lock: string): Promise<{ ino: number; takeable: boolean; owner: string } | undefined> {
  const stat = await fs.lstat(lock).catch(() => undefined);
  if (!stat) return undefined; // released meanwhile
  const age = Date.now() - stat.mtimeMs;
  const owner = stat.isFile() && stat.size < 4096 ? parseOwner(await readRegularFile(lock, 4096).catch(() => "")) : undefined;
  if (!owner) return { ino: stat.ino, takeable: age > LOCK_UNREADABLE_STALE_MS, owner: "an unreadable lock" };
  // On another host (a shared file system) the pid says nothing: only the age counts.
  const state = owner.hostname === hostname() ? processState(owner.pid) : "unknown";
  return { ino: stat.ino, takeable: state === "dead" || age > LOCK_STALE_MS, owner: `process ${owner.pid} on ${owner.hostname}` };
}

/**
 * Moves the stale lock away (rename, so two waiters cannot both remove it) and checks it was the one
 * judged stale; a fresh lock moved by mistake is put back.
 */
async function takeOver(lock: string, staleIno: number): Promise<boolean> {
  const moved = `${lock}.stale-${process.pid}-${randomBytes(4).toString("hex")}`;
  try {
    await fs.rename(lock, moved);
  } catch {
    return false;
  }
  const stat = await fs.lstat(moved).catch(() => undefined);
  if (stat && stat.ino !== staleIno) {
    await fs.link(moved, lock).catch(() => {});
    await fs.unlink(moved).catch(() => {});
    return false;
  }
  await fs.rm(moved, { force: true }).catch(() => {}); // a directory there stays, renamed
  return true;
}

async function removeIfSame(lock: string, ino: number): Promise<void> {
  const stat = await fs.lstat(lock).catch(() => undefined);
  if (stat?.ino === ino) await fs.unlink(lock).catch(() => {});
}

function parseOwner(text: string): LockOwner | undefined {
  try {
    const v = JSON.parse(text) as LockOwner;
    if (typeof v === "object" && v !== null && Number.isInteger(v.pid) && v.pid > 0 && typeof v.hostname === "string") return v;
  } catch {
    /* unreadable */
  }
  return undefined;
}
