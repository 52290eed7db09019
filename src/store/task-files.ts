// The store of one project's tasks (TaskFiles): start-up (open), saves, a parent's history read on
// demand, and the upkeep that rewrites the files (maintain). The layout and why: README.md here.

import { closeSync, promises as fs } from "node:fs";
import { join } from "node:path";
import { storeDir } from "../store-paths.js";
import { NOFOLLOW_CREATE, removeDeadWritersTemps, writeFileAtomically } from "../atomic-file.js";
import { MAX_STORE_BYTES, freeAsideName, readStore, serialize } from "./task-list-file.js";
import { errorCode, kindOf, readRegularBytes } from "./fs-read.js";
import { withLock, withLockRetried } from "./lock.js";
import {
  type HistoryEntry,
  appendLines,
  entryOfTask,
  fingerprint,
  historyLine,
  indexLine,
  linePrefix,
  openRegularSync,
  preadSync,
  recordOfLine,
} from "./history.js";
import { type BackgroundTask, TaskRecordSchema } from "../task-record.js";
import { type Retention, isSettled, retentionDrops } from "./retention.js";
import { type DroppedTask, Tombstones } from "./tombstones.js";
import { moveLegacyFile, removeMigratedCopies } from "./migration.js";
import { type Loaded, loadHistory, writeIndex } from "./history-index.js";

/** Stale lines (a newer line of the same task, or the task live again) tolerated before the history is compacted. */
const STALE_LINES_TOLERATED = 200;
/** A running process compacts the history when it holds this share of historyMax more (at least 50 tasks). */
const HISTORY_SLACK = 0.1;
const NEWLINE = Buffer.from("\n");
/** After a failed rewrite, the next one waits this long. */
const UPKEEP_RETRY_MS = 60_000;

export interface OpenResult {
  /** the records of open.json: what was going on when the last process stopped */
  tasks: BackgroundTask[];
  warnings: string[];
  /** the child sessions of the tasks retention dropped now (their fork files can go) */
  droppedSessions: string[];
}

