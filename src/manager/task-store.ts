// Where a project's tasks are kept (layout 3): the directory `<plugin data dir>/<projectID>/`, 0700.
//
//   open.json      the records of tasks that are NOT settled: queued or running, or their notice not
//                  delivered yet. Small (what is going on now); rewritten whole by each save, as the
//                  version 2 task file was (store.ts: validated, atomic, locked, merged with another
//                  process's tasks, bad entries set aside).
//   history.jsonl  settled tasks (ended, notice delivered), one line each, appended when a task
//                  settles (history.ts). The newest line of a task wins.
//   history.idx    the heads of those lines with their byte offsets (history.ts): what start-up
//                  reads. Only a cache: a line it misses is read from history.jsonl, and an index
//                  that does not match is ignored and written anew.
//   dropped.jsonl  one line per task retention dropped (id, parent, child session), the newest
//                  TOMBSTONES_KEPT lines and at most TOMBSTONE_BYTES_KEPT bytes, so `resume` and
//                  `background_output` can say what happened to it.
//
// Memory holds the heads (id, parent, child, status, where the line is), not the records: a
// parent's records are read from their offsets when that parent's tasks are asked for.
//
// A save costs what is going on now, not the history: open.json plus one appended line per task
// that settled (and its index line). Start-up reads open.json, the index and the tombstones, and
// decides retention in memory; it writes nothing big. The files are rewritten by `maintain()`, run
// after start-up and again when the history grows past historyMax by HISTORY_SLACK (a process that
// runs for weeks): under the lock, it re-reads what is on disk (another process's lines too), writes
// the tombstones, copies the kept lines (no record is parsed) and a new index. The version 2 task
// file `<projectID>.json` beside the directory is moved in once, at start-up; if that fails it is
// left untouched and tried again. Once moved it is kept as `<projectID>.json.migrated` until a later
// start reads the new layout cleanly (no warning, no bad line), which removes it.
//
// Why this layout and not one file per task or a journal of every change: start-up must not read
// 20,000 files (1.3 s here) nor parse 20,000 records (0.3 s); one small file for what is live keeps
// the existing, tested rules for two processes, hostile files and crashes exactly as they were.

import { closeSync, promises as fs } from "node:fs";
import { basename, dirname, join } from "node:path";
import { storeDir } from "../store-paths.js";
import { NOFOLLOW_CREATE, removeDeadWritersTemps, writeFileAtomically } from "../atomic-file.js";
import { MAX_STORE_BYTES, SAVE_RETRY_DELAYS_MS, errorCode, freeAsideName, kindOf, readRegularBytes, readStore, serialize, sleep, withLock } from "./store.js";
import {
  type HistoryEntry,
  appendLines,
  completeLines,
  entryOfTask,
  fingerprint,
  historyLine,
  indexHeader,
  indexLine,
  isReported,
  linePrefix,
  openRegularSync,
  parseIndex,
  preadSync,
  recordOfLine,
  scanHistory,
} from "./history.js";
import { type BackgroundTask, TaskRecordSchema, isActive } from "./types.js";

/** Tombstones kept of tasks retention dropped (the file is cut back to this when it holds twice as many). */
export const TOMBSTONES_KEPT = 20_000;
/** The tombstones' bound in bytes (the file is cut back to the newest lines within it when it holds twice as much). */
export const TOMBSTONE_BYTES_KEPT = 2 * 1024 * 1024;
/** Stale lines (a newer line of the same task, or the task live again) tolerated before the history is compacted. */
const STALE_LINES_TOLERATED = 200;
/** A running process compacts the history when it holds this share of historyMax more (at least 50 tasks). */
const HISTORY_SLACK = 0.1;
const NEWLINE = Buffer.from("\n");
/** After a failed rewrite, the next one waits this long. */
const UPKEEP_RETRY_MS = 60_000;
const DAY_MS = 24 * 3600 * 1000;

export interface Retention {
  /** settled, reported tasks older than this many days are dropped */
  historyDays: number;
  /** at most this many settled tasks are kept (the oldest reported ones go first) */
  historyMax: number;
}

export interface OpenResult {
  /** the records of open.json: what was going on when the last process stopped */
  tasks: BackgroundTask[];
  warnings: string[];
  /** the child sessions of the tasks retention dropped now (their fork files can go) */
  droppedSessions: string[];
}

