// One file per native child: <plugin data dir>/forks/<projectID>/<childSessionID>.json, beside the
// task file <plugin data dir>/<projectID>.json (per project: sessions are looked up per project),
// mode 0600, written atomically (temp file created exclusively, then renamed over the target, so a
// symlink planted at either name is never followed), read without following symlinks.

import { constants, promises as fs } from "node:fs";
import { basename, dirname, join } from "node:path";
import { writeFileAtomically } from "../atomic-file.js";
import type { SessionMessage } from "../fork/types.js";

export interface StoredFork {
  version: 1;
  childSessionID: string;
  parentSessionID: string;
  /** the session whose cache key and affinity headers the child's requests carry */
  rootSessionID: string;
  createdAt: number;
  messages: SessionMessage[];
}

const SAFE_ID = /^[A-Za-z0-9_-]{1,200}$/;

/** `…/offshoot/<projectID>.json` → `…/offshoot/forks/<projectID>` */
export function forksDir(taskStorePath: string): string {
  return join(dirname(taskStorePath), "forks", basename(taskStorePath, ".json"));
}

export class ForkStore {
  constructor(readonly dir: string) {}

  /** Undefined for ids that cannot be file names (never a path outside the directory). */
  pathOf(childSessionID: string): string | undefined {
    return SAFE_ID.test(childSessionID) ? join(this.dir, `${childSessionID}.json`) : undefined;
  }

  /** Writes the fork file; `messagesJson` is the already serialised snapshot (not serialised twice). */
  async write(fork: Omit<StoredFork, "messages" | "version">, messagesJson: string): Promise<void> {
    const path = this.pathOf(fork.childSessionID);
    if (!path) throw new Error(`not a session id: ${fork.childSessionID}`);
    const head = JSON.stringify({ version: 1, ...fork });
    const content = `${head.slice(0, -1)},"messages":${messagesJson}}`;
    await writeFileAtomically(path, content);
  }

  /** The fork file, or undefined when there is none (or it is not a regular file, or unreadable). */
  async read(childSessionID: string): Promise<StoredFork | undefined> {
    const path = this.pathOf(childSessionID);
    if (!path) return undefined;
    let handle: fs.FileHandle;
    try {
      handle = await fs.open(path, constants.O_RDONLY | constants.O_NOFOLLOW);
    } catch {
      return undefined;
    }
    try {
      if (!(await handle.stat()).isFile()) return undefined;
      const parsed = JSON.parse(await handle.readFile("utf8")) as StoredFork;
      if (parsed?.version !== 1 || parsed.childSessionID !== childSessionID || !Array.isArray(parsed.messages) || typeof parsed.rootSessionID !== "string") {
        return undefined;
      }
      return parsed;
    } catch {
      return undefined;
    } finally {
      await handle.close();
    }
  }

  async exists(childSessionID: string): Promise<boolean> {
    const path = this.pathOf(childSessionID);
    if (!path) return false;
    const stat = await fs.lstat(path).catch(() => undefined);
    return Boolean(stat?.isFile());
  }

  async remove(childSessionID: string): Promise<void> {
    const path = this.pathOf(childSessionID);
    if (path) await fs.rm(path, { force: true });
  }
}
