// Which git a take needs, checked when a take starts: it merges with `git merge-tree --write-tree`
// (and its -z, --name-only and --no-messages), which came with git 2.38. An older git would fail in
// the middle of the take with git's own usage text; the check refuses first, naming both versions.

import { runGit } from "./git.js";
import { gitTooOldForTake } from "./git-version.txt.js";

/** The oldest git a take works with: [major, minor]. */
export const TAKE_NEEDS_GIT: readonly [number, number] = [2, 38];

/** A version as numbers from `git --version`'s output ("git version 2.39.5", "git version 2.37.1 (Apple Git-137.1)", "git version 2.45.0.windows.1"). */
export function parseGitVersion(output: string): number[] | undefined {
  const prefix = "git version ";
  const line = output.trim().split("\n", 1)[0]!;
  if (!line.startsWith(prefix)) return undefined;
  const numbers: number[] = [];
  for (const field of line.slice(prefix.length).split(" ", 1)[0]!.split(".")) {
    if (!/^\d+$/.test(field)) break; // ("windows", "rc0"…: the numbers before it are the version)
    numbers.push(Number(field));
  }
  return numbers.length >= 2 ? numbers : undefined;
}

/** Whether `version` is `needed` or newer. */
export function atLeast(version: readonly number[], needed: readonly number[]): boolean {
  for (let i = 0; i < needed.length; i++) {
    const have = version[i] ?? 0;
    if (have !== needed[i]) return have > needed[i]!;
  }
  return true;
}

/** Why a take cannot run with the git whose `git --version` printed `output`, or undefined when it can. */
export function takeGitRefusal(output: string): string | undefined {
  const version = parseGitVersion(output);
  if (version && atLeast(version, TAKE_NEEDS_GIT)) return undefined;
  return gitTooOldForTake(version ? version.join(".") : output.trim() || "(no version printed)", TAKE_NEEDS_GIT.join("."));
}

/** The check of the git on PATH, run in `cwd` (a missing git throws GitError, as every git call does). */
export async function checkGitForTake(cwd: string): Promise<string | undefined> {
  const result = await runGit(["--version"], { cwd });
  return takeGitRefusal(result.stdout);
}
