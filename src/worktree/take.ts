// Taking a worktree task's changes into the parent's checkout: everything on the task's branch
// since its `base`, applied to the parent's WORKING TREE as uncommitted changes, with a 3-way merge.
// The parent's index, HEAD and branches are never touched; its own uncommitted changes stay.
//
// How (git 2.39 has no `merge-tree --merge-base`, so the base is made the merge base by a commit):
// 1. "ours": the parent's working tree as a tree object, made with a temporary index (a copy of the
//    real one, `git add -A`, `git write-tree`): tracked changes and untracked, not ignored files.
// 2. A throwaway commit of that tree whose only parent is the task's `base`, so `git merge-tree
//    --write-tree` merges base -> branch into it with `base` as the merge base. Exit code 1 lists
//    the conflicting paths: then NOTHING in the parent changes.
// 3. Nothing on the branch is trusted (the child made it, and can build any tree with git mktree):
//    a path with a `.git` component (any case or file system's spelling) or a directory on its way
//    that is a symlink in the checkout (ignored or not) refuses the whole take ("refused", nothing
//    written); every symlink it writes is named with its target ("links"); a conflict names the
//    real paths (merge-tree's side names `<path>~<commit>` undone).
// 4. The difference between "ours" and the merged tree is what changes in the working tree. Before
//    the first file is written, a journal (every path's before and after: blob and mode, both in
//    the object store already) is written and fsynced in the checkout's git directory; each file is
//    written to a temp file beside it and renamed over (never half a file); then the journal goes.
//    Each write checks again, with lstat, that every directory on its way is a real one (made one
//    level at a time, never `mkdir -p`, which follows links), and the rename replaces a symlink at
//    the path itself instead of writing where it points. Not closed: a directory swapped for a link
//    by another process between that check and the open (Node has no openat); under the OS sandbox
//    the child cannot write the checkout, so that other process is the user's own.
// Crash rule: a take cut by a kill (the journal is still there) is ROLLED BACK at the next start-up
// (recoverTakes): every path it names is put back as it was, so the tree is untouched and the task
// can be taken again. A path that changed since (neither before nor after) is left alone and named.
// A kill after the journal is gone (every file written) and before the task is saved leaves the
// tree fully applied: a second take then finds nothing to write and only removes the worktree.
// The journal is fsynced; the files are not (a kill loses nothing the kernel holds; power loss is
// out of scope).

import { createHash } from "node:crypto";
import { constants, promises as fs } from "node:fs";
import { dirname, isAbsolute, join, resolve, sep } from "node:path";
import { GitError, type PathChange, type PathState, git, parseRawDiff, runGit } from "./git.js";
import { BlobReader, rawBlob } from "./blob-reader.js";
import { type RunsAlone, runsAloneIn } from "./runs-alone.js";

export type { PathChange, PathState };
import { hasDotGitComponent } from "./paths.js";
import { AUTHOR_ENV, exists } from "./worktree.js";
import { writeFileAtomically } from "../atomic-file.js";
import { isProcessAlive } from "../process-state.js";

/** What a take needs to know of the task's worktree (WorktreeInfo has it). */
export interface TakeSource {
  /** the parent's repository (top level): its working tree receives the changes */
  repo: string;
  /** the commit the task's branch started from */
  base: string;
  branch: string;
}

/** A symlink the take writes (new, or pointing elsewhere than before), and where it points. */
export interface LinkWritten {
  path: string;
  target: string;
  /** the target, taken from the link's directory, leaves the checkout (or is absolute) */
  outside: boolean;
}

export type TakeOutcome =
  /** `runs`: the files it writes that run on their own in the checkout (runs-alone.ts): only a person takes those */
  | { kind: "applied"; changes: PathChange[]; links: LinkWritten[]; runs: RunsAlone[] }
  | { kind: "conflict"; files: string[]; reasons: string[] }
  /** the branch carries what a take never writes (a .git path, a path through a symlinked directory of the checkout) */
  | { kind: "refused"; files: string[]; reasons: string[] }
  /** the branch brings nothing the parent's working tree does not have already */
  | { kind: "nothing" };

