// The history file: tasks that are settled (ended, and their notice delivered), one line each in
// `history.jsonl`, appended when a task settles and never rewritten by a save. A line is
//
//   [settledAt,"bg_…","<parent>","<child>","<status>",run,notifiedRun,reportedRun]<TAB>{the task record}
//
// The head (a small JSON array: a raw tab never occurs inside JSON) says which task, of which parent
// and child, settled when, reported or not; start-up reads the heads from the index (history.idx,
// below), or scans the file for them when the index does not match. The record is read from the
// line's offset only when a parent's tasks are asked for (task-files.ts). The newest line of a task wins.
// Appends go through one write() with O_APPEND under the task lock; a line cut by a crash (no
// newline at the end) is ignored, and the next append starts on a new line.

import { closeSync, constants, fstatSync, openSync, promises as fs, readSync } from "node:fs";
import { NOFOLLOW_CREATE } from "../atomic-file.js";
import type { BackgroundTask } from "../task-record.js";

export interface HistoryEntry {
  settledAt: number;
  id: string;
  parent: string;
  session: string;
  status: string;
  run: number;
  notifiedRun: number;
  reportedRun: number;
  /** a worktree task's worktree state when the line was written ("kept", "kept, taken", "no changes", "discarded", "taken"); "" without one */
  worktree: string;
  /** where the line starts in history.jsonl (bytes) and its length without the newline: the record is read from there when asked for */
  offset: number;
  length: number;
}

/** The line of a settled task (without the newline). */
export function historyLine(task: BackgroundTask, settledAt: number): string {
  const head = [settledAt, task.id, task.parentSessionID, task.sessionID, task.status, task.run, task.notifiedRun, task.reportedRun];
  // (a 9th element only for worktree tasks: a discard changes a settled task, and must be written)
  if (task.worktree) head.push(worktreeStateOf(task));
  return `${JSON.stringify(head)}\t${JSON.stringify(task)}`;
}

/** The entry of a task whose line was just written at `offset`. */
export function entryOfTask(task: BackgroundTask, settledAt: number, offset: number, length: number): HistoryEntry {
  return {
    settledAt,
    id: task.id,
    parent: task.parentSessionID,
    session: task.sessionID,
    status: task.status,
    run: task.run,
    notifiedRun: task.notifiedRun,
    reportedRun: task.reportedRun,
    worktree: worktreeStateOf(task),
    offset,
    length,
  };
}

/** The entry of a line, from its parsed head; undefined when it is not one of ours. */
function entryOf(head: unknown, offset: number, length: number): HistoryEntry | undefined {
  if (!Array.isArray(head) || head.length < 8) return undefined;
  const [settledAt, id, parent, session, status, run, notifiedRun, reportedRun, worktree] = head as unknown[];
  const str = (v: unknown) => typeof v === "string" && v.length > 0 && v.length <= 200;
  const num = (v: unknown) => typeof v === "number" && Number.isFinite(v) && v >= 0;
  if (!num(settledAt) || !str(id) || !str(parent) || typeof session !== "string" || !str(status) || !num(run) || !num(notifiedRun) || !num(reportedRun))
    return undefined;
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
    offset,
    length,
  };
}

const utf8 = (raw: string) => Buffer.from(raw, "latin1").toString("utf8");
const NON_ASCII = /[\x80-\xff]/;

/** Parses many small JSON texts in one JSON.parse (line by line if one of them is bad). */
function parseMany(texts: readonly string[]): unknown[] {
  try {
    const joined = texts.join(",");
    const all = JSON.parse(`[${NON_ASCII.test(joined) ? utf8(joined) : joined}]`) as unknown;
    if (Array.isArray(all) && all.length === texts.length) return all;
  } catch {
    /* one bad text: one by one */
  }
  return texts.map((t) => {
    try {
      return JSON.parse(NON_ASCII.test(t) ? utf8(t) : t) as unknown;
    } catch {
      return undefined;
    }
  });
}

export interface Scan {
  /** the lines of ours, in file order, with their absolute offsets */
  entries: HistoryEntry[];
  /** the lines that are not ours (as text) */
  bad: string[];
  /** the bytes end with a line cut by a crash (no newline) */
  torn: boolean;
  /** complete lines seen */
  lines: number;
}

/**
 * The entries of some bytes of a history file that start at a line start (`base`: their offset in
 * the file), without parsing any record: each line's head only. The bytes are scanned as a one-byte
 * string (latin1: one char per byte, so offsets are byte offsets). A last line without its newline
 * (a torn write) is left out; lines that are not ours are returned as `bad`.
 */
