// Where a project's tasks are kept (layout 3): the directory `<plugin data dir>/<projectID>/`, 0700.
//
//   open.json      the records of tasks that are NOT settled: queued or running, or their notice not
//                  delivered yet. Small (what is going on now); rewritten whole by each save, as the
//                  version 2 task file was (store.ts: validated, atomic, locked, merged with another
//                  process's tasks, bad entries set aside).
//   history.jsonl  settled tasks (ended, notice delivered), one line each, appended when a task
//                  settles (history.ts). Start-up reads only the small head of each line; the records
//                  of a parent's tasks are parsed when that parent's tasks are asked for.
//   dropped.jsonl  one line per task retention dropped (id, parent, child session), the newest
//                  TOMBSTONES_KEPT, so `resume` and `background_output` can say what happened to it.
//
// A save costs what is going on now, not the history: open.json plus one appended line per task
// that settled. Retention (historyDays, historyMax) is applied at start-up, under the lock, by
// copying the kept lines (no record is parsed). The version 2 task file `<projectID>.json` beside the
// directory is moved in once, at start-up; if that fails it is left untouched and tried again.
//
// Why this layout and not one file per task or a journal of every change: start-up must not read
// 20,000 files (1.3 s here) nor parse 20,000 records (0.3 s); one small file for what is live keeps
// the existing, tested rules for two processes, hostile files and crashes exactly as they were.

import { promises as fs } from "node:fs";
import { basename, dirname, join } from "node:path";
import { writeFileAtomically } from "../atomic-file.js";
import {
  MAX_STORE_BYTES,
  SAVE_RETRY_DELAYS_MS,
  errorCode,
  freeAsideName,
  kindOf,
  readStore,
  removeDeadWritersTemps,
  serialize,
  sleep,
  withLock,
} from "./store.js";
import {
  type HistoryEntry,
  appendLines,
  completeLines,
  fingerprint,
  historyLine,
  isReported,
  linesBytes,
  parseHistory,
  parseHistoryLine,
  readRegularBytes,
  recordOf,
} from "./history.js";
import { type BackgroundTask, TaskRecordSchema, isActive } from "./types.js";

/** Tombstones kept of tasks retention dropped (the file is cut back to this when it holds twice as many). */
export const TOMBSTONES_KEPT = 20_000;
/** Stale lines (a newer line of the same task, or the task live again) tolerated before start-up compacts. */
const STALE_LINES_TOLERATED = 200;
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

/** `…/offshoot/<projectID>.json` (the version 2 task file) → `…/offshoot/<projectID>` */
export function storeDir(legacyPath: string): string {
  const name = basename(legacyPath, ".json");
  return join(dirname(legacyPath), name === basename(legacyPath) ? `${name}.d` : name);
}

export class TaskStore {
  readonly dir: string;
  readonly openPath: string;
  readonly historyPath: string;
  readonly droppedPath: string;
  /** the settled tasks kept: id → its newest line (a task in open.json is not here) */
  private history = new Map<string, HistoryEntry>();
  /** built on first use (start-up needs neither): parent → its settled tasks, child session → task */
  private parents: Map<string, Set<string>> | undefined;
  private sessions: Map<string, string> | undefined;
  private readonly dropped = new Map<string, DroppedTask>();
  private opened = false;

  constructor(
    readonly legacyPath: string,
    private readonly retention: Retention,
    private readonly now: () => number = Date.now,
  ) {
    this.dir = storeDir(legacyPath);
    this.openPath = join(this.dir, "open.json");
    this.historyPath = join(this.dir, "history.jsonl");
    this.droppedPath = join(this.dir, "dropped.jsonl");
  }

  get isOpen(): boolean {
    return this.opened;
  }