/** The journal of a take in progress (`<git dir>/offshoot-take-<task id>.json`). */
interface TakeJournal {
  v: 1;
  taskId: string;
  pid: number;
  changes: PathChange[];
}

const JOURNAL_PREFIX = "offshoot-take-";
const TEMP_SUFFIX = ".offshoot-take.tmp";

async function gitPath(repo: string, name: string): Promise<string> {
  return resolve(repo, await git(["rev-parse", "--git-path", name], { cwd: repo }));
}

/** The working tree as a tree object, through a temporary copy of the index (the real one is untouched). */
export async function workingTreeSnapshot(repo: string, tag: string): Promise<string> {
  const realIndex = await gitPath(repo, "index");
  const tempIndex = `${realIndex}.offshoot-${tag}`;
  try {
    await fs.copyFile(realIndex, tempIndex).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== "ENOENT") throw error;
    });
    const env = { GIT_INDEX_FILE: tempIndex };
    await git(["add", "-A", "--", "."], { cwd: repo, env });
    return await git(["write-tree"], { cwd: repo, env });
  } finally {
    await fs.rm(tempIndex, { force: true });
  }
}

/** Paths of a NUL-separated list, each once. */
function uniquePaths(fields: string[]): string[] {
  return [...new Set(fields.filter(Boolean))];
}

/** Works out what a take would change (or why it cannot); changes nothing in the parent. */
export async function planTake(source: TakeSource, taskId: string): Promise<TakeOutcome> {
  const { repo } = source;
  const tip = await runGit(["rev-parse", "--verify", "-q", `refs/heads/${source.branch}^{commit}`], { cwd: repo });
  if (tip.code !== 0) throw new GitError(`the branch ${source.branch} is gone from ${repo}`);
  const ours = await workingTreeSnapshot(repo, `take-${taskId}`);
  const oursCommit = await git(["commit-tree", ours, "-p", source.base, "-m", `offshoot: the working tree when task ${taskId} was taken`], {
    cwd: repo,
    env: AUTHOR_ENV,
  });
  const merge = await runGit(["merge-tree", "--write-tree", "-z", "--name-only", "--no-messages", oursCommit, tip.stdout.trim()], { cwd: repo });
  if (merge.code !== 0 && merge.code !== 1) throw new GitError(`git merge-tree failed: ${(merge.stderr || merge.stdout).trim()}`);
  const fields = merge.stdout.split("\0");
  // (git names one side of a file/directory conflict `<path>~<commit>`: the reply names the real path)
  if (merge.code === 1)
    return { kind: "conflict", files: uniquePaths(fields.slice(1).map((f) => realConflictPath(f, [oursCommit, tip.stdout.trim()]))), reasons: [] };
  const merged = fields[0]!.trim();
  if (merged === ours) return { kind: "nothing" };
  const changes = parseRawDiff(await git(["diff-tree", "-r", "-z", "--no-renames", ours, merged], { cwd: repo }));
  // what the branch may not write at all, whatever the checkout holds: nothing of it is written
  const removed = new Set(changes.filter((c) => !c.after).map((c) => c.path));
  const refused: string[] = [];
  const why: string[] = [];
  // what git cannot bring into a working tree file by file, and files the snapshot could not see
  const reasons: string[] = [];
  const blocked: string[] = [];
  for (const change of changes) {
    const unsafe = await unsafePath(repo, change.path, removed);
    if (unsafe?.refuse) {
      refused.push(change.path);
      why.push(unsafe.reason);
    } else if (unsafe) {
      blocked.push(change.path);
      reasons.push(unsafe.reason);
    }
  }
  if (refused.length) return { kind: "refused", files: refused, reasons: why };
  for (const change of changes) {
    if (blocked.includes(change.path)) continue;
    if (change.after?.mode === "160000" || change.before?.mode === "160000") {
      blocked.push(change.path);
      reasons.push(`${change.path}: a submodule change (take it with git yourself)`);
    } else if (!change.before && (await exists(join(repo, change.path)))) {
      blocked.push(change.path);
      reasons.push(`${change.path}: the task adds it, and an ignored file of that name is in your checkout`);
    }
  }
  if (blocked.length) return { kind: "conflict", files: blocked, reasons };
  return { kind: "applied", changes, links: await linksWritten(repo, changes), runs: await runsAloneIn(repo, changes) };
}

