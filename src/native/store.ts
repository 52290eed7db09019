// Fork files, stored once per parent. In the project's store directory (`…/offshoot/<projectID>/`):
//
//   forks/<childSessionID>.json         a small manifest per native child: its parent, its root, and
//                                        the segments its inherited messages are made of, in order
//   forks/segments/<sha256>.json        a run of messages (a JSON array), named by the hash of its
//                                        content, shared by every fork that inherits it
//
// A fork of a parent that was forked before reuses the segments of the parent's last fork that are a
// prefix of its own messages (compared message by message, by hash) and writes one segment with the
// rest: ten forks of one parent store about one copy of its conversation. A segment no manifest
// names is removed by the sweep after start-up (sweep.ts), once it is older than SEGMENT_GRACE_MS.
// Everything is mode 0600, written atomically (temp file created exclusively, renamed over the target,
// so a symlink planted at a name is never followed), read without following symlinks.
//
// The version 1 fork files (`…/offshoot/forks/<projectID>/<child>.json`, the whole snapshot per
// child) are read as they are until the sweep has moved them in (migrateLegacy).

import { createHash } from "node:crypto";
import { constants, promises as fs } from "node:fs";
import { basename, dirname, join } from "node:path";
import { writeFileAtomically } from "../atomic-file.js";
import type { SessionMessage } from "../fork/types.js";
import { storeDir } from "../store-paths.js";

export interface StoredFork {
  childSessionID: string;
  parentSessionID: string;
  /** the session whose cache key and affinity headers the child's requests carry */
  rootSessionID: string;
  createdAt: number;
  messages: SessionMessage[];
}

interface Manifest {
  version: 2;
  childSessionID: string;
  parentSessionID: string;
  rootSessionID: string;
  createdAt: number;
  segments: string[];
}

/** A segment of a parent's last fork: its name and the hash of each message in it. */
interface Segment {
  name: string;
  hashes: string[];
}

const SAFE_ID = /^[A-Za-z0-9_-]{1,200}$/;
const SEGMENT_NAME = /^[0-9a-f]{64}$/;
/** An unnamed segment younger than this may belong to a fork being written: the sweep leaves it. */
export const SEGMENT_GRACE_MS = 10 * 60 * 1000;
/** Parents whose last fork's segments are remembered (for the next fork of the same parent). */
const PARENTS_REMEMBERED = 64;

/** `…/offshoot/<projectID>.json` → `…/offshoot/<projectID>/forks` */
export function forksDir(taskStorePath: string): string {
  return join(storeDir(taskStorePath), "forks");
}

/** Where version 1 fork files were: `…/offshoot/forks/<projectID>` */
export function legacyForksDir(taskStorePath: string): string {
  return join(dirname(taskStorePath), "forks", basename(taskStorePath, ".json"));
}

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