export function scanHistory(buf: Buffer, base = 0): Scan {
  const text = buf.toString("latin1");
  const heads: string[] = [];
  const spans: number[] = [];
  const bad: string[] = [];
  let pos = 0;
  for (;;) {
    const nl = text.indexOf("\n", pos);
    if (nl < 0) break;
    if (nl > pos) {
      const tab = text.indexOf("\t", pos);
      if (tab > pos && tab < nl && text.charCodeAt(pos) === 0x5b /* [ */) {
        heads.push(text.slice(pos, tab));
        spans.push(pos, nl - pos);
      } else bad.push(utf8(text.slice(pos, nl)));
    }
    pos = nl + 1;
  }
  const parsed = parseMany(heads);
  const entries: HistoryEntry[] = [];
  for (let i = 0; i < heads.length; i++) {
    const entry = entryOf(parsed[i], base + spans[2 * i]!, spans[2 * i + 1]!);
    if (entry) entries.push(entry);
    else bad.push(utf8(text.slice(spans[2 * i]!, spans[2 * i]! + spans[2 * i + 1]!)));
  }
  return { entries, bad, torn: pos < text.length, lines: entries.length + bad.length };
}

// ─── the index: history.idx ───
//
// The heads of history.jsonl with where each line is, so start-up reads ~150 bytes per task instead
// of ~1 KB and parses them in one JSON.parse. The first line names the history file it describes
// (its inode: a rewrite of the history makes a new file); then one line per history line,
//
//   [offset,length,settledAt,"bg_…","<parent>","<child>","<status>",run,notifiedRun,reportedRun(,"<worktree state>")]
//
// It is only a cache: history.jsonl is the truth. Lines are appended after the history's (not
// fsynced); a history line the index misses (a crash between the two appends, another process) is
// read from history.jsonl itself, and an index that does not match is ignored and written anew.

export function indexHeader(ino: number): string {
  return JSON.stringify({ offshootHistoryIndex: 1, ino });
}

export function indexLine(e: HistoryEntry): string {
  const row: unknown[] = [e.offset, e.length, e.settledAt, e.id, e.parent, e.session, e.status, e.run, e.notifiedRun, e.reportedRun];
  if (e.worktree) row.push(e.worktree); // (worktree tasks only, as in the history line's head)
  return JSON.stringify(row);
}

/** The index's entries in file order, or undefined when it is not a usable index of the history file `ino`. */
export function parseIndex(buf: Buffer, ino: number): HistoryEntry[] | undefined {
  const text = buf.toString("utf8");
  const nl = text.indexOf("\n");
  if (nl < 0 || !text.endsWith("\n")) return undefined; // empty, or a line cut by a crash
  let header: { offshootHistoryIndex?: unknown; ino?: unknown };
  let rows: unknown;
  try {
    header = JSON.parse(text.slice(0, nl)) as typeof header;
    if (header?.offshootHistoryIndex !== 1 || header.ino !== ino) return undefined;
    // every line is one JSON array: the lines joined by commas are one JSON array of them
    rows = JSON.parse(`[${text.slice(nl + 1, -1).replaceAll("\n", ",")}]`);
  } catch {
    return undefined;
  }
  if (!Array.isArray(rows)) return undefined;
  const entries: HistoryEntry[] = new Array(rows.length);
  let end = 0;
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i] as unknown[];
    if (!Array.isArray(row) || (row.length !== 10 && row.length !== 11)) return undefined;
    const [offset, length, settledAt, id, parent, session, status, run, notifiedRun, reportedRun, worktree = ""] = row;
    if (
      typeof offset !== "number" ||
      !Number.isSafeInteger(offset) ||
      offset < end ||
      typeof length !== "number" ||
      !Number.isSafeInteger(length) ||
      length <= 0 ||
      typeof settledAt !== "number" ||
      !(settledAt >= 0) ||
      typeof id !== "string" ||
      id.length === 0 ||
      id.length > 200 ||
      typeof parent !== "string" ||
      parent.length === 0 ||
      parent.length > 200 ||
      typeof session !== "string" ||
      typeof status !== "string" ||
      status.length === 0 ||
      status.length > 200 ||
      typeof run !== "number" ||
      !(run >= 0) ||
      typeof notifiedRun !== "number" ||
      !(notifiedRun >= 0) ||
      typeof reportedRun !== "number" ||
      !(reportedRun >= 0) ||
      typeof worktree !== "string" ||
      worktree.length > 200
    )
      return undefined;
    entries[i] = { settledAt, id, parent, session, status, run, notifiedRun, reportedRun, worktree, offset, length };
    end = offset + length + 1;
  }
  return entries;
}

