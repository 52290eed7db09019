// The history file: tasks that are settled (ended, and their notice delivered), one line each in
// `history.jsonl`, appended when a task settles and never rewritten by a save. A line is
//
//   [settledAt,"bg_…","<parent>","<child>","<status>",run,notifiedRun,reportedRun]<TAB>{the task record}
//
// The head (a small JSON array: a raw tab never occurs inside JSON) is all start-up reads: which
// tasks there are, of which parent and child, settled when, reported or not. The record is parsed
// only when a parent's tasks are asked for (task-store.ts). The newest line of a task wins.
// Appends go through one write() with O_APPEND under the task lock; a line cut by a crash (no
// newline at the end) is ignored, and the next append starts on a new line.

import { constants, promises as fs } from "node:fs";
import { NOFOLLOW_CREATE } from "../atomic-file.js";
import type { BackgroundTask } from "./types.js";

export interface HistoryEntry {
  settledAt: number;
  id: string;
  parent: string;
  session: string;
  status: string;
  run: number;
  notifiedRun: number;
  reportedRun: number;
  /** a worktree task's worktree state when the line was written ("kept", "no changes", "discarded"); "" without one */
  worktree: string;
  /** the line's bytes as a one-byte (latin1) string, without its newline: cheap to slice and to write back */
  raw: string;
}

/** The line of a settled task (without the newline). */
export function historyLine(task: BackgroundTask, settledAt: number): string {
  const head = [settledAt, task.id, task.parentSessionID, task.sessionID, task.status, task.run, task.notifiedRun, task.reportedRun];
  // (a 9th element only for worktree tasks: a discard changes a settled task, and must be written)
  if (task.worktree) head.push(worktreeStateOf(task));
  return `${JSON.stringify(head)}\t${JSON.stringify(task)}`;
}

/** The entry of a line, from its parsed head; undefined when it is not one of ours. */
function entryOf(head: unknown, raw: string): HistoryEntry | undefined {
  if (!Array.isArray(head) || head.length < 8) return undefined;
  const [settledAt, id, parent, session, status, run, notifiedRun, reportedRun, worktree] = head as unknown[];
  const str = (v: unknown) => typeof v === "string" && v.length > 0 && v.length <= 200;
  const num = (v: unknown) => typeof v === "number" && Number.isFinite(v) && v >= 0;
  if (!num(settledAt) || !str(id) || !str(parent) || typeof session !== "string" || !str(status) || !num(run) || !num(notifiedRun) || !num(reportedRun)) return undefined;
  return {
    settledAt: settledAt as number,
    id: id as string,
    parent: parent as string,
    session: session as string,
    status: status as string,
    run: run as number,
    notifiedRun: notifiedRun as number,
    reportedRun: reportedRun as number,
    worktree: typeof worktree === "string" ? worktree : "",
    raw,
  };
}

/** One line (a string, as a save writes it). */
export function parseHistoryLine(line: string): HistoryEntry | undefined {
  return parseHistory(Buffer.from(`${line}\n`)).entries[0];
}

const utf8 = (raw: string) => Buffer.from(raw, "latin1").toString("utf8");

/**
 * The entries of a history file's bytes, in file order, without parsing any record: each line's
 * head only (all heads in one JSON.parse; line by line if that fails). The bytes are scanned as a
 * one-byte string (latin1: one char per byte, so nothing is decoded twice); a head with other than
 * ASCII in it is decoded as UTF-8. A last line without its newline (a torn write) is left out;
 * lines that are not ours are returned as `bad`.
 */