export interface DroppedTask {
  id: string;
  parent: string;
  session: string;
}

/** Settled: ended and its notice delivered. It leaves open.json for the history. */
export function isSettled(task: BackgroundTask): boolean {
  return !isActive(task.status) && task.notifiedRun >= task.run;
}

/** The newest tombstone lines within both bounds: TOMBSTONES_KEPT lines and TOMBSTONE_BYTES_KEPT bytes. */
function newestTombstones(lines: readonly string[]): string[] {
  let bytes = 0;
  let from = lines.length;
  while (from > 0 && lines.length - from < TOMBSTONES_KEPT) {
    const size = Buffer.byteLength(lines[from - 1]!) + 1;
    if (bytes + size > TOMBSTONE_BYTES_KEPT) break;
    bytes += size;
    from--;
  }
  return lines.slice(from);
}

/** What is on disk, read under the lock (or without it, read-only). */
interface Loaded {
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

export class TaskFiles {
  readonly dir: string;
  readonly openPath: string;
  readonly historyPath: string;
  readonly indexPath: string;
  readonly droppedPath: string;
  /** the settled tasks kept: id → the head of its newest line (a task in open.json is not here) */
  private history = new Map<string, HistoryEntry>();
  /** the history file the offsets point into, and whether history.idx describes it line for line */
  private historyIno = -1;
  private indexOk = false;
  /** lines in history.jsonl that are not a kept task's newest line (stale, bad, or to be dropped) */
  private staleLines = 0;
  private badLines: string[] = [];
  private torn = false;
  /** tasks retention dropped in memory whose tombstone and removal from the file are still to be written */
  private pendingDrops: HistoryEntry[] = [];
  /** built on first use (start-up needs neither): parent → its settled tasks, child session → task */
  private parents: Map<string, Set<string>> | undefined;
  private sessions: Map<string, string> | undefined;
  private readonly dropped = new Map<string, DroppedTask>();
  private droppedBySession: Map<string, DroppedTask> | undefined;
  private tombstoneLines = 0;
  private tombstoneBytes = 0;
  private opened = false;
  private writable = false;
  private upkeepFailedAt = -Infinity;

  constructor(
    readonly legacyPath: string,
    private readonly retention: Retention,
    private readonly now: () => number = Date.now,
  ) {
    this.dir = storeDir(legacyPath);
    this.openPath = join(this.dir, "open.json");
    this.historyPath = join(this.dir, "history.jsonl");
    this.indexPath = join(this.dir, "history.idx");
    this.droppedPath = join(this.dir, "dropped.jsonl");
  }

  get isOpen(): boolean {
    return this.opened;
  }

  /**
   * Start-up: moves the old task file in (once), reads open.json, the index and the tombstones, and
   * decides retention in memory (the files are rewritten by `maintain()`). Never throws: what cannot
   * be used is set aside with a warning, the rest loads.
   */
  async open(): Promise<OpenResult> {
    const warnings: string[] = [];
    await this.ensureDir(warnings);
    // Temp files of writers that died mid-write, any file of the directory (open.json, the history, runs.json, …)
    await removeDeadWritersTemps(this.dir);
    try {
      return await withLock(this.openPath, async () => {
        const moved = await this.migrate(warnings);
        const open = await readStore(this.openPath, true);
        if (open.cleaned) await writeFileAtomically(this.openPath, serialize(open.tasks));
        warnings.push(...open.warnings);
        await this.setAsideIfNotRegular(this.droppedPath, warnings);
        await this.setAsideIfNotRegular(this.historyPath, warnings);
        this.readDropped();
        const loaded = this.load(open.tasks);
        this.adopt(loaded);
        // A start after the move that read the new layout cleanly: the old file's copy has served its purpose.
        if (moved === "nothing to move" && warnings.length === 0 && loaded.bad.length === 0 && !loaded.torn) await this.removeMigratedCopies();
        const droppedSessions = this.dropInMemory();
        this.opened = this.writable = true;
        return { tasks: open.tasks, warnings, droppedSessions };
      });
    } catch (error) {
      // Locked by a live writer for longer than we wait, or a clean-up failed: read, touch nothing.
      warnings.push(`task store ${this.dir}: ${(error as Error).message}; read it without cleaning it up`);
      const open = await readStore(this.openPath, false).catch((e: Error) => ({
        tasks: [] as BackgroundTask[],
        warnings: [`could not read ${this.openPath}: ${e.message}`],
      }));
      warnings.push(...open.warnings);
      try {
        this.readDropped();
      } catch {
        /* no tombstones */
      }
      try {
        this.adopt(this.load(open.tasks));
        this.dropInMemory();
      } catch (e) {
        warnings.push(`could not read ${this.historyPath}: ${(e as Error).message}`);
      }
      this.pendingDrops = [];
      this.opened = true;
      return { tasks: open.tasks, warnings, droppedSessions: [] };
    }
  }

