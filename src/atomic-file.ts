// One way to write a file that is never seen half-written: a temp file beside it (created with
// O_EXCL | O_NOFOLLOW, mode 0600), fsync, then rename over the target (which replaces a symlink
// there instead of following it). The directory is made 0700 if missing. A writer killed between the
// temp file and the rename leaves `<file>.<pid>.<hex>.tmp`: removeDeadWritersTemps sweeps those of
// dead processes at start-up (a live process's write in progress is left alone).

import { randomBytes } from "node:crypto";
import { constants, promises as fs } from "node:fs";
import { dirname, join } from "node:path";
import { processState } from "./process-state.js";

/** Flags that create a new file and never follow a symlink at its path. */
export const NOFOLLOW_CREATE = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

const TEMP_RANDOM_BYTES = 4;
const HEX = /^[0-9a-f]+$/;
const DIGITS = /^[0-9]+$/;

/** The writer's pid of a temp file name `<file>.<pid>.<hex>.tmp` this module made, or undefined. */
export function tempWriter(name: string): number | undefined {
  const parts = name.split(".");
  if (parts.length < 4 || parts.at(-1) !== "tmp") return undefined;
  const [pid, hex] = [parts.at(-3)!, parts.at(-2)!];
  if (!DIGITS.test(pid) || hex.length !== 2 * TEMP_RANDOM_BYTES || !HEX.test(hex)) return undefined;
  return Number(pid);
}

/**
 * Removes the temp files in `dir` (of files whose name starts with `prefix`) left by writers that
 * died mid-write; a live writer's temp file is its write in progress and stays. Returns how many
 * went. Never throws (a directory that cannot be read has nothing removed).
 */
export async function removeDeadWritersTemps(dir: string, prefix = ""): Promise<number> {
  let removed = 0;
  const names = await fs.readdir(dir).catch(() => [] as string[]);
  for (const name of names) {
    if (!name.startsWith(prefix)) continue;
    const pid = tempWriter(name);
    if (pid === undefined || processState(pid) !== "dead") continue;
    const path = join(dir, name);
    const stat = await fs.lstat(path).catch(() => undefined);
    if (!stat?.isFile()) continue;
    if (
      await fs.unlink(path).then(
        () => true,
        () => false,
      )
    )
      removed++;
  }
  return removed;
}

export async function writeFileAtomically(path: string, content: string | Uint8Array): Promise<void> {
  await fs.mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const temp = `${path}.${process.pid}.${randomBytes(TEMP_RANDOM_BYTES).toString("hex")}.tmp`;
  try {
    const handle = await fs.open(temp, NOFOLLOW_CREATE, 0o600);
    try {
      await handle.writeFile(content);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await fs.rename(temp, path);
  } catch (error) {
    await fs.rm(temp, { force: true }).catch(() => {});
    throw error;
  }
}