export function parseHistory(buf: Buffer): { entries: HistoryEntry[]; bad: string[]; torn: boolean; lines: number } {
  const text = buf.toString("latin1");
  const lines: string[] = [];
  const heads: string[] = [];
  const bad: string[] = [];
  let pos = 0;
  for (;;) {
    const nl = text.indexOf("\n", pos);
    if (nl < 0) break;
    if (nl > pos) {
      const tab = text.indexOf("\t", pos);
      if (tab > pos && tab < nl && text.charCodeAt(pos) === 0x5b /* [ */) {
        lines.push(text.slice(pos, nl));
        heads.push(text.slice(pos, tab));
      } else bad.push(utf8(text.slice(pos, nl)));
    }
    pos = nl + 1;
  }
  const decode = (head: string) => (/[\x80-\xff]/.test(head) ? utf8(head) : head);
  let parsed: unknown[] | undefined;
  try {
    const joined = heads.join(",");
    const all = JSON.parse(`[${/[\x80-\xff]/.test(joined) ? utf8(joined) : joined}]`) as unknown;
    if (Array.isArray(all) && all.length === lines.length) parsed = all;
  } catch {
    /* one bad head: line by line */
  }
  parsed ??= heads.map((h) => {
    try {
      return JSON.parse(decode(h)) as unknown;
    } catch {
      return undefined;
    }
  });
  const entries: HistoryEntry[] = [];
  for (let i = 0; i < lines.length; i++) {
    const entry = entryOf(parsed[i], lines[i]!);
    if (entry) entries.push(entry);
    else bad.push(utf8(lines[i]!));
  }
  return { entries, bad, torn: pos < text.length, lines: entries.length + bad.length };
}

/** The record part of a line (parsed, not validated). */
export function recordOf(entry: HistoryEntry): unknown {
  return JSON.parse(utf8(entry.raw.slice(entry.raw.indexOf("\t") + 1)));
}

/** The bytes of lines (each without its newline), ready to be written. */
export function linesBytes(entries: readonly HistoryEntry[]): Buffer {
  return entries.length ? Buffer.from(`${entries.map((e) => e.raw).join("\n")}\n`, "latin1") : Buffer.alloc(0);
}

/** What a save compares to know whether a settled task changed since its line was written. */
export function fingerprint(t: BackgroundTask | HistoryEntry): string {
  return `${t.status}|${t.run}|${t.notifiedRun}|${t.reportedRun}|${worktreeStateOf(t)}`;
}

function worktreeStateOf(t: BackgroundTask | HistoryEntry): string {
  if (typeof t.worktree === "string") return t.worktree;
  return t.worktree ? (t.worktree.removed ?? "kept") : "";
}

/** Reported: nothing is owed to the parent for it any more, so retention may drop it. */
export function isReported(entry: HistoryEntry): boolean {
  return entry.reportedRun >= entry.run && entry.notifiedRun >= entry.run;
}

/**
 * Appends lines (each without its newline) to a regular file, in one write, then fsyncs. Never
 * follows a symlink (O_NOFOLLOW); a file cut by a crash gets a newline first, so its torn last line
 * stays alone. Call it under the task lock.
 */
export async function appendLines(path: string, lines: readonly string[]): Promise<void> {
  if (lines.length === 0) return;
  let handle: fs.FileHandle;
  try {
    handle = await fs.open(path, constants.O_WRONLY | constants.O_APPEND | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    handle = await fs.open(path, NOFOLLOW_CREATE | constants.O_APPEND, 0o600);
  }
  try {
    const stat = await handle.stat();
    if (!stat.isFile()) throw new Error(`${path} is not a regular file`);
    let text = `${lines.join("\n")}\n`;
    if (stat.size > 0) {
      const last = Buffer.alloc(1);
      const reader = await fs.open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
      try {
        await reader.read(last, 0, 1, stat.size - 1);
      } finally {
        await reader.close();
      }
      if (last[0] !== 0x0a) text = `\n${text}`;
    }
    await handle.write(text);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Reads a regular file as bytes without following a symlink (nor blocking on a FIFO), at most `max` bytes. */
export async function readRegularBytes(path: string, max: number): Promise<Buffer> {
  const handle = await fs.open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  try {
    const stat = await handle.stat();
    if (!stat.isFile()) throw new Error(`${path} is not a regular file`);
    if (stat.size > max) throw new Error(`${path} is over ${max} bytes`);
    const buffer = Buffer.allocUnsafe(stat.size);
    let filled = 0;
    while (filled < buffer.length) {
      const { bytesRead } = await handle.read(buffer, filled, buffer.length - filled, filled);
      if (bytesRead === 0) break;
      filled += bytesRead;
    }
    return buffer.subarray(0, filled);
  } finally {
    await handle.close();
  }
}

/** Splits a file's text into complete lines; a last line without its newline (a torn write) is left out. */
export function completeLines(text: string): { lines: string[]; torn: boolean } {
  if (text.length === 0) return { lines: [], torn: false };
  const parts = text.split("\n");
  const last = parts.pop()!;
  return { lines: parts.filter((l) => l.length > 0), torn: last.length > 0 };
}