/** One save's content (TaskFiles.snapshot). */
interface SaveSnapshot {
  open: BackgroundTask[];
  lines: string[];
  heads: HistoryEntry[];
  openIds: Set<string>;
  settledIds: Set<string>;
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
  private readonly tombstones: Tombstones;
  /** open() ran: the files may be rewritten (maintain), under the lock */
  private opened = false;
  /** open() could not tidy (the lock was held by a live writer, or a clean-up failed): maintain() owes it */
  private tidyOwed = false;
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
    this.tombstones = new Tombstones(this.droppedPath);
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
        const moved = await moveLegacyFile(this, warnings);
        const open = await readStore(this.openPath, true);
        if (open.cleaned) await writeFileAtomically(this.openPath, serialize(open.tasks));
        warnings.push(...open.warnings);
        await this.setAsideIfNotRegular(this.droppedPath, warnings);
        await this.setAsideIfNotRegular(this.historyPath, warnings);
        this.tombstones.read();
        const loaded = loadHistory(this.historyPath, this.indexPath, open.tasks);
        this.adopt(loaded);
        // A start after the move that read the new layout cleanly: the old file's copy has served its purpose.
        if (moved === "nothing to move" && warnings.length === 0 && loaded.bad.length === 0 && !loaded.torn) await removeMigratedCopies(this.legacyPath);
        const droppedSessions = this.dropInMemory();
        this.opened = true;
        return { tasks: open.tasks, warnings, droppedSessions };
      });
    } catch (error) {
      // Locked by a live writer for longer than we wait, or a clean-up failed: read, touch nothing now.
      warnings.push(`task store ${this.dir}: ${(error as Error).message}; read it without cleaning it up`);
      const open = await readStore(this.openPath, false).catch((e: Error) => ({
        tasks: [] as BackgroundTask[],
        warnings: [`could not read ${this.openPath}: ${e.message}`],
      }));
      warnings.push(...open.warnings);
      try {
        this.tombstones.read();
      } catch {
        /* no tombstones */
      }
      try {
        this.adopt(loadHistory(this.historyPath, this.indexPath, open.tasks));
        this.dropInMemory();
      } catch (e) {
        warnings.push(`could not read ${this.historyPath}: ${(e as Error).message}`);
      }
      this.pendingDrops = [];
      // The tidying is owed, not given up: the first upkeep (after a save, under the lock, re-reading
      // everything) does it once the writer is done, and reports the child sessions of what it drops.
      this.opened = this.tidyOwed = true;
      return { tasks: open.tasks, warnings, droppedSessions: [] };
    }
  }

  /**
   * Saves this process's tasks: the open ones into open.json (keeping another process's), and a line
   * for each task that settled or changed since its line. Retried a few times, then thrown.
   *
   * The tasks are taken as they are now; given as a function, they are taken (once) holding the lock,
   * just before the files are written: a save that waited for the lock, or for its turns of a busy
   * event loop, then writes every change made meanwhile (the manager's waiting save shares itself
   * until then: TaskManager.save).
   */
  async save(tasks: readonly BackgroundTask[] | (() => readonly BackgroundTask[])): Promise<void> {
    let taken = typeof tasks === "function" ? undefined : this.snapshot(tasks);
    let offset = -1;
    await withLockRetried(this.openPath, async () => {
      const onDisk = await readStore(this.openPath, true);
      const { open, lines, heads, openIds, settledIds } = (taken ??= this.snapshot((tasks as () => readonly BackgroundTask[])()));
      // The line first: a crash before open.json is rewritten leaves the task in both, and open.json wins.
      const appended = await appendLines(this.historyPath, lines);
      offset = appended.offset;
      if (this.historyIno === -1) this.historyIno = appended.ino; // a new file (another ino is a rewrite by another process: historyOf reads it anew)
      const theirs = onDisk.tasks.filter((t) => !openIds.has(t.id) && !settledIds.has(t.id));
      await writeFileAtomically(this.openPath, serialize([...theirs, ...open]));
      if (lines.length > 0) await this.afterAppend(heads, offset);
    });
    for (const task of taken!.open) if (this.history.has(task.id)) this.unindex(task.id);
  }

  /**
   * What a save writes, taken at one instant: the tasks are live objects, and one can change while the
   * save awaits (a discard marks its worktree removed). A head taken after the write would describe a
   * state no line holds, and the next save would think that state already written.
   */
  private snapshot(tasks: readonly BackgroundTask[]): SaveSnapshot {
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
    const heads = settled.map((t, i) => entryOfTask(t, now, 0, Buffer.byteLength(lines[i]!)));
    return { open, lines, heads, openIds: new Set(open.map((t) => t.id)), settledIds: new Set(settled.map((t) => t.id)) };
  }

  /** Whether the files should be rewritten now: retention to write, stale lines, or the history past historyMax by the slack. */
  needsUpkeep(): boolean {
    if (!this.opened || this.now() - this.upkeepFailedAt < UPKEEP_RETRY_MS) return false;
    const slack = Math.max(50, Math.ceil(this.retention.historyMax * HISTORY_SLACK));
    return (
      this.tidyOwed ||
      this.pendingDrops.length > 0 ||
      this.badLines.length > 0 ||
      this.torn ||
      !this.indexOk ||
      this.staleLines > STALE_LINES_TOLERATED ||
      this.history.size > this.retention.historyMax + slack ||
      this.tombstones.overBounds
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
    if (!this.opened) return { warnings, droppedSessions: [], dropped };
    const already = new Set(this.pendingDrops.map((e) => e.session));
    const droppedSessions: string[] = [];
    this.upkeepFailedAt = this.now(); // until it succeeds: a failing rewrite is not tried again at every save
    await withLock(this.openPath, async () => {
      await this.setAsideIfNotRegular(this.historyPath, warnings);
      const open = await readStore(this.openPath, false);
      const loaded = loadHistory(this.historyPath, this.indexPath, open.tasks);
      const drop = retentionDrops(loaded.latest.values(), this.retention, this.now());
      const stale = loaded.lines - loaded.latest.size;
      if (drop.length === 0 && loaded.bad.length === 0 && !loaded.torn && stale <= STALE_LINES_TOLERATED) {
        if (loaded.ino === -1) {
          // No history yet: an empty one, so the index can name it and the first lines get their index lines.
          await (await fs.open(this.historyPath, NOFOLLOW_CREATE, 0o600)).close();
          loaded.ino = (await fs.lstat(this.historyPath)).ino;
        }
        if (loaded.indexStale) await writeIndex(this.indexPath, loaded.latest, loaded.ino);
        this.adopt(loaded);
        this.indexOk = true;
      } else {
        if (loaded.bad.length > 0) {
          const aside = await freeAsideName(this.historyPath);
          await writeFileAtomically(aside, JSON.stringify({ source: this.historyPath, setAsideAt: new Date().toISOString(), lines: loaded.bad }, null, 2));
          warnings.push(`set aside ${loaded.bad.length} bad line${loaded.bad.length === 1 ? "" : "s"} of ${this.historyPath} in ${aside}`);
        }
        const at = this.now();
        await this.tombstones.append(drop, at);
        for (const e of drop) {
          loaded.latest.delete(e.id);
          this.tombstones.add({ id: e.id, parent: e.parent, session: e.session });
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
        await writeIndex(this.indexPath, moved, ino);
        this.indexOk = true;
      }
      this.pendingDrops = [];
      if (this.tombstones.overBounds) await this.tombstones.cut();
      this.tidyOwed = false;
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
        const loaded = loadHistory(this.historyPath, this.indexPath, []);
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
    return this.bySession().has(sessionID) || this.tombstones.hasSession(sessionID);
  }

  /** A task of `parent` retention dropped, by its id (with or without "bg_") or its child session. */
  droppedTask(query: string, parent: string): DroppedTask | undefined {
    return this.tombstones.find(query, parent);
  }

  // ─── reading what is on disk ───

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
    const drop = retentionDrops(this.history.values(), this.retention, this.now());
    for (const e of drop) {
      this.unindex(e.id);
      this.tombstones.add(e); // (a head is a DroppedTask: id, parent, session)
    }
    this.pendingDrops = drop;
    return drop.map((e) => e.session).filter(Boolean);
  }

  /** After a save appended `lines` at `offset`: the view and the index follow. */
  /** The appended lines' heads (taken with the lines) get their offsets and enter the index. */
  private async afterAppend(heads: readonly HistoryEntry[], offset: number): Promise<void> {
    let at = offset;
    const entries = heads.map((head) => {
      const entry = { ...head, offset: at };
      at += head.length + 1;
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