async function readNoFollow(path: string): Promise<string | undefined> {
  let handle: fs.FileHandle;
  try {
    handle = await fs.open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  try {
    if (!(await handle.stat()).isFile()) return undefined;
    return await handle.readFile("utf8");
  } catch {
    return undefined;
  } finally {
    await handle.close();
  }
}

export class ForkStore {
  readonly segmentsDir: string;
  private readonly lastOfParent = new Map<string, Segment[]>();

  constructor(
    readonly dir: string,
    readonly legacyDir?: string,
  ) {
    this.segmentsDir = join(dir, "segments");
  }

  /** Undefined for ids that cannot be file names (never a path outside the directory). */
  pathOf(childSessionID: string): string | undefined {
    return SAFE_ID.test(childSessionID) ? join(this.dir, `${childSessionID}.json`) : undefined;
  }

  private legacyPathOf(childSessionID: string): string | undefined {
    return this.legacyDir && SAFE_ID.test(childSessionID) ? join(this.legacyDir, `${childSessionID}.json`) : undefined;
  }

  /** Writes the fork: the segments it does not share with its parent's last fork, then its manifest. */
  async write(fork: Omit<StoredFork, "messages">, parts: readonly string[]): Promise<void> {
    const path = this.pathOf(fork.childSessionID);
    if (!path) throw new Error(`not a session id: ${fork.childSessionID}`);
    const hashes = parts.map(sha256);
    const segments: Segment[] = [];
    let at = 0;
    for (const segment of this.lastOfParent.get(fork.parentSessionID) ?? []) {
      const n = segment.hashes.length;
      if (at + n > hashes.length || segment.hashes.some((h, i) => h !== hashes[at + i])) break;
      if (!(await fs.lstat(join(this.segmentsDir, `${segment.name}.json`)).catch(() => undefined))?.isFile()) break;
      segments.push(segment);
      at += n;
    }
    if (at < parts.length) {
      const content = `[${parts.slice(at).join(",")}]`;
      const segment = { name: sha256(content), hashes: hashes.slice(at) };
      const file = join(this.segmentsDir, `${segment.name}.json`);
      if (!(await fs.lstat(file).catch(() => undefined))?.isFile()) {
        await fs.mkdir(this.segmentsDir, { recursive: true, mode: 0o700 });
        await writeFileAtomically(file, content);
      }
      segments.push(segment);
    }
    const { childSessionID, parentSessionID, rootSessionID, createdAt } = fork;
    const manifest: Manifest = { version: 2, childSessionID, parentSessionID, rootSessionID, createdAt, segments: segments.map((s) => s.name) };
    await writeFileAtomically(path, JSON.stringify(manifest));
    this.lastOfParent.delete(fork.parentSessionID);
    this.lastOfParent.set(fork.parentSessionID, segments);
    if (this.lastOfParent.size > PARENTS_REMEMBERED) this.lastOfParent.delete(this.lastOfParent.keys().next().value as string);
  }

  /** The fork, or undefined when there is none (or a file of it is not a regular file, or unreadable). */
  async read(childSessionID: string): Promise<StoredFork | undefined> {
    const path = this.pathOf(childSessionID);
    if (!path) return undefined;
    const manifest = await this.readManifest(childSessionID);
    if (manifest) {
      const bodies: string[] = [];
      for (const name of manifest.segments) {
        const text = await readNoFollow(join(this.segmentsDir, `${name}.json`));
        if (text === undefined || text[0] !== "[" || text.at(-1) !== "]") return undefined;
        if (text.length > 2) bodies.push(text.slice(1, -1));
      }
      try {
        const messages = JSON.parse(`[${bodies.join(",")}]`) as SessionMessage[];
        const { segments: _s, version: _v, ...rest } = manifest;
        return { ...rest, messages };
      } catch {
        return undefined;
      }
    }
    return this.readLegacy(childSessionID);
  }

  private async readManifest(childSessionID: string): Promise<Manifest | undefined> {
    const text = await readNoFollow(this.pathOf(childSessionID)!);
    if (text === undefined) return undefined;
    try {
      const m = JSON.parse(text) as Manifest;
      const ok =
        m?.version === 2 &&
        m.childSessionID === childSessionID &&
        typeof m.rootSessionID === "string" &&
        typeof m.parentSessionID === "string" &&
        Array.isArray(m.segments) &&
        m.segments.every((s) => typeof s === "string" && SEGMENT_NAME.test(s));
      return ok ? m : undefined;
    } catch {
      return undefined;
    }
  }

  /** A version 1 fork file (the whole snapshot), not moved in yet. */
  private async readLegacy(childSessionID: string): Promise<StoredFork | undefined> {
    const path = this.legacyPathOf(childSessionID);
    const text = path ? await readNoFollow(path) : undefined;
    if (text === undefined) return undefined;
    try {
      const parsed = JSON.parse(text) as StoredFork & { version?: number };
      if (parsed?.version !== 1 || parsed.childSessionID !== childSessionID || !Array.isArray(parsed.messages) || typeof parsed.rootSessionID !== "string")
        return undefined;
      const { version: _v, ...fork } = parsed;
      return fork;
    } catch {
      return undefined;
    }
  }

  async exists(childSessionID: string): Promise<boolean> {
    for (const path of [this.pathOf(childSessionID), this.legacyPathOf(childSessionID)]) {
      if (path && (await fs.lstat(path).catch(() => undefined))?.isFile()) return true;
    }
    return false;
  }

  /** Removes the child's manifest (and a version 1 file); its segments go with the next sweep if nothing else names them. */
  async remove(childSessionID: string): Promise<void> {
    for (const path of [this.pathOf(childSessionID), this.legacyPathOf(childSessionID)]) if (path) await fs.rm(path, { force: true });
  }

  /** The children that have a manifest. */
  async children(): Promise<string[]> {
    const names = await fs.readdir(this.dir).catch(() => [] as string[]);
    return names.filter((n) => n.endsWith(".json") && SAFE_ID.test(n.slice(0, -5))).map((n) => n.slice(0, -5));
  }

  /**
   * Moves the version 1 fork files in: each is written as segments and a manifest, then removed.
   * One that cannot be moved stays as it was (and is still read); returns what happened.
   */
  async migrateLegacy(): Promise<{ moved: number; failed: string[] }> {
    const result = { moved: 0, failed: [] as string[] };
    if (!this.legacyDir) return result;
    const names = await fs.readdir(this.legacyDir).catch(() => [] as string[]);
    const forks: { name: string; id: string; fork: StoredFork }[] = [];
    for (const name of names) {
      const id = name.endsWith(".json") ? name.slice(0, -5) : "";
      if (!SAFE_ID.test(id)) continue;
      const fork = await this.readLegacy(id);
      if (fork) forks.push({ name, id, fork });
      else result.failed.push(`${name} (not a readable fork file)`);
    }
    // In the order they were taken (a parent's forks grow), so each shares its parent's earlier forks.
    forks.sort((a, b) => a.fork.createdAt - b.fork.createdAt || a.fork.messages.length - b.fork.messages.length);
    for (const { name, id, fork } of forks) {
      try {
        if (!(await this.readManifest(id)))
          await this.write(
            fork,
            fork.messages.map((m) => JSON.stringify(m)),
          );
        await fs.rm(join(this.legacyDir, name), { force: true });
        result.moved++;
      } catch (error) {
        result.failed.push(`${name} (${(error as Error).message})`);
      }
    }
    if (result.moved > 0 && result.failed.length === 0) await fs.rmdir(this.legacyDir).catch(() => {});
    return result;
  }

  /** Removes segments no manifest names (older than SEGMENT_GRACE_MS); returns how many. */
  async removeUnusedSegments(now = Date.now()): Promise<number> {
    const used = new Set<string>();
    for (const id of await this.children()) for (const name of (await this.readManifest(id))?.segments ?? []) used.add(name);
    let removed = 0;
    for (const file of await fs.readdir(this.segmentsDir).catch(() => [] as string[])) {
      const name = file.endsWith(".json") ? file.slice(0, -5) : "";
      if (!SEGMENT_NAME.test(name) || used.has(name)) continue;
      const path = join(this.segmentsDir, file);
      const stat = await fs.lstat(path).catch(() => undefined);
      if (!stat?.isFile() || now - stat.mtimeMs < SEGMENT_GRACE_MS) continue;
      await fs.rm(path, { force: true });
      removed++;
    }
    return removed;
  }
}
