// The start-up sweep of a project's worktrees (lifecycle.ts runs it): what a stopped or killed
// process left behind and no task names. Four sweeps: worktrees under the project's home (removed when
// clean, with their branch unless it holds its own commits), branches `offshoot/<id>` with no worktree
// left, sandbox directories, and stale temporary indexes of a killed launch or take.

import { promises as fs } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { git, runGit } from "./git.js";
import { sandboxesHome, sweepSandboxes } from "./sandbox/prepare.js";
import { privatePaths } from "./sandbox/plan.js";
import { CONFIG_ENTRIES, SNAPSHOT_SUBJECT, branchOf, exists, removeWorktree, worktreesHome } from "./worktree.js";

/** Whether `rel` in the worktree is a link this plugin made to the same path in the checkout (a linked .worktreeinclude directory). */
async function isOurLink(repo: string, worktree: string, rel: string): Promise<boolean> {
  const name = rel.replace(/\/$/, "");
  const target = await fs.readlink(join(worktree, name)).catch(() => undefined);
  return target === join(repo, name);
}

/** What the start-up sweep did (lifecycle.ts logs each line). */
export interface SweepReport {
  removed: { path: string; branchKept?: string }[];
  kept: string[];
  /** branches with no worktree and no task that were deleted (they held nothing of their own) */
  branchesRemoved: string[];
  /** branches with no worktree and no task that hold commits nothing else reaches: kept */
  branchesKept: string[];
  /** temporary index files a killed launch or take left in the git directory, removed */
  tempIndexes: string[];
  /** sandbox directories no task names, removed */
  sandboxes: string[];
}

/** How old a leftover temporary index must be before the sweep removes it (a live launch's is seconds old). */
export const TEMP_INDEX_STALE_MS = 60 * 60 * 1000;

/**
 * Whether `git worktree add` never finished making this worktree: it locks the worktree with the reason
 * "initializing" (in `.git/worktrees/<name>/locked`, the admin directory named after the task) until its
 * checkout is done, and a kill leaves the lock. (This plugin never locks a worktree itself.)
 */
async function stillInitializing(admin: string): Promise<boolean> {
  // (the admin directory named after the task in the repository, not what the worktree's .git file says)
  const reason = await fs.readFile(join(admin, "locked"), "utf8").catch(() => undefined);
  return reason?.trim() === "initializing";
}

/**
 * Whether a branch holds a task's own work: a commit no other ref reaches that is not one of our
 * snapshot commits (the parent's uncommitted changes, which are still in the parent's checkout).
 */
async function holdsOwnCommits(repo: string, branch: string): Promise<boolean> {
  // (not --all: it counts the HEADs of worktrees, and a task's worktree reaches its own commits)
  const log = await runGit(["log", "--format=%s", branch, "--not", `--exclude=${branch}`, "--branches", "--tags", "--remotes", "HEAD"], { cwd: repo });
  if (log.code !== 0) return true; // unsure: keep it
  return log.stdout.split("\n").some((subject) => subject && !subject.startsWith(SNAPSHOT_SUBJECT));
}

/**
 * Start-up: worktrees under this project's home that no task names are removed (with their
 * branch) when they hold no uncommitted change; the others are kept and reported. Branches
 * `offshoot/<id>` that no task names and no worktree holds (a launch killed between `git worktree
 * add` and saving its task) are deleted unless they hold commits nothing else reaches. Temporary
 * index files a kill left behind are removed once stale.
 */
