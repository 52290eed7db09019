// A take's reader of blobs (take.ts): one `git cat-file --batch --filters` process per take, each
// blob as the working tree holds it; a symlink's target, and a path the batch cannot carry, read raw.

import { type ChildProcessWithoutNullStreams, execFile, spawn } from "node:child_process";
import { GitError, type PathState as BlobRef } from "./git.js";

/**
 * Reads blobs as the working tree holds them (git's smudge filters and end-of-line conversion
 * applied for their path) through ONE `git cat-file --batch --filters` process, one request at a
 * time; a symlink's blob (its target) is read raw, as is a path with a newline (the batch input is
 * line-based).
 */
export class BlobReader {
  private child: ChildProcessWithoutNullStreams | undefined;
  private buffer: Buffer = Buffer.alloc(0);
  private waiting: (() => void) | undefined;
  private failed: Error | undefined;

  constructor(private readonly repo: string) {}

  async read(path: string, state: BlobRef): Promise<Buffer> {
    if (state.mode === "120000" || path.includes("\n")) return rawBlob(this.repo, path, state);
    const child = this.start();
    child.stdin.write(`${state.blob} ${path}\n`);
    const header = await this.take((buf) => {
      const end = buf.indexOf(0x0a);
      return end < 0 ? undefined : end + 1;
    });
    const [, type, size] = header.toString("utf8").trim().split(" ");
    if (type !== "blob" || size === undefined) throw new GitError(`git cat-file could not read ${state.blob} (${path}): ${header.toString("utf8").trim()}`);
    const length = Number(size);
    const body = await this.take((buf) => (buf.length >= length + 1 ? length + 1 : undefined));
    return body.subarray(0, length);
  }

  close(): void {
    this.child?.stdin.end();
    this.child = undefined;
  }

  private start(): ChildProcessWithoutNullStreams {
    if (this.child) return this.child;
    const child = spawn("git", ["cat-file", "--batch", "--filters"], {
      cwd: this.repo,
      env: { ...process.env, GIT_TERMINAL_PROMPT: "0", LC_ALL: "C" },
      windowsHide: true,
    });
    child.stdout.on("data", (chunk: Buffer) => {
      this.buffer = this.buffer.length ? Buffer.concat([this.buffer, chunk]) : chunk;
      this.waiting?.();
    });
    const fail = (error: Error) => {
      this.failed ??= error;
      this.waiting?.();
    };
    child.on("error", (error) => fail(new GitError(`git cat-file could not run: ${error.message}`)));
    child.on("exit", () => fail(new GitError("git cat-file --batch stopped")));
    child.stdin.on("error", (error) => fail(new GitError(`git cat-file --batch: ${error.message}`)));
    this.child = child;
    return child;
  }

  /** Waits until `complete(buffer)` says how many bytes make the next item; returns them. */
  private async take(complete: (buf: Buffer) => number | undefined): Promise<Buffer> {
    for (;;) {
      const n = complete(this.buffer);
      if (n !== undefined) {
        const out = this.buffer.subarray(0, n);
        this.buffer = this.buffer.subarray(n);
        return out;
      }
      if (this.failed) throw this.failed;
      await new Promise<void>((resolve) => (this.waiting = resolve));
      this.waiting = undefined;
    }
  }
}

/** One blob, raw (a symlink's target), by its own git process. */
export function rawBlob(repo: string, path: string, state: BlobRef): Promise<Buffer> {
  const args = state.mode === "120000" ? ["cat-file", "blob", state.blob] : ["cat-file", "--filters", `--path=${path}`, state.blob];
  return new Promise((done, fail) => {
    execFile(
      "git",
      args,
      { cwd: repo, encoding: "buffer", maxBuffer: 1024 * 1024 * 1024, env: { ...process.env, GIT_TERMINAL_PROMPT: "0", LC_ALL: "C" } },
      (error, stdout, stderr) => {
        if (error) fail(new GitError(`git cat-file ${state.blob} failed: ${String(stderr).trim() || error.message}`));
        else done(stdout);
      },
    );
  });
}
