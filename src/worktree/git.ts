// The git runner: one `git` process per call, arguments as an array (never a shell), output
// collected whole. A missing git binary is a clear error, never a silent nothing.

import { execFile } from "node:child_process";

export interface GitResult {
  code: number;
  stdout: string;
  stderr: string;
}

export class GitError extends Error {}

/** Runs git in `cwd`; resolves with its exit code and output (a missing git throws GitError). */
export function runGit(args: string[], options: { cwd: string; env?: Record<string, string> }): Promise<GitResult> {
  return new Promise((resolve, reject) => {
    execFile(
      "git",
      args,
      {
        cwd: options.cwd,
        // no prompts, no pager, no user's hooks changing what we see
        env: { ...process.env, GIT_TERMINAL_PROMPT: "0", GIT_PAGER: "cat", LC_ALL: "C", ...options.env },
        maxBuffer: 64 * 1024 * 1024,
        windowsHide: true,
      },
      (error, stdout, stderr) => {
        const e = error as (NodeJS.ErrnoException & { code?: unknown }) | null;
        if (e && e.code === "ENOENT") return reject(new GitError("git is not installed (no `git` on PATH)"));
        if (e && typeof e.code !== "number") return reject(new GitError(`git ${args[0]} could not run: ${e.message}`));
        resolve({ code: e ? (e.code as unknown as number) : 0, stdout: String(stdout), stderr: String(stderr) });
      },
    );
  });
}

/** Runs git and returns its trimmed stdout; a non-zero exit throws GitError with git's own message. */
export async function git(args: string[], options: { cwd: string; env?: Record<string, string> }): Promise<string> {
  const result = await runGit(args, options);
  if (result.code !== 0)
    throw new GitError(`git ${args.slice(0, 2).join(" ")} failed: ${(result.stderr || result.stdout).trim() || `exit code ${result.code}`}`);
  return result.stdout.trim();
}

/** A path's state on one side: a blob and its mode ("100644", "100755", "120000"), or absent. */
export interface PathState {
  mode: string;
  blob: string;
}

export interface PathChange {
  path: string;
  before: PathState | null;
  after: PathState | null;
}

const ZERO = /^0+$/;

/** `git diff-tree -r -z` raw output: ":<old mode> <new mode> <old blob> <new blob> <status>\0<path>\0". */
export function parseRawDiff(raw: string): PathChange[] {
  const fields = raw.split("\0");
  const out: PathChange[] = [];
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const head = fields[i]!;
    if (!head.startsWith(":")) break;
    const [oldMode, newMode, oldBlob, newBlob] = head.slice(1).split(" ");
    const path = fields[i + 1]!;
    out.push({
      path,
      before: ZERO.test(oldMode!) ? null : { mode: oldMode!, blob: oldBlob! },
      after: ZERO.test(newMode!) ? null : { mode: newMode!, blob: newBlob! },
    });
  }
  return out;
}