/** A path of merge-tree's conflict list as the user knows it: git's side name `<path>~<commit>` (one of `commits`) less its suffix. */
export function realConflictPath(path: string, commits: readonly string[]): string {
  for (const commit of commits) if (commit && path.endsWith(`~${commit}`)) return path.slice(0, -commit.length - 1);
  return path;
}

/**
 * Why a take must not write `path` (relative, as git names it), or undefined. `refuse`: never,
 * whatever the checkout holds: a `.git` component (any case, any file system's spelling:
 * isDotGitName), a component that is not a plain name, or a directory on its way in the checkout
 * that is a symlink (ignored or not: the file would land where it points). Otherwise a conflict with
 * the checkout: a file there (ignored) where the path needs a directory, unless the take removes it
 * first (`removed`). Reads the checkout with lstat only.
 */
export async function unsafePath(
  repo: string,
  path: string,
  removed: ReadonlySet<string> = new Set(),
): Promise<{ refuse: boolean; reason: string } | undefined> {
  const parts = path.split("/");
  if (parts.some((p) => p === "" || p === "." || p === ".."))
    return { refuse: true, reason: `${path}: not a plain path inside your checkout; a take never writes it` };
  if (hasDotGitComponent(path))
    return {
      refuse: true,
      reason: `${path}: in git's own files (.git); a take never writes there (a file there can be a hook that runs at your next git command, or config git obeys)`,
    };
  let dir = repo;
  for (let i = 0; i < parts.length - 1; i++) {
    dir = join(dir, parts[i]!);
    const stat = await fs.lstat(dir).catch(() => undefined);
    if (!stat) return undefined; // (nothing below exists: the take makes real directories)
    const rel = parts.slice(0, i + 1).join("/");
    if (stat.isSymbolicLink()) {
      const target = await fs.readlink(dir).catch(() => "?");
      return {
        refuse: true,
        reason: `${path}: ${rel} in your checkout is a symlink (to ${target}); a take never writes through a link, so the file would land there`,
      };
    }
    if (stat.isDirectory()) continue;
    if (removed.has(rel)) return undefined; // (the take removes that file first, then makes the directory)
    return { refuse: false, reason: `${path}: ${rel} in your checkout is a file (ignored) where the task has a directory` };
  }
  return undefined;
}

/** The symlinks among `changes` that the take writes (new, or pointing elsewhere now), each with its target. */
async function linksWritten(repo: string, changes: readonly PathChange[]): Promise<LinkWritten[]> {
  const out: LinkWritten[] = [];
  for (const change of changes) {
    if (change.after?.mode !== "120000" || (change.before?.mode === "120000" && change.before.blob === change.after.blob)) continue;
    const target = (await rawBlob(repo, change.path, change.after)).toString("utf8");
    const outside = isAbsolute(target) || !resolve(repo, dirname(change.path), target).startsWith(repo + sep);
    out.push({ path: change.path, target, outside });
  }
  return out;
}

/**
 * The directories above `path` in the checkout, each checked with lstat to be a real directory (a
 * symlink is never followed, nor a file taken for one); with `create`, a missing one is made, then
 * checked like the others (mkdir one level at a time, never `recursive`, which follows links).
 */
