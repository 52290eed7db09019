// Tombstones: `dropped.jsonl`, one line `[id, parent, child session, droppedAt]` per task retention
// dropped (retention.ts), so `resume` and `background_output` of one can say it is past the history
// limit and name its child session, and start-up does not take its child for an orphan. Bounded in
// count and in bytes: the newest TOMBSTONES_KEPT lines within TOMBSTONE_BYTES_KEPT are read, and the
// file is cut back to them (under the store's lock) when it holds twice as many lines or bytes.

import { closeSync } from "node:fs";
import { writeFileAtomically } from "../atomic-file.js";
import { appendLines, completeLines, openRegularSync, preadSync } from "./history.js";
import { MAX_STORE_BYTES } from "./task-list-file.js";
import { readRegularBytes } from "./fs-read.js";

/** Tombstones kept of tasks retention dropped (the file is cut back to this when it holds twice as many). */
export const TOMBSTONES_KEPT = 20_000;
/** The tombstones' bound in bytes (the file is cut back to the newest lines within it when it holds twice as much). */
export const TOMBSTONE_BYTES_KEPT = 2 * 1024 * 1024;

export interface DroppedTask {
  id: string;
  parent: string;
  session: string;
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

export class Tombstones {
  private readonly dropped = new Map<string, DroppedTask>();
  /** ids whose line is in the file (read, or appended by this process); `dropped` also holds those only decided in memory */
  private readonly written = new Set<string>();
  /** built on first use: child session → its tombstone */
  private bySession: Map<string, DroppedTask> | undefined;
  private lines = 0;
  private bytes = 0;

  constructor(readonly path: string) {}

  /** Reads the tombstones (the newest within the bounds), all in one JSON.parse. */
  read(): void {
    const file = openRegularSync(this.path);
    if (!file) return;
    let text: string;
    try {
      if (file.size > MAX_STORE_BYTES) return;
      text = preadSync(file.fd, 0, file.size).toString("utf8");
    } finally {
      closeSync(file.fd);
    }
    const { lines } = completeLines(text);
    this.lines = lines.length;
    this.bytes = file.size;
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
      if (typeof id === "string" && typeof parent === "string" && typeof session === "string") {
        this.dropped.set(id, { id, parent, session });
        this.written.add(id);
      }
    }
    this.bySession = undefined;
  }

  /** A task retention dropped, known from now on (its line is written by `append`). */
  add(task: DroppedTask): void {
    this.dropped.set(task.id, task);
    this.bySession?.set(task.session, task);
  }

  /**
   * Writes the tombstones of `tasks` (under the store's lock), but not one already in the file: a
   * rewrite that a crash cut short after its tombstones (maintain writes them first) is done again
   * at the next start, and would write them twice.
   */
  async append(tasks: readonly DroppedTask[], at: number): Promise<void> {
    const lines = tasks.filter((e) => !this.written.has(e.id)).map((e) => JSON.stringify([e.id, e.parent, e.session, at]));
    await appendLines(this.path, lines);
    for (const e of tasks) this.written.add(e.id);
    this.lines += lines.length;
    for (const line of lines) this.bytes += Buffer.byteLength(line) + 1;
  }

  /** The file holds twice the bounds: `cut()` is due. */
  get overBounds(): boolean {
    return this.lines > 2 * TOMBSTONES_KEPT || this.bytes > 2 * TOMBSTONE_BYTES_KEPT;
  }

  /** Cuts the file back to the newest lines within the bounds (under the store's lock). */
  async cut(): Promise<void> {
    const text = (await readRegularBytes(this.path, MAX_STORE_BYTES)).toString("utf8");
    const { lines } = completeLines(text);
    const kept = newestTombstones(lines);
    const content = kept.length ? `${kept.join("\n")}\n` : "";
    await writeFileAtomically(this.path, content);
    this.lines = kept.length;
    this.bytes = Buffer.byteLength(content);
  }

  /** Whether a dropped task ran in this child session. */
  hasSession(sessionID: string): boolean {
    if (!this.bySession) {
      this.bySession = new Map();
      for (const d of this.dropped.values()) if (d.session) this.bySession.set(d.session, d);
    }
    return this.bySession.has(sessionID);
  }

  /** A task of `parent` retention dropped, by its id (with or without "bg_") or its child session. */
  find(query: string, parent: string): DroppedTask | undefined {
    const q = query.trim().toLowerCase();
    if (!q) return undefined;
    const found = this.dropped.get(q) ?? this.dropped.get(`bg_${q}`);
    if (found) return found.parent === parent ? found : undefined;
    for (const d of this.dropped.values()) if (d.parent === parent && d.session.toLowerCase() === q) return d;
    return undefined;
  }
}
