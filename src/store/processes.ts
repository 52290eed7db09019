// Which OpenCode processes run on this project and have not stopped cleanly: `runs.json` in the
// task store's directory, `{ "<pid>": <started at, ms> }`. A process adds itself at start-up and
// removes itself when it is disposed (a graceful stop). One that died (SIGKILL, crash) stays listed:
// the next start looks for the children its cut-off launches left (recovery.ts, adoptOrphans) only
// among the sessions updated since it started, then forgets it. So the search costs what the dead
// process did, not the project's history of sessions, and nothing at all after clean stops.
// Written atomically under its own lock; an unreadable file means "unknown" (search as before).

import { join } from "node:path";
import { writeFileAtomically } from "../atomic-file.js";
import { readRegularFile } from "./fs-read.js";
import { withLock } from "./lock.js";

/** Where to look for orphans: nowhere, since a time, or unknown (no record: the server's default listing). */
export type OrphanSearch = { kind: "none" } | { kind: "since"; since: number; pids: number[] } | { kind: "unknown" };

/** A session is updated a little before the launch that records it could have: the margin for clocks and order. */
const SINCE_MARGIN_MS = 60_000;

const runsPath = (dir: string) => join(dir, "runs.json");

async function readRuns(path: string): Promise<Record<string, number> | undefined> {
  let text: string;
  try {
    text = await readRegularFile(path, 1024 * 1024);
  } catch (error) {
    void error;
    return undefined; // none yet (an older plugin, or the first start), or unreadable
  }
  try {
    const parsed = JSON.parse(text) as unknown;
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return undefined;
    const runs: Record<string, number> = {};
    for (const [pid, at] of Object.entries(parsed)) if (/^\d+$/.test(pid) && typeof at === "number" && Number.isFinite(at)) runs[pid] = at;
    return runs;
  } catch {
    return undefined;
  }
}

/**
 * Records this process's start and says where its orphan search must look: since the earliest start
 * of the listed processes that are dead. Without a record (the first start with it, or a file that
 * cannot be read) the answer is unknown. Never throws (unknown then).
 */
export async function recordStartUp(dir: string, pid: number, at: number, isAlive: (pid: number) => boolean): Promise<OrphanSearch> {
  const path = runsPath(dir);
  try {
    return await withLock(path, async () => {
      const runs = await readRuns(path);
      const dead = Object.entries(runs ?? {}).filter(([p]) => Number(p) !== pid && !isAlive(Number(p)));
      await writeFileAtomically(path, JSON.stringify({ ...runs, [pid]: at }));
      if (!runs) return { kind: "unknown" } as const;
      if (dead.length === 0) return { kind: "none" } as const;
      return { kind: "since", since: Math.min(...dead.map(([, t]) => t)) - SINCE_MARGIN_MS, pids: dead.map(([p]) => Number(p)) } as const;
    });
  } catch {
    return { kind: "unknown" };
  }
}

/** Removes processes from the record: the dead ones whose orphans were searched, or this one at a clean stop. */
export async function forgetProcesses(dir: string, pids: readonly number[]): Promise<void> {
  if (pids.length === 0) return;
  const path = runsPath(dir);
  await withLock(path, async () => {
    const runs = await readRuns(path);
    if (!runs) return;
    for (const pid of pids) delete runs[String(pid)];
    await writeFileAtomically(path, JSON.stringify(runs));
  }).catch(() => {});
}