/** The bytes a line must start with (its head up to the id): to check an offset still points at it. */
export function linePrefix(e: HistoryEntry): Buffer {
  return Buffer.from(`[${JSON.stringify(e.settledAt)},${JSON.stringify(e.id)},`, "utf8");
}

/** The record part of a line's bytes (parsed, not validated). */
export function recordOfLine(line: Buffer): unknown {
  const tab = line.indexOf(0x09);
  return JSON.parse(line.toString("utf8", tab + 1));
}

/** What a save compares to know whether a settled task changed since its line was written. */
export function fingerprint(t: BackgroundTask | HistoryEntry): string {
  return `${t.status}|${t.run}|${t.notifiedRun}|${t.reportedRun}|${worktreeStateOf(t)}`;
}

function worktreeStateOf(t: BackgroundTask | HistoryEntry): string {
  if (typeof t.worktree === "string") return t.worktree;
  // (a take that kept the worktree changes the task too: "kept, taken" is written again)
  return t.worktree ? (t.worktree.removed ?? (t.worktree.takenAt !== undefined ? "kept, taken" : "kept")) : "";
}

/** Reported: nothing is owed to the parent for it any more, so retention may drop it. */
export function isReported(entry: HistoryEntry): boolean {
  return entry.reportedRun >= entry.run && entry.notifiedRun >= entry.run;
}

/**
 * Appends lines (each without its newline) to a regular file, in one write, then fsyncs (unless
 * `sync` is false: a cache). Never follows a symlink (O_NOFOLLOW); a file cut by a crash gets a
 * newline first, so its torn last line stays alone. Returns the offset of the first line and the
 * file's inode. Call it
 * under the task lock.
 */
export async function appendLines(path: string, lines: readonly string[], sync = true): Promise<{ offset: number; ino: number }> {
  if (lines.length === 0) return { offset: -1, ino: -1 };
  let handle: fs.FileHandle;
  try {
    handle = await fs.open(path, constants.O_RDWR | constants.O_APPEND | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    handle = await fs.open(path, (NOFOLLOW_CREATE & ~constants.O_WRONLY) | constants.O_RDWR | constants.O_APPEND, 0o600);
  }
  try {
    const stat = await handle.stat();
    if (!stat.isFile()) throw new Error(`${path} is not a regular file`);
    let text = `${lines.join("\n")}\n`;
    let offset = stat.size;
    if (stat.size > 0) {
      const last = Buffer.alloc(1);
      await handle.read(last, 0, 1, stat.size - 1);
      if (last[0] !== 0x0a) {
        text = `\n${text}`;
        offset += 1;
      }
    }
    await handle.write(text);
    if (sync) await handle.sync();
    return { offset, ino: stat.ino };
  } finally {
    await handle.close();
  }
}

const NOFOLLOW_READ = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;

/** An open regular file for reading (no symlink followed, no FIFO blocked on), or undefined if there is none. */
export function openRegularSync(path: string): { fd: number; size: number; ino: number } | undefined {
  let fd: number;
  try {
    fd = openSync(path, NOFOLLOW_READ);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
  const stat = fstatSync(fd);
  if (!stat.isFile()) {
    closeSync(fd);
    throw new Error(`${path} is not a regular file`);
  }
  return { fd, size: stat.size, ino: stat.ino };
}

/** `length` bytes at `offset` (fewer at the end of the file). */
export function preadSync(fd: number, offset: number, length: number): Buffer {
  const buffer = Buffer.allocUnsafe(length);
  let filled = 0;
  while (filled < length) {
    const n = readSync(fd, buffer, filled, length - filled, offset + filled);
    if (n === 0) break;
    filled += n;
  }
  return buffer.subarray(0, filled);
}

/** Splits a file's text into complete lines; a last line without its newline (a torn write) is left out. */
export function completeLines(text: string): { lines: string[]; torn: boolean } {
  if (text.length === 0) return { lines: [], torn: false };
  const parts = text.split("\n");
  const last = parts.pop()!;
  return { lines: parts.filter((l) => l.length > 0), torn: last.length > 0 };
}