async function realParents(repo: string, path: string, create: boolean): Promise<void> {
  const parts = path.split("/").slice(0, -1);
  let dir = repo;
  for (const part of parts) {
    dir = join(dir, part);
    let stat = await fs.lstat(dir).catch(() => undefined);
    if (!stat) {
      if (!create) return;
      await fs.mkdir(dir).catch((error: NodeJS.ErrnoException) => {
        if (error.code !== "EEXIST") throw error;
      });
      stat = await fs.lstat(dir);
    }
    if (!stat.isDirectory()) throw new GitError(`refusing ${path}: ${dir} is ${stat.isSymbolicLink() ? "a symlink" : "not a directory"}`);
  }
}

/**
 * Puts `state` at `path` (absent: removed), never leaving half a file: temp file beside it, then
 * rename. Never through a symlink: each directory on the way is checked (realParents), the temp
 * file is made with O_EXCL | O_NOFOLLOW, and the rename replaces a link at `path` itself rather than
 * writing where it points. A `.git` path is refused here too (whatever planned it).
 */
async function writeState(repo: string, reader: BlobReader, path: string, state: PathState | null): Promise<void> {
  const target = join(repo, path);
  if (!target.startsWith(repo + sep)) throw new GitError(`refusing a path outside the checkout: ${path}`);
  if (hasDotGitComponent(path)) throw new GitError(`refusing a path in git's own files: ${path}`);
  const temp = target + TEMP_SUFFIX;
  if (!state) {
    await realParents(repo, path, false);
    await fs.rm(target, { force: true });
    await removeEmptyDirs(repo, dirname(target));
    return;
  }
  const bytes = await reader.read(path, state);
  await realParents(repo, path, true);
  await fs.rm(temp, { force: true });
  if (state.mode === "120000") {
    await fs.symlink(bytes.toString("utf8"), temp);
  } else {
    const handle = await fs.open(
      temp,
      constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
      state.mode === "100755" ? 0o777 : 0o666,
    );
    try {
      await handle.writeFile(bytes); // (no fsync per file: a kill loses nothing the kernel has; the journal is synced)
    } finally {
      await handle.close();
    }
  }
  // a directory where the file goes (the task turned a directory into a file) is removed when emptied above
  await fs.rename(temp, target);
}

async function removeEmptyDirs(repo: string, dir: string): Promise<void> {
  for (let d = dir; d.startsWith(repo + sep); d = dirname(d)) {
    const removed = await fs.rmdir(d).then(
      () => true,
      () => false,
    );
    if (!removed) return;
  }
}

/** Which side a path is on now: "before", "after", or "other" (changed by someone else since). */
async function sideOf(repo: string, reader: BlobReader, change: PathChange): Promise<"before" | "after" | "other"> {
  const target = join(repo, change.path);
  const stat = await fs.lstat(target).catch(() => undefined);
  const matches = async (state: PathState | null): Promise<boolean> => {
    if (!state) return !stat;
    if (!stat) return false;
    if (state.mode === "120000") return stat.isSymbolicLink() && (await fs.readlink(target)) === (await reader.read(change.path, state)).toString("utf8");
    if (!stat.isFile()) return false;
    const [current, wanted] = await Promise.all([fs.readFile(target), reader.read(change.path, state)]);
    return hash(current) === hash(wanted);
  };
  if (await matches(change.after)) return "after";
  if (await matches(change.before)) return "before";
  return "other";
}

function hash(bytes: Buffer): string {
  return createHash("sha1").update(bytes).digest("hex");
}

async function journalPath(repo: string, taskId: string): Promise<string> {
  return gitPath(repo, `${JOURNAL_PREFIX}${taskId}.json`);
}

/** The journal, written whole (atomic-file.ts: a temp file that never follows a link, synced, renamed over), then its directory synced. */
async function writeJournal(path: string, journal: TakeJournal): Promise<void> {
  await writeFileAtomically(path, JSON.stringify(journal));
  const dir = await fs.open(dirname(path), "r");
  await dir.sync().finally(() => dir.close());
}