  /**
   * Start-up: moves the old task file in (once), reads open.json and the history's heads, applies
   * retention. Never throws: what cannot be used is set aside with a warning, the rest loads.
   */
  async open(): Promise<OpenResult> {
    const warnings: string[] = [];
    await this.ensureDir(warnings);
    for (const path of [this.openPath, this.historyPath, this.droppedPath]) await removeDeadWritersTemps(path).catch(() => {});
    try {
      return await withLock(this.openPath, async () => {
        await this.migrate(warnings);
        const open = await readStore(this.openPath, true);
        if (open.cleaned) await writeFileAtomically(this.openPath, serialize(open.tasks));
        warnings.push(...open.warnings);
        await this.readDropped(true);
        const droppedSessions = await this.readHistory(open.tasks, warnings, true);
        this.opened = true;
        return { tasks: open.tasks, warnings, droppedSessions };
      });
    } catch (error) {
      // Locked by a live writer for longer than we wait, or a clean-up failed: read, touch nothing.
      warnings.push(`task store ${this.dir}: ${(error as Error).message}; read it without cleaning it up`);
      const open = await readStore(this.openPath, false).catch((e: Error) => ({ tasks: [] as BackgroundTask[], warnings: [`could not read ${this.openPath}: ${e.message}`] }));
      warnings.push(...open.warnings);
      await this.readDropped(false).catch(() => {});
      await this.readHistory(open.tasks, warnings, false).catch((e: Error) => warnings.push(`could not read ${this.historyPath}: ${e.message}`));
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
    for (let attempt = 0; ; attempt++) {
      try {
        await withLock(this.openPath, async () => {
          // The line first: a crash before open.json is rewritten leaves the task in both, and open.json wins.
          await appendLines(this.historyPath, lines);
          const onDisk = await readStore(this.openPath, true);
          const theirs = onDisk.tasks.filter((t) => !openIds.has(t.id) && !settledIds.has(t.id));
          await writeFileAtomically(this.openPath, serialize([...theirs, ...open]));
        });
        break;
      } catch (error) {
        const delay = SAVE_RETRY_DELAYS_MS[attempt];
        if (delay === undefined) throw error;
        await sleep(delay);
      }
    }
    for (const line of lines) this.index(parseHistoryLine(line)!);
    for (const task of open) if (this.history.has(task.id)) this.unindex(task.id);
  }

  /** The settled tasks of a parent, parsed from their lines (a bad record is left out, with a warning). */
  historyOf(parent: string): { tasks: BackgroundTask[]; warnings: string[] } {
    const tasks: BackgroundTask[] = [];
    const warnings: string[] = [];
    for (const id of [...(this.byParent().get(parent) ?? [])]) {
      const entry = this.history.get(id)!;
      let record: unknown;
      try {
        record = recordOf(entry);
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

  /** The child sessions of every task the store knows, kept or dropped (none of them is an orphan). */
  knownSessions(): Set<string> {
    const known = new Set<string>();
    for (const e of this.history.values()) if (e.session) known.add(e.session);
    for (const d of this.dropped.values()) if (d.session) known.add(d.session);
    return known;
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
   * then the old file is renamed `<file>.migrated`. On any failure the old file is left as it was,
   * the warning says so, and the next start tries again (repeating a half-done move duplicates
   * nothing: the newest line of a task wins, and open.json is merged by id).
   */
  private async migrate(warnings: string[]): Promise<void> {
    if (!(await fs.lstat(this.legacyPath).catch(() => undefined))) return;
    const leftAsItWas = (what: string) =>
      `could not move the task file ${this.legacyPath} to ${this.dir}/ (${what}); it is left as it was, and moving it is tried again at the next start`;
    let legacy;
    try {
      // (bad entries are copied aside, a file that cannot be used at all is renamed aside, as before)
      legacy = await withLock(this.legacyPath, () => readStore(this.legacyPath, true));
    } catch (error) {
      warnings.push(leftAsItWas((error as Error).message));
      return;
    }
    warnings.push(...legacy.warnings);
    if (!(await fs.lstat(this.legacyPath).catch(() => undefined))?.isFile()) return; // set aside whole
    try {
      const settled = legacy.tasks.filter(isSettled);
      const open = legacy.tasks.filter((t) => !isSettled(t));
      await appendLines(this.historyPath, settled.map((t) => historyLine(t, t.completedAt ?? t.startedAt)));
      const onDisk = await readStore(this.openPath, true);
      const ids = new Set(open.map((t) => t.id));
      await writeFileAtomically(this.openPath, serialize([...onDisk.tasks.filter((t) => !ids.has(t.id)), ...open]));
      let backup = `${this.legacyPath}.migrated`;
      if (await fs.lstat(backup).catch(() => undefined)) backup = `${backup}-${Date.now()}`;
      await fs.rename(this.legacyPath, backup);
      warnings.push(`moved ${legacy.tasks.length} tasks from ${this.legacyPath} to ${this.dir}/; the old file is kept as ${backup}`);
    } catch (error) {
      warnings.push(leftAsItWas((error as Error).message));
    }
  }

  /** Reads the tombstones; with `mutate`, cuts the file back when it holds twice TOMBSTONES_KEPT. */
  private async readDropped(mutate: boolean): Promise<void> {
    const text = (await this.readStoreFile(this.droppedPath, mutate, [])).toString("utf8");
    const { lines } = completeLines(text);
    const start = Math.max(0, lines.length - TOMBSTONES_KEPT);
    for (let i = start; i < lines.length; i++) {
      try {
        const [id, parent, session] = JSON.parse(lines[i]!) as unknown[];
        if (typeof id === "string" && typeof parent === "string" && typeof session === "string") this.dropped.set(id, { id, parent, session });
      } catch {
        /* a torn or foreign line: not a tombstone */
      }
    }
    if (mutate && lines.length > 2 * TOMBSTONES_KEPT) await writeFileAtomically(this.droppedPath, `${lines.slice(start).join("\n")}\n`);
  }

  /**
   * Reads the history's heads, drops what retention says (tombstones first, then the kept lines are
   * copied to a new file), sets bad lines aside, and indexes the rest. Returns the dropped children.
   */
  private async readHistory(openTasks: readonly BackgroundTask[], warnings: string[], mutate: boolean): Promise<string[]> {
    const { entries, bad, torn, lines } = parseHistory(await this.readStoreFile(this.historyPath, mutate, warnings));
    // The newest line of each task (newest first here; written back in file order).
    const latest = new Map<string, HistoryEntry>();
    for (let i = entries.length - 1; i >= 0; i--) {
      const entry = entries[i]!;
      if (!latest.has(entry.id)) latest.set(entry.id, entry);
    }
    for (const task of openTasks) latest.delete(task.id); // live again: open.json holds it

    const drop = this.retentionDrops([...latest.values()]);
    const stale = lines - bad.length - latest.size;
    if (mutate && (drop.length > 0 || bad.length > 0 || torn || stale > STALE_LINES_TOLERATED)) {
      if (bad.length > 0) {
        const aside = await freeAsideName(this.historyPath);
        await writeFileAtomically(aside, JSON.stringify({ source: this.historyPath, setAsideAt: new Date().toISOString(), lines: bad }, null, 2));
        warnings.push(`set aside ${bad.length} bad line${bad.length === 1 ? "" : "s"} of ${this.historyPath} in ${aside}`);
      }
      const at = this.now();
      await appendLines(this.droppedPath, drop.map((e) => JSON.stringify([e.id, e.parent, e.session, at])));
      for (const e of drop) latest.delete(e.id);
      await writeFileAtomically(this.historyPath, linesBytes([...latest.values()].reverse()));
      for (const e of drop) this.dropped.set(e.id, { id: e.id, parent: e.parent, session: e.session });
    } else {
      for (const e of drop) latest.delete(e.id); // dropped at the next start that may write
    }
    this.history = latest;
    this.parents = this.sessions = undefined;
    return mutate ? drop.map((e) => e.session).filter(Boolean) : [];
  }

  /** What retention drops: reported tasks settled before the cut-off, then the oldest reported ones over the maximum. */
  private retentionDrops(entries: HistoryEntry[]): HistoryEntry[] {
    const cutoff = this.now() - this.retention.historyDays * DAY_MS;
    const drop = new Set(entries.filter((e) => isReported(e) && e.settledAt < cutoff));
    let over = entries.length - drop.size - this.retention.historyMax;
    if (over > 0) {
      const oldestFirst = entries.filter((e) => !drop.has(e) && isReported(e)).sort((a, b) => a.settledAt - b.settledAt);
      for (const e of oldestFirst) {
        if (over-- <= 0) break;
        drop.add(e);
      }
    }
    return [...drop];
  }

  /** A file of the store, read without following a symlink; one that is not a regular file, or too big, is set aside. */
  private async readStoreFile(path: string, mutate: boolean, warnings: string[]): Promise<Buffer> {
    const stat = await fs.lstat(path).catch((error) => {
      if (errorCode(error) === "ENOENT") return undefined;
      throw error;
    });
    if (!stat) return Buffer.alloc(0);
    const why = !stat.isFile() ? `is ${kindOf(stat)}, not a regular file` : stat.size > MAX_STORE_BYTES ? `is over the ${MAX_STORE_BYTES} byte limit` : undefined;
    if (why) {
      if (mutate) {
        const aside = await freeAsideName(path);
        await fs.rename(path, aside);
        warnings.push(`${path} ${why}; moved it to ${aside}`);
      } else warnings.push(`${path} ${why}; it will be set aside at the next start`);
      return Buffer.alloc(0);
    }
    return readRegularBytes(path, MAX_STORE_BYTES);
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
