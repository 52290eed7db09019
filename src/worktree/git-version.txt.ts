// What a take says when the git on PATH is too old for it (git-version.ts). Pure text.

/** The reason a take cannot run: `found` is the version git printed, `needed` the oldest one that works. */
export function gitTooOldForTake(found: string, needed: string): string {
  return `a take needs git ${needed} or newer (it merges with git merge-tree --write-tree), and the git on PATH is ${found}. Install a newer git, then take it again`;
}
