// One way to write a file that is never seen half-written: a temp file beside it (created with
// O_EXCL | O_NOFOLLOW, mode 0600), fsync, then rename over the target (which replaces a symlink
// there instead of following it). The directory is made 0700 if missing.

import { randomBytes } from "node:crypto";
import { constants, promises as fs } from "node:fs";
import { dirname } from "node:path";

/** Flags that create a new file and never follow a symlink at its path. */
export const NOFOLLOW_CREATE = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

export async function writeFileAtomically(path: string, content: string | Uint8Array): Promise<void> {
  await fs.mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const temp = `${path}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
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
