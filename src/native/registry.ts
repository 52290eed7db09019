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

type Entry = { rootSessionID: string; json?: string };

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

  /** Registers a fork launched now (its snapshot as JSON); the hooks find it before its first request. */
  register(childSessionID: string, rootSessionID: string, json: string): void {
    this.absent.delete(childSessionID);
    this.entries.set(childSessionID, { rootSessionID, json });
    this.touch(childSessionID);
  }

  async persist(childSessionID: string, parentSessionID: string, rootSessionID: string, snapshot: Pick<Snapshot, "parts">, now: number): Promise<void> {
    await this.store.write({ childSessionID, parentSessionID, rootSessionID, createdAt: now }, snapshot.parts);
  }

  find(sessionID: string): Promise<NativeFork | undefined> {
    const entry = this.entries.get(sessionID);
    if (entry?.json !== undefined) {
      this.touch(sessionID);
      return Promise.resolve(forkOf(entry.rootSessionID, entry.json));
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

  private touch(sessionID: string): void {
    this.loaded.delete(sessionID);
    this.loaded.set(sessionID, true);
    while (this.loaded.size > LOADED_MAX) {
      const oldest = this.loaded.keys().next().value as string;
      this.loaded.delete(oldest);
      const entry = this.entries.get(oldest);
      if (entry) entry.json = undefined;
    }
  }
}