  /**
   * Saves this process's tasks: the open ones into open.json (keeping another process's), and a line
   * for each task that settled or changed since its line. Retried a few times, then thrown.
   */
  async save(tasks: readonly BackgroundTask[]): Promise<void> {
    const open: BackgroundTask[] = [];
    const settled: BackgroundTask[] = [];
    for (const task of tasks) {
      if (!isSettled(task)) open.push(task);
      else {
        const line = this.history.get(task.id);
        if (!line || fingerprint(line) !== fingerprint(task)) settled.push(task);
      }
    }
    const now = this.now();
    const lines = settled.map((t) => historyLine(t, now));
    const openIds = new Set(open.map((t) => t.id));
    const settledIds = new Set(settled.map((t) => t.id));
    let offset = -1;
    for (let attempt = 0; ; attempt++) {
      try {
        await withLock(this.openPath, async () => {
          // The line first: a crash before open.json is rewritten leaves the task in both, and open.json wins.
          const appended = await appendLines(this.historyPath, lines);
          offset = appended.offset;
          if (this.historyIno === -1) this.historyIno = appended.ino; // a new file (another ino is a rewrite by another process: historyOf reads it anew)
          const onDisk = await readStore(this.openPath, true);
          const theirs = onDisk.tasks.filter((t) => !openIds.has(t.id) && !settledIds.has(t.id));
          await writeFileAtomically(this.openPath, serialize([...theirs, ...open]));
          if (lines.length > 0) await this.afterAppend(settled, lines, now, offset);
        });
        break;
      } catch (error) {
        const delay = SAVE_RETRY_DELAYS_MS[attempt];
        if (delay === undefined) throw error;
        await sleep(delay);
      }
    }
    for (const task of open) if (this.history.has(task.id)) this.unindex(task.id);
  }

  /** Whether the files should be rewritten now: retention to write, stale lines, or the history past historyMax by the slack. */
  needsUpkeep(): boolean {
    if (!this.writable || this.now() - this.upkeepFailedAt < UPKEEP_RETRY_MS) return false;
    const slack = Math.max(50, Math.ceil(this.retention.historyMax * HISTORY_SLACK));
    return (
      this.pendingDrops.length > 0 ||
      this.badLines.length > 0 ||
      this.torn ||
      !this.indexOk ||
      this.staleLines > STALE_LINES_TOLERATED ||
      this.history.size > this.retention.historyMax + slack ||
      this.tombstoneLines > 2 * TOMBSTONES_KEPT ||
      this.tombstoneBytes > 2 * TOMBSTONE_BYTES_KEPT
    );
  }

