// Reading a store file safely: a regular file only (a symlink is never followed, a FIFO never
// blocks), at most `max` bytes; and the small helpers the store's files share.

import { constants, promises as fs, type Stats } from "node:fs";

const NOFOLLOW_READ = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;

export async function readRegularBytes(path: string, max: number): Promise<Buffer> {
  const handle = await fs.open(path, NOFOLLOW_READ);
  try {
    const stat = await handle.stat();
    if (!stat.isFile()) throw new Error(`it is ${kindOf(stat)}`);
    if (stat.size > max) throw new Error(`it is over ${max} bytes`);
    const buffer = Buffer.allocUnsafe(stat.size);
    let filled = 0;
    while (filled < buffer.length) {
      const { bytesRead } = await handle.read(buffer, filled, buffer.length - filled, filled);
      if (bytesRead === 0) break;
      filled += bytesRead;
    }
    return buffer.subarray(0, filled);
  } finally {
    await handle.close();
  }
}

/** The same, as UTF-8 text. */
export async function readRegularFile(path: string, max: number): Promise<string> {
  return (await readRegularBytes(path, max)).toString("utf8");
}

export function kindOf(stat: Stats): string {
  if (stat.isDirectory()) return "a directory";
  if (stat.isSymbolicLink()) return "a symbolic link";
  if (stat.isFIFO()) return "a FIFO";
  if (stat.isSocket()) return "a socket";
  if (stat.isFile()) return "a file";
  return "a device";
}

export function errorCode(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | undefined)?.code;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