export async function sweepOrphanWorktrees(input: {
  projectDir: string;
  projectID: string;
  /** whether a task of that id exists (the worktree is named after its task) */
  isKnown: (taskId: string) => boolean;
  env?: NodeJS.ProcessEnv;
  now?: number;
}): Promise<SweepReport> {
  const out: SweepReport = { removed: [], kept: [], branchesRemoved: [], branchesKept: [], tempIndexes: [], sandboxes: [] };
  const repoTop = await git(["rev-parse", "--show-toplevel"], { cwd: input.projectDir }).catch(() => undefined);
  if (!repoTop) return out;
  const repo = await fs.realpath(repoTop);
  const commonDir = await fs.realpath(resolve(repo, await git(["rev-parse", "--git-common-dir"], { cwd: repo })));
  const home = join(worktreesHome(input.env), input.projectID);
  const entries = await fs.readdir(home).catch(() => [] as string[]);
  const realHome = entries.length ? await fs.realpath(home) : home;
  const handled = new Set<string>();
  for (const name of entries) {
    const path = join(realHome, name);
    if (input.isKnown(name)) continue;
    handled.add(name);
    // a launch killed inside `git worktree add` leaves a directory that is no worktree yet (no .git
    // file), or one whose checkout was cut (git's own "initializing" lock still on it, no index, some
    // files: `git status` shows every file changed): nothing but git's checkout was ever written
    // there, so it goes like a clean one
    const admin = join(commonDir, "worktrees", name);
    const half = !(await exists(join(path, ".git"))) || (await stillInitializing(admin));
    // the repository's own admin directory and common directory, never what the worktree's .git file
    // (which a child may have rewritten) points at, and no fsmonitor: nothing a child left runs here
    const status = half
      ? { code: 0, stdout: "" }
      : await runGit(["-c", "core.fsmonitor=false", "status", "--porcelain", "-z", "--untracked-files=all"], {
          cwd: path,
          env: {
            GIT_DIR: admin,
            GIT_COMMON_DIR: commonDir,
            GIT_WORK_TREE: path,
            // a sandboxed child's objects are in its private store
            GIT_ALTERNATE_OBJECT_DIRECTORIES: privatePaths(join(sandboxesHome(input.env), input.projectID, name)).objects,
          },
        });
    // our own config links are not changes, nor a directory .worktreeinclude linked to the checkout's (ready.ts)
    const lines = status.stdout.split("\0").filter((line) => line && !CONFIG_ENTRIES.some((entry) => line.slice(3).split("/").includes(entry)));
    const changed: string[] = [];
    for (const line of lines) if (!(line.startsWith("?? ") && (await isOurLink(repo, path, line.slice(3))))) changed.push(line);
    if (status.code !== 0 || changed.length > 0) {
      out.kept.push(path);
      continue;
    }
    // its branch goes too unless it holds a task's commits that nothing else has
    const branch = branchOf(name);
    const keepBranch =
      (await runGit(["rev-parse", "--verify", "-q", `refs/heads/${branch}`], { cwd: repo })).code === 0 && (await holdsOwnCommits(repo, branch));
    await removeWorktree({ repo, path, branch: keepBranch ? "" : branch });
    out.removed.push(keepBranch ? { path, branchKept: branch } : { path });
  }
  // branches with no worktree left (prune first: git keeps a branch checked out by a missing worktree)
  const refs = await runGit(["for-each-ref", "--format=%(refname:short)", `refs/heads/${branchOf("")}`], { cwd: repo });
  const orphans = refs.stdout.split("\n").filter((branch) => {
    const name = branch.slice(branchOf("").length);
    return branch && name && !input.isKnown(name) && !handled.has(name) && !entries.includes(name);
  });
  if (orphans.length) await runGit(["worktree", "prune"], { cwd: repo });
  for (const branch of orphans) {
    if (await holdsOwnCommits(repo, branch)) {
      out.branchesKept.push(branch);
      continue;
    }
    const deleted = await runGit(["branch", "-D", branch], { cwd: repo });
    if (deleted.code === 0) out.branchesRemoved.push(branch);
    else out.branchesKept.push(branch);
  }
  // sandboxes no task names (their worktree is gone above, or was never made)
  out.sandboxes = await sweepSandboxes(input.projectID, input.isKnown, input.env);
  // temporary indexes (index.offshoot-<task id>, index.offshoot-take-<task id>) of a killed launch or take
  const index = resolve(repo, await git(["rev-parse", "--git-path", "index"], { cwd: repo }));
  const gitDir = dirname(index);
  const now = input.now ?? Date.now();
  for (const name of await fs.readdir(gitDir).catch(() => [] as string[])) {
    if (!name.startsWith("index.offshoot-")) continue;
    const path = join(gitDir, name);
    const stat = await fs.lstat(path).catch(() => undefined);
    if (!stat?.isFile() || now - stat.mtimeMs < TEMP_INDEX_STALE_MS) continue;
    await fs.rm(path, { force: true });
    out.tempIndexes.push(path);
  }
  return out;
}
