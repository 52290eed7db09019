// Which sessions are native forks, and what they inherit: in memory for forks launched by this
// process, from the fork files for the others (after a restart). The hooks see only `NativeForkLookup`.

import type { SessionMessage } from "../fork/types.js";
import type { Snapshot } from "./snapshot.js";
import { ForkStore } from "./store.js";

export interface NativeFork {
  rootSessionID: string;
  /** A fresh copy of the parent's request messages, exactly as snapshotted (the caller may change it). */
  messages(): SessionMessage[];
}

/** The narrow view the hooks depend on. */
export interface NativeForkLookup {
  find(sessionID: string): Promise<NativeFork | undefined>;
}

/** Snapshots kept in memory at once; others are read from their file again when needed. */
const LOADED_MAX = 4;
/** Sessions known not to be forks; the set is dropped when it grows past this (re-read on demand). */
const ABSENT_MAX = 10_000;

/**
 * `snapshot`: a fork launched by this process (serialised on first use); `json`: what was read back;
 * `unwritten`: launched here and its file not written yet (persist), so its snapshot is all there is.
 */
type Entry = { rootSessionID: string; json?: string; snapshot?: Pick<Snapshot, "json">; unwritten?: boolean };

function forkOf(rootSessionID: string, json: string): NativeFork {
  return { rootSessionID, messages: () => JSON.parse(json) as SessionMessage[] };
}

export class NativeForkRegistry implements NativeForkLookup {
  private readonly entries = new Map<string, Entry>();
  private readonly absent = new Set<string>();
  /** child ids whose snapshot is in memory, oldest use first */
  private readonly loaded = new Map<string, true>();
  private readonly reading = new Map<string, Promise<NativeFork | undefined>>();

  constructor(readonly store: ForkStore) {}

  /**
   * Registers a fork launched now; the hooks find it before its first request. Its snapshot is
   * serialised when first needed (its first request, or persist), never here.
   */
  register(childSessionID: string, rootSessionID: string, snapshot: Pick<Snapshot, "json">): void {
    this.absent.delete(childSessionID);
    this.entries.set(childSessionID, { rootSessionID, snapshot, unwritten: true });
    this.touch(childSessionID);
  }

  /**
   * Writes the fork file (for a restart). Launches run it after the child's prompt went out, off the
   * tool call's path (manager/launch/launcher.ts persistNativeFork); until it is written the snapshot stays
   * in memory whatever LOADED_MAX says.
   */
  persist(childSessionID: string, parentSessionID: string, rootSessionID: string, snapshot: Pick<Snapshot, "parts">, now: number): Promise<void> {
    const written = () => {
      const entry = this.entries.get(childSessionID);
      if (entry?.unwritten) entry.unwritten = false;
      this.touch(childSessionID, false);
    };
    const writing = this.store.write({ childSessionID, parentSessionID, rootSessionID, createdAt: now }, snapshot.parts);
    writing.then(written, written);
    return writing;
  }

  find(sessionID: string): Promise<NativeFork | undefined> {
    const entry = this.entries.get(sessionID);
    const json = entry?.json ?? entry?.snapshot?.json;
    if (entry && json !== undefined) {
      this.touch(sessionID);
      return Promise.resolve(forkOf(entry.rootSessionID, json));
    }
    if (!entry && this.absent.has(sessionID)) return Promise.resolve(undefined);
    const pending = this.reading.get(sessionID);
    if (pending) return pending;
    const read = this.load(sessionID).finally(() => this.reading.delete(sessionID));
    this.reading.set(sessionID, read);
    return read;
  }

  /** The child is gone (deleted, or its launch failed): forget it and remove its file. */
  async forget(childSessionID: string): Promise<void> {
    this.entries.delete(childSessionID);
    this.loaded.delete(childSessionID);
    await this.store.remove(childSessionID);
  }

  private async load(sessionID: string): Promise<NativeFork | undefined> {
    const stored = await this.store.read(sessionID);
    if (!stored) {
      if (!this.entries.has(sessionID)) this.markAbsent(sessionID);
      return undefined;
    }
    const json = JSON.stringify(stored.messages);
    this.entries.set(sessionID, { rootSessionID: stored.rootSessionID, json });
    this.touch(sessionID);
    return forkOf(stored.rootSessionID, json);
  }

  private markAbsent(sessionID: string): void {
    if (this.absent.size >= ABSENT_MAX) this.absent.clear();
    this.absent.add(sessionID);
  }

  /** `used`: the snapshot was just used (it becomes the newest); else only the limit is applied. */
  private touch(sessionID: string, used = true): void {
    if (used) {
      this.loaded.delete(sessionID);
      this.loaded.set(sessionID, true);
    }
    if (this.loaded.size <= LOADED_MAX) return;
    // The oldest snapshots go, except those whose file is not written yet (they are all there is).
    for (const oldest of [...this.loaded.keys()]) {
      if (this.loaded.size <= LOADED_MAX) break;
      const entry = this.entries.get(oldest);
      if (entry?.unwritten) continue;
      this.loaded.delete(oldest);
      if (entry) {
        entry.json = undefined;
        entry.snapshot = undefined;
      }
    }
  }
}