  /**
   * Rewrites the files (after start-up, and when `needsUpkeep()` says so): under the lock, re-reads
   * what is on disk, applies retention (tombstones first), sets bad lines aside, copies the kept
   * lines to a new history file and writes its index. Returns warnings, the tasks it dropped now
   * (their lines' heads: the caller forgets the ones it still holds unchanged) and their child
   * sessions not reported by `open()`. Throws when the files could not be written (nothing is lost then).
   */
  async maintain(): Promise<{ warnings: string[]; droppedSessions: string[]; dropped: HistoryEntry[] }> {
    const warnings: string[] = [];
    const dropped: HistoryEntry[] = [];
    if (!this.writable) return { warnings, droppedSessions: [], dropped };
    const already = new Set(this.pendingDrops.map((e) => e.session));
    const droppedSessions: string[] = [];
    this.upkeepFailedAt = this.now(); // until it succeeds: a failing rewrite is not tried again at every save
    await withLock(this.openPath, async () => {
      await this.setAsideIfNotRegular(this.historyPath, warnings);
      const open = await readStore(this.openPath, false);
      const loaded = this.load(open.tasks);
      const drop = this.retentionDrops(loaded.latest.values());
      const stale = loaded.lines - loaded.latest.size;
      if (drop.length === 0 && loaded.bad.length === 0 && !loaded.torn && stale <= STALE_LINES_TOLERATED) {
        if (loaded.ino === -1) {
          // No history yet: an empty one, so the index can name it and the first lines get their index lines.
          await (await fs.open(this.historyPath, NOFOLLOW_CREATE, 0o600)).close();
          loaded.ino = (await fs.lstat(this.historyPath)).ino;
        }
        if (loaded.indexStale) await this.writeIndex(loaded.latest, loaded.ino);
        this.adopt(loaded);
        this.indexOk = true;
      } else {
        if (loaded.bad.length > 0) {
          const aside = await freeAsideName(this.historyPath);
          await writeFileAtomically(aside, JSON.stringify({ source: this.historyPath, setAsideAt: new Date().toISOString(), lines: loaded.bad }, null, 2));
          warnings.push(`set aside ${loaded.bad.length} bad line${loaded.bad.length === 1 ? "" : "s"} of ${this.historyPath} in ${aside}`);
        }
        const at = this.now();
        const tombstones = drop.map((e) => JSON.stringify([e.id, e.parent, e.session, at]));
        await appendLines(this.droppedPath, tombstones);
        this.tombstoneLines += drop.length;
        for (const line of tombstones) this.tombstoneBytes += Buffer.byteLength(line) + 1;
        for (const e of drop) {
          loaded.latest.delete(e.id);
          this.dropped.set(e.id, { id: e.id, parent: e.parent, session: e.session });
          this.droppedBySession?.set(e.session, this.dropped.get(e.id)!);
          if (e.session && !already.has(e.session)) droppedSessions.push(e.session);
          dropped.push(e);
        }
        // The kept lines, copied as bytes in file order; their new offsets.
        const bytes = await readRegularBytes(this.historyPath, MAX_STORE_BYTES);
        const kept = [...loaded.latest.values()].sort((a, b) => a.offset - b.offset);
        const parts: Buffer[] = [];
        let offset = 0;
        const moved = new Map<string, HistoryEntry>();
        for (const e of kept) {
          parts.push(bytes.subarray(e.offset, e.offset + e.length), NEWLINE);
          moved.set(e.id, { ...e, offset });
          offset += e.length + 1;
        }
        await writeFileAtomically(this.historyPath, Buffer.concat(parts, offset));
        const ino = (await fs.lstat(this.historyPath)).ino;
        this.adopt({ latest: moved, bad: [], torn: false, lines: moved.size, ino, size: offset, indexStale: true });
        await this.writeIndex(moved, ino);
        this.indexOk = true;
      }
      this.pendingDrops = [];
      if (this.tombstoneLines > 2 * TOMBSTONES_KEPT || this.tombstoneBytes > 2 * TOMBSTONE_BYTES_KEPT) await this.cutTombstones();
    });
    this.upkeepFailedAt = -Infinity;
    return { warnings, droppedSessions, dropped };
  }

  /** The settled tasks of a parent, read from their lines (a bad record is left out, with a warning). */
  historyOf(parent: string): { tasks: BackgroundTask[]; warnings: string[] } {
    const tasks: BackgroundTask[] = [];
    const warnings: string[] = [];
    const ids = [...(this.byParent().get(parent) ?? [])];
    if (ids.length === 0) return { tasks, warnings };
    let file = this.openHistory(warnings);
    if (file && file.ino !== this.historyIno) {
      // Another process rewrote the history meanwhile: read where the lines are now.
      closeSync(file.fd);
      try {
        const had = new Set(this.history.keys());
        const loaded = this.load([]);
        for (const id of loaded.latest.keys()) if (!had.has(id)) loaded.latest.delete(id); // what we had, at its new place
        this.adopt(loaded);
      } catch (error) {
        warnings.push(`could not read ${this.historyPath}: ${(error as Error).message}`);
      }
      file = this.openHistory(warnings);
    }
    try {
      for (const id of ids) {
        const entry = this.history.get(id);
        if (!entry) continue;
        let record: unknown;
        try {
          const line = file ? preadSync(file.fd, entry.offset, entry.length + 1) : Buffer.alloc(0);
          const prefix = linePrefix(entry);
          if (line.length === entry.length + 1 && line[entry.length] === 0x0a && line.subarray(0, prefix.length).equals(prefix))
            record = recordOfLine(line.subarray(0, entry.length));
        } catch {
          record = undefined;
        }
        const parsed = TaskRecordSchema.safeParse(record);
        if (parsed.success && parsed.data.id === id) tasks.push(parsed.data);
        else {
          warnings.push(`ignored the history line of task ${id} in ${this.historyPath}: its record is not a valid task`);
          this.unindex(id);
        }
      }
    } finally {
      if (file) closeSync(file.fd);
    }
    return { tasks, warnings };
  }