/**
 * Applies a planned take to the working tree: all of it, or (on an error) none of it. Hook for
 * tests: `afterEach` runs after each path is written (a kill there leaves a journal behind).
 */
export async function applyTake(repo: string, taskId: string, changes: PathChange[], afterEach?: (path: string) => Promise<void>): Promise<void> {
  const journal = await journalPath(repo, taskId);
  await writeJournal(journal, { v: 1, taskId, pid: process.pid, changes });
  // deletions first (a directory may have to empty before a file of its name can come)
  const order = [...changes.filter((c) => !c.after), ...changes.filter((c) => c.after)];
  const done: PathChange[] = [];
  const reader = new BlobReader(repo);
  try {
    for (const change of order) {
      done.push(change);
      await writeState(repo, reader, change.path, change.after);
      await afterEach?.(change.path);
    }
  } catch (error) {
    const left = await rollBack(repo, reader, done);
    await fs.rm(journal, { force: true });
    const note = left.length ? ` (left as they were found, changed meanwhile: ${left.join(", ")})` : "";
    throw new GitError(`applying the changes failed: ${(error as Error).message}; every file was put back${note}`);
  } finally {
    reader.close();
  }
  await fs.rm(journal, { force: true });
}

/** Puts every path of `changes` back to its `before` state; returns the paths left alone. */
async function rollBack(repo: string, reader: BlobReader, changes: PathChange[]): Promise<string[]> {
  const left: string[] = [];
  for (const change of [...changes].reverse()) {
    await fs.rm(join(repo, change.path) + TEMP_SUFFIX, { force: true }).catch(() => {});
    const side = await sideOf(repo, reader, change).catch(() => "other" as const);
    if (side === "before") continue;
    if (side === "other") {
      left.push(change.path);
      continue;
    }
    // (a path that cannot be put back, a directory on its way turned into a link meanwhile: left alone and named)
    await writeState(repo, reader, change.path, change.before).catch(() => left.push(change.path));
  }
  return left;
}

/**
 * Start-up: a take a kill cut short (its journal is there, its process is gone) is rolled back:
 * the working tree is as it was before it. Returns one line per take found (for the log).
 */
export async function recoverTakes(projectDir: string): Promise<string[]> {
  const top = await runGit(["rev-parse", "--show-toplevel"], { cwd: projectDir });
  if (top.code !== 0) return [];
  const repo = await fs.realpath(top.stdout.trim());
  const dir = dirname(await journalPath(repo, "x"));
  const names = (await fs.readdir(dir).catch(() => [] as string[])).filter((n) => n.startsWith(JOURNAL_PREFIX) && n.endsWith(".json"));
  const out: string[] = [];
  for (const name of names) {
    const path = join(dir, name);
    let journal: TakeJournal;
    try {
      journal = JSON.parse(await fs.readFile(path, "utf8")) as TakeJournal;
      if (journal?.v !== 1 || !Array.isArray(journal.changes)) throw new Error("not a take journal");
    } catch (error) {
      out.push(`ignored ${path}: ${(error as Error).message}`);
      continue;
    }
    if (typeof journal.pid === "number" && journal.pid !== process.pid && isProcessAlive(journal.pid)) continue; // another live OpenCode is taking it now
    const changes = journal.changes.filter((c) => typeof c?.path === "string" && !c.path.split("/").includes(".."));
    const reader = new BlobReader(repo);
    const left = await rollBack(repo, reader, changes).finally(() => reader.close());
    await fs.rm(path, { force: true });
    out.push(
      `the take of task ${journal.taskId} was cut short (OpenCode stopped during it); your working tree was put back as it was before it (${changes.length} path${changes.length === 1 ? "" : "s"})${left.length ? `, except ${left.join(", ")}, changed since and left alone` : ""}; take it again with background_take`,
    );
  }
  return out;
}
