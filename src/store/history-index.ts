// The history's index, `history.idx` (its line format: history.ts): what start-up reads instead of
// the history. Only a cache: it is checked against history.jsonl (its inode, offsets in order and
// inside the file, the first and last line's head), a line it misses is read from the history, and
// an index that does not match is ignored (the history scanned whole) and written anew.

import { closeSync } from "node:fs";
import { writeFileAtomically } from "../atomic-file.js";
import { type HistoryEntry, indexHeader, indexLine, linePrefix, openRegularSync, parseIndex, preadSync, scanHistory } from "./history.js";
import { MAX_STORE_BYTES } from "./task-list-file.js";

/** What is on disk, read under the lock (or without it, read-only). */
export interface Loaded {
  /** the newest line of each settled task that is not in open.json */
  latest: Map<string, HistoryEntry>;
  bad: string[];
  torn: boolean;
  /** lines in the file (ours and bad) */
  lines: number;
  /** the history file's inode and size when read */
  ino: number;
  size: number;
  /** the index did not describe the file exactly: write it anew */
  indexStale: boolean;
}

/**
 * The history's heads: from the index, checked against the file (its inode, offsets in order and
 * within the file, the first and last line's head where the index says), plus any line the index
 * misses (read from the history itself); the whole history is scanned only when the index does
 * not match. Tasks in `openTasks` (live again) are left out. Synchronous: a few small reads.
 */
export function loadHistory(historyPath: string, indexPath: string, openTasks: readonly { id: string }[]): Loaded {
  const file = openRegularSync(historyPath);
  if (!file) return { latest: new Map(), bad: [], torn: false, lines: 0, ino: -1, size: 0, indexStale: true };
  try {
    if (file.size > MAX_STORE_BYTES) throw new Error(`${historyPath} is over ${MAX_STORE_BYTES} bytes`);
    let entries = readIndex(indexPath, file);
    let bad: string[] = [];
    let torn = false;
    let lines = 0;
    let indexStale = false;
    if (entries) {
      // The lines the index misses: gaps between its lines, and the tail.
      const found: HistoryEntry[] = [];
      let pos = 0;
      const gap = (from: number, to: number) => {
        if (to <= from) return;
        const scan = scanHistory(preadSync(file.fd, from, to - from), from);
        found.push(...scan.entries);
        bad.push(...scan.bad);
        lines += scan.lines;
        torn ||= scan.torn && to === file.size;
        indexStale = true;
      };
      for (const e of entries) {
        gap(pos, e.offset);
        pos = e.offset + e.length + 1;
      }
      gap(pos, file.size);
      lines += entries.length;
      if (found.length > 0) entries = [...entries, ...found].sort((a, b) => a.offset - b.offset);
    } else {
      const scan = scanHistory(preadSync(file.fd, 0, file.size), 0);
      ({ entries, bad, torn, lines } = scan);
      indexStale = true;
    }
    const latest = new Map<string, HistoryEntry>();
    for (const e of entries) latest.set(e.id, e); // in file order: the newest line wins
    for (const task of openTasks) latest.delete(task.id); // live again: open.json holds it
    return { latest, bad, torn, lines, ino: file.ino, size: file.size, indexStale };
  } finally {
    closeSync(file.fd);
  }
}

/** The index's entries if it describes this history file, else undefined. */
function readIndex(indexPath: string, history: { fd: number; size: number; ino: number }): HistoryEntry[] | undefined {
  let index;
  try {
    index = openRegularSync(indexPath);
  } catch {
    return undefined;
  }
  if (!index) return undefined;
  let entries: HistoryEntry[] | undefined;
  try {
    if (index.size > MAX_STORE_BYTES) return undefined;
    entries = parseIndex(preadSync(index.fd, 0, index.size), history.ino);
  } finally {
    closeSync(index.fd);
  }
  if (!entries) return undefined;
  const last = entries.at(-1);
  if (last && last.offset + last.length >= history.size) return undefined;
  for (const e of [entries[0], last]) {
    if (!e) continue;
    const prefix = linePrefix(e);
    const at = preadSync(history.fd, e.offset, prefix.length);
    const end = preadSync(history.fd, e.offset + e.length, 1);
    if (!at.equals(prefix) || end[0] !== 0x0a) return undefined;
  }
  return entries;
}

/** Writes the index of `entries` anew (atomically). */
export async function writeIndex(indexPath: string, entries: Map<string, HistoryEntry>, ino: number): Promise<void> {
  const sorted = [...entries.values()].sort((a, b) => a.offset - b.offset);
  await writeFileAtomically(indexPath, `${[indexHeader(ino), ...sorted.map(indexLine)].join("\n")}\n`);
}
