// Retention: which settled tasks leave the store, decided in memory (pure). A task is settled once it
// ended and its parent was told (isSettled: it leaves open.json for the history); a reported one
// leaves historyDays after it settled, and the oldest reported ones beyond historyMax leave first.
// An unreported task is never dropped. Their tombstones: tombstones.ts.

import type { BackgroundTask } from "../task-record.js";
import { type HistoryEntry, isReported } from "./history.js";
import { isOpen } from "../task-state.js";

const DAY_MS = 24 * 3600 * 1000;

export interface Retention {
  /** settled, reported tasks older than this many days are dropped */
  historyDays: number;
  /** at most this many settled tasks are kept (the oldest reported ones go first) */
  historyMax: number;
}

/** Settled: its run ended (not open: a paused task has not) and its notice delivered. It leaves open.json for the history. */
export function isSettled(task: BackgroundTask): boolean {
  return !isOpen(task.status) && task.notifiedRun >= task.run;
}

/** What retention drops: reported tasks settled before the cut-off, then the oldest reported ones over the maximum. */
export function retentionDrops(entries: Iterable<HistoryEntry>, retention: Retention, now: number): HistoryEntry[] {
  const cutoff = now - retention.historyDays * DAY_MS;
  const drop: HistoryEntry[] = [];
  const recent: HistoryEntry[] = [];
  let count = 0;
  for (const e of entries) {
    count++;
    if (!isReported(e)) continue;
    if (e.settledAt < cutoff) drop.push(e);
    else recent.push(e);
  }
  const over = count - drop.length - retention.historyMax;
  if (over > 0) {
    recent.sort((a, b) => a.settledAt - b.settledAt);
    for (let i = 0; i < over && i < recent.length; i++) drop.push(recent[i]!);
  }
  return drop;
}