  /** The parent of a settled task kept in the history. */
  parentOf(id: string): string | undefined {
    return this.history.get(id)?.parent;
  }

  /** A settled task's child session, kept in the history. */
  isHistoryChild(sessionID: string): boolean {
    return this.bySession().has(sessionID);
  }

  /** The child session of a task the store knows, kept or dropped (not an orphan). */
  isKnownSession(sessionID: string): boolean {
    if (this.bySession().has(sessionID)) return true;
    if (!this.droppedBySession) {
      this.droppedBySession = new Map();
      for (const d of this.dropped.values()) if (d.session) this.droppedBySession.set(d.session, d);
    }
    return this.droppedBySession.has(sessionID);
  }

  /** A task of `parent` retention dropped, by its id (with or without "bg_") or its child session. */
  droppedTask(query: string, parent: string): DroppedTask | undefined {
    const q = query.trim().toLowerCase();
    if (!q) return undefined;
    const found = this.dropped.get(q) ?? this.dropped.get(`bg_${q}`);
    if (found) return found.parent === parent ? found : undefined;
    for (const d of this.dropped.values()) if (d.parent === parent && d.session.toLowerCase() === q) return d;
    return undefined;
  }

  // ─── reading what is on disk ───

  /**
   * The history's heads: from the index, checked against the file (its inode, offsets in order and
   * within the file, the first and last line's head where the index says), plus any line the index
   * misses (read from the history itself); the whole history is scanned only when the index does
   * not match. Tasks in `openTasks` (live again) are left out. Synchronous: a few small reads.
   */
  private load(openTasks: readonly { id: string }[]): Loaded {
    const file = openRegularSync(this.historyPath);
    if (!file) return { latest: new Map(), bad: [], torn: false, lines: 0, ino: -1, size: 0, indexStale: true };
    try {
      if (file.size > MAX_STORE_BYTES) throw new Error(`${this.historyPath} is over ${MAX_STORE_BYTES} bytes`);
      let entries = this.readIndex(file);
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
  private readIndex(history: { fd: number; size: number; ino: number }): HistoryEntry[] | undefined {
    let index;
    try {
      index = openRegularSync(this.indexPath);
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

  /** Makes what was read the store's view of the history. */
  private adopt(loaded: Loaded): void {
    this.history = loaded.latest;
    this.historyIno = loaded.ino;
    this.indexOk = !loaded.indexStale;
    this.staleLines = loaded.lines - loaded.latest.size;
    this.badLines = loaded.bad;
    this.torn = loaded.torn;
    this.parents = this.sessions = undefined;
  }

  /** Retention decided in memory: the dropped tasks leave the view now; their tombstones are written by `maintain()`. */
  private dropInMemory(): string[] {
    const drop = this.retentionDrops(this.history.values());
    for (const e of drop) {
      this.unindex(e.id);
      this.dropped.set(e.id, e); // (a head is a DroppedTask: id, parent, session)
    }
    this.droppedBySession = undefined;
    this.pendingDrops = drop;
    return drop.map((e) => e.session).filter(Boolean);
  }

  /** After a save appended `lines` at `offset`: the view and the index follow. */
  private async afterAppend(settled: readonly BackgroundTask[], lines: readonly string[], settledAt: number, offset: number): Promise<void> {
    let at = offset;
    const entries = settled.map((task, i) => {
      const length = Buffer.byteLength(lines[i]!);
      const entry = entryOfTask(task, settledAt, at, length);
      at += length + 1;
      return entry;
    });
    for (const e of entries) {
      if (this.history.has(e.id)) this.staleLines++;
      this.index(e);
    }
    if (!this.indexOk) return; // written whole by the next maintain()
    try {
      // A cache: not fsynced; a line it misses after a crash is read from the history.
      await appendLines(this.indexPath, entries.map(indexLine), false);
    } catch {
      this.indexOk = false;
    }
  }

  private async writeIndex(entries: Map<string, HistoryEntry>, ino: number): Promise<void> {
    const sorted = [...entries.values()].sort((a, b) => a.offset - b.offset);
    await writeFileAtomically(this.indexPath, `${[indexHeader(ino), ...sorted.map(indexLine)].join("\n")}\n`);
  }

  private openHistory(warnings: string[]): { fd: number; ino: number } | undefined {
    try {
      return openRegularSync(this.historyPath);
    } catch (error) {
      warnings.push(`could not read ${this.historyPath}: ${(error as Error).message}`);
      return undefined;
    }
  }

  // ─── start-up ───

  /** The store's directory, 0700; anything else at its path (a file, a symlink) is set aside. */
  private async ensureDir(warnings: string[]): Promise<void> {
    const stat = await fs.lstat(this.dir).catch(() => undefined);
    if (stat && !stat.isDirectory()) {
      const aside = await freeAsideName(this.dir);
      await fs.rename(this.dir, aside).catch(() => {});
      warnings.push(`${this.dir} is ${kindOf(stat)}, not a directory; moved it to ${aside}`);
    }
    await fs.mkdir(this.dir, { recursive: true, mode: 0o700 }).catch(() => {});
  }
  /**
   * The version 2 task file, moved in once: settled tasks to the history, the others to open.json,
   * then the old file is renamed `<file>.migrated` (removed by a later clean start:
   * removeMigratedCopies). On any failure the old file is left as it was, the warning says so, and
   * the next start tries again (repeating a half-done move duplicates nothing: the newest line of a
   * task wins, and open.json is merged by id).
   */
  private async migrate(warnings: string[]): Promise<"nothing to move" | "moved" | "left"> {
    if (!(await fs.lstat(this.legacyPath).catch(() => undefined))) return "nothing to move";
    const leftAsItWas = (what: string) =>
      `could not move the task file ${this.legacyPath} to ${this.dir}/ (${what}); it is left as it was, and moving it is tried again at the next start`;
    let legacy;
    try {
      // (bad entries are copied aside, a file that cannot be used at all is renamed aside, as before)
      legacy = await withLock(this.legacyPath, () => readStore(this.legacyPath, true));
    } catch (error) {
      warnings.push(leftAsItWas((error as Error).message));
      return "left";
    }
    warnings.push(...legacy.warnings);
    if (!(await fs.lstat(this.legacyPath).catch(() => undefined))?.isFile()) return "left"; // set aside whole
    try {
      const settled = legacy.tasks.filter(isSettled);
      const open = legacy.tasks.filter((t) => !isSettled(t));
      await appendLines(
        this.historyPath,
        settled.map((t) => historyLine(t, t.completedAt ?? t.startedAt)),
      );
      const onDisk = await readStore(this.openPath, true);
      const ids = new Set(open.map((t) => t.id));
      await writeFileAtomically(this.openPath, serialize([...onDisk.tasks.filter((t) => !ids.has(t.id)), ...open]));
      let backup = `${this.legacyPath}.migrated`;
      if (await fs.lstat(backup).catch(() => undefined)) backup = `${backup}-${Date.now()}`;
      await fs.rename(this.legacyPath, backup);
      warnings.push(
        `moved ${legacy.tasks.length} tasks from ${this.legacyPath} to ${this.dir}/; the old file is kept as ${backup} until a later start reads the new layout cleanly`,
      );
      return "moved";
    } catch (error) {
      warnings.push(leftAsItWas((error as Error).message));
      return "left";
    }
  }

  /** Removes the old task file's copies `<file>.migrated` (and `<file>.migrated-<time>`): regular files only. */
  private async removeMigratedCopies(): Promise<void> {
    const base = `${basename(this.legacyPath)}.migrated`;
    const names = await fs.readdir(dirname(this.legacyPath)).catch(() => [] as string[]);
    for (const name of names) {
      if (name !== base && !(name.startsWith(`${base}-`) && /^[0-9]+$/.test(name.slice(base.length + 1)))) continue;
      const path = join(dirname(this.legacyPath), name);
      if ((await fs.lstat(path).catch(() => undefined))?.isFile()) await fs.unlink(path).catch(() => {});
    }
  }

  /** Reads the tombstones (the newest TOMBSTONES_KEPT), all in one JSON.parse. */
  private readDropped(): void {
    const file = openRegularSync(this.droppedPath);
    if (!file) return;
    let text: string;
    try {
      if (file.size > MAX_STORE_BYTES) return;
      text = preadSync(file.fd, 0, file.size).toString("utf8");
    } finally {
      closeSync(file.fd);
    }
    const { lines } = completeLines(text);
    this.tombstoneLines = lines.length;
    this.tombstoneBytes = file.size;
    const kept = newestTombstones(lines);
    let rows: unknown[];
    try {
      rows = JSON.parse(`[${kept.join(",")}]`) as unknown[];
    } catch {
      rows = kept.map((l) => {
        try {
          return JSON.parse(l) as unknown;
        } catch {
          return undefined; // a torn or foreign line: not a tombstone
        }
      });
    }
    for (const row of rows) {
      if (!Array.isArray(row)) continue;
      const [id, parent, session] = row as unknown[];
      if (typeof id === "string" && typeof parent === "string" && typeof session === "string") this.dropped.set(id, { id, parent, session });
    }
    this.droppedBySession = undefined;
  }

  /** Cuts the tombstones back to the newest TOMBSTONES_KEPT (under the lock). */
  private async cutTombstones(): Promise<void> {
    const text = (await readRegularBytes(this.droppedPath, MAX_STORE_BYTES)).toString("utf8");
    const { lines } = completeLines(text);
    const kept = newestTombstones(lines);
    const content = kept.length ? `${kept.join("\n")}\n` : "";
    await writeFileAtomically(this.droppedPath, content);
    this.tombstoneLines = kept.length;
    this.tombstoneBytes = Buffer.byteLength(content);
  }

  /** What retention drops: reported tasks settled before the cut-off, then the oldest reported ones over the maximum. */
  private retentionDrops(entries: Iterable<HistoryEntry>): HistoryEntry[] {
    const cutoff = this.now() - this.retention.historyDays * DAY_MS;
    const drop: HistoryEntry[] = [];
    const recent: HistoryEntry[] = [];
    let count = 0;
    for (const e of entries) {
      count++;
      if (!isReported(e)) continue;
      if (e.settledAt < cutoff) drop.push(e);
      else recent.push(e);
    }
    const over = count - drop.length - this.retention.historyMax;
    if (over > 0) {
      recent.sort((a, b) => a.settledAt - b.settledAt);
      for (let i = 0; i < over && i < recent.length; i++) drop.push(recent[i]!);
    }
    return drop;
  }

  /** A file of the store that is not a regular file (a symlink, a FIFO, a directory) or is too big is set aside. */
  private async setAsideIfNotRegular(path: string, warnings: string[]): Promise<void> {
    const stat = await fs.lstat(path).catch((error) => {
      if (errorCode(error) === "ENOENT") return undefined;
      throw error;
    });
    if (!stat) return;
    const why = !stat.isFile()
      ? `is ${kindOf(stat)}, not a regular file`
      : stat.size > MAX_STORE_BYTES
        ? `is over the ${MAX_STORE_BYTES} byte limit`
        : undefined;
    if (!why) return;
    const aside = await freeAsideName(path);
    await fs.rename(path, aside);
    warnings.push(`${path} ${why}; moved it to ${aside}`);
  }

  private byParent(): Map<string, Set<string>> {
    if (!this.parents) {
      this.parents = new Map();
      for (const e of this.history.values()) this.addParent(e);
    }
    return this.parents;
  }

  private bySession(): Map<string, string> {
    if (!this.sessions) {
      this.sessions = new Map();
      for (const e of this.history.values()) if (e.session) this.sessions.set(e.session, e.id);
    }
    return this.sessions;
  }

  private addParent(entry: HistoryEntry): void {
    let ids = this.parents!.get(entry.parent);
    if (!ids) this.parents!.set(entry.parent, (ids = new Set()));
    ids.add(entry.id);
  }

  private index(entry: HistoryEntry): void {
    this.unindex(entry.id);
    this.history.set(entry.id, entry);
    if (this.parents) this.addParent(entry);
    if (this.sessions && entry.session) this.sessions.set(entry.session, entry.id);
  }

  private unindex(id: string): void {
    const entry = this.history.get(id);
    if (!entry) return;
    this.history.delete(id);
    const ids = this.parents?.get(entry.parent);
    ids?.delete(id);
    if (ids?.size === 0) this.parents!.delete(entry.parent);
    if (this.sessions?.get(entry.session) === id) this.sessions.delete(entry.session);
  }
}
