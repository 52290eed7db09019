// A background task's own git worktree: created from what the parent sees now, committed when a run
// ends, removed when it holds nothing or when the task is discarded, swept at start-up when orphaned.
//
// Rules (docs/worktrees.md, openspec background-tasks):
// - Created from the parent's HEAD plus its uncommitted tracked changes and untracked, not ignored
//   files, WITHOUT touching the parent's index, HEAD, branch or working tree: a copy of its index
//   (GIT_INDEX_FILE) takes `git add -A`, `git write-tree` makes the tree, and when it differs from
//   HEAD's, `git commit-tree` makes a snapshot commit on top of HEAD. The branch `offshoot/<task id>`
//   starts there (`base`), in a worktree under the plugin's data directory, outside the checkout.
// - OpenCode's `/experimental/worktree` is not used: it checks out HEAD only (no uncommitted changes),
//   picks random names and populates the worktree in the background after it returns.
// - OpenCode reads config (models, plugins) from the worktree: the parent's opencode.json /
//   opencode.jsonc / .opencode that git does not carry there (untracked or ignored) are linked in
//   (symlinks), and never committed.
// - Anything that fails is a clear error, and what was created so far is removed.

import { promises as fs } from "node:fs";
import { homedir } from "node:os";
import { basename, dirname, join, relative, resolve, sep } from "node:path";
import { GitError, git, runGit } from "./git.js";
import { KeyedSerialQueue } from "../serial-queue.js";
import type { WorktreeFields, WorktreeInfo } from "../task-record.js";
import { layoutOf, prepareSandbox, removeSandbox } from "./sandbox/prepare.js";
import { commitInSandbox } from "./sandbox/run.js";
import { type ReadyOptions, readyWorktree } from "./ready.js";
import type { SandboxTool } from "./sandbox/probe.js";

/** The plugin's commits say who made them. */
const COMMIT_AUTHOR = { name: "opencode-offshoot", email: "opencode-offshoot@users.noreply.invalid" };
/** The environment of every git command that makes a commit (a run's commit, the snapshot, a take's working-tree commit): the plugin's name as author and committer. */
export const AUTHOR_ENV = {
  GIT_AUTHOR_NAME: COMMIT_AUTHOR.name,
  GIT_AUTHOR_EMAIL: COMMIT_AUTHOR.email,
  GIT_COMMITTER_NAME: COMMIT_AUTHOR.name,
  GIT_COMMITTER_EMAIL: COMMIT_AUTHOR.email,
};
/** What OpenCode reads config from in a directory; linked into the worktree when git does not carry it. */
export const CONFIG_ENTRIES = ["opencode.json", "opencode.jsonc", ".opencode"] as const;
/** The subject of the snapshot commit a branch may start from. */
export const SNAPSHOT_SUBJECT = "offshoot: the parent's uncommitted changes";
/** How many changed files a summary names. */
export const SUMMARY_MAX_FILES = 10;
/** How many changed paths a task keeps for the overlap check (`changes.paths`, only when more than the summary names). */
export const CHANGED_PATHS_MAX = 500;

/** `$XDG_DATA_HOME/opencode/plugins/offshoot/worktrees`: every project's task worktrees live below it. */
export function worktreesHome(env: NodeJS.ProcessEnv = process.env): string {
  const dataHome = env.XDG_DATA_HOME || join(env.HOME || homedir(), ".local", "share");
  return join(dataHome, "opencode", "plugins", "offshoot", "worktrees");
}

/** Whether OpenCode loaded this plugin for a directory inside one of our task worktrees. */
export async function isInsideTaskWorktree(directory: string, env: NodeJS.ProcessEnv = process.env): Promise<boolean> {
  const home = await fs.realpath(worktreesHome(env)).catch(() => worktreesHome(env));
  const dir = await fs.realpath(directory).catch(() => directory);
  return dir.startsWith(home + sep);
}

export function branchOf(taskId: string): string {
  return `offshoot/${taskId}`;
}

/** Whether anything is at `path`, a symlink included (lstat: never followed). */
export async function exists(path: string): Promise<boolean> {
  return fs.lstat(path).then(
    () => true,
    () => false,
  );
}

/**
 * `git worktree add` reads the admin files of every other worktree of the repository: two at once
 * (the parallel launches of one turn) can fail with "failed to read .git/worktrees/<x>/commondir"
 * while the other is half made. They run one after another per repository. Module state (bounded:
 * one entry per repository with an add under way): git's files are shared by every manager of this
 * process, so no one manager can own the queue.
 */
const adds = new KeyedSerialQueue();

/** The OS sandbox a worktree child runs in: the tool found by the probe, and the caches it may write. */
export interface SandboxChoice {
  kind: SandboxTool;
  path: string;
  caches: readonly string[];
}

/** What making a task's worktree directory takes besides where: the task, its sandbox and set-up, the environment. */
interface DirectoryInput {
  projectID: string;
  taskId: string;
  sandbox?: SandboxChoice;
  /** the set-up command (plugin options); absent: none */
  ready?: ReadyOptions;
  env?: NodeJS.ProcessEnv;
}

/**
 * Creates the task's worktree (and, with `sandbox`, its sandbox: src/worktree/sandbox); throws a
 * clear error (and leaves nothing behind) when it cannot. Without `sandbox` the task is contained by
 * the text-level checks only (instance.ts).
 */
export async function createWorktree(input: DirectoryInput & { projectDir: string }): Promise<WorktreeInfo> {
  const { projectDir, taskId } = input;
  // one git process for what the launch reads of the repository (each costs a few ms: on a small
  // repository they are most of a launch's own time; bench/worktree-ready.ts)
  const read = await runGit(["rev-parse", "--show-toplevel", "--path-format=absolute", "--git-path", "index", "HEAD^{commit}", "HEAD^{tree}"], {
    cwd: projectDir,
  });
  if (read.code !== 0) {
    if (/not a git repository/i.test(read.stderr)) throw new GitError(`${projectDir} is not inside a git repository`);
    const at = read.stdout.split("\n")[0];
    if (at && /unknown revision|ambiguous argument/i.test(read.stderr))
      throw new GitError(`the repository at ${await fs.realpath(at)} has no commit yet (HEAD is unborn); commit once first`);
    throw new GitError(`git rev-parse failed in ${projectDir}: ${read.stderr.trim()}`);
  }
  const [top, index, parentHead, headTree] = read.stdout.trim().split("\n") as [string, string, string, string];
  const repo = await fs.realpath(top);
  const realProjectDir = await fs.realpath(projectDir);
  const base = await snapshotOf(repo, { commit: parentHead, tree: headTree, index }, taskId);
  const home = join(worktreesHome(input.env), input.projectID);
  await fs.mkdir(home, { recursive: true, mode: 0o700 });
  const path = join(await fs.realpath(home), taskId);
  if (await exists(path)) throw new GitError(`${path} already exists`);
  const branch = branchOf(taskId);
  const info: WorktreeFields = {
    repo,
    path,
    directory: join(path, relative(repo, realProjectDir)),
    branch,
    base,
    parentHead,
    linked: [],
    containment: input.sandbox ? input.sandbox.kind : "text",
  };
  await addDirectory(info, { ...input, projectDir: realProjectDir, newBranch: true, tip: base });
  return info;
}

/**
 * The one place a task's worktree directory is made: `git worktree add` (with `newBranch`, the branch
 * is made there from `base`; without, the directory checks out the task's existing branch: a resume
 * of a task whose directory was freed), then its admin directories are read, the parent's config is
 * linked, with `sandbox` its sandbox is prepared, and it is made ready to work (ready.ts:
 * .worktreeinclude's entries, the set-up command). Fills those fields of `info`. Throws a clear
 * error; what this call made goes (a branch that was there before it is never deleted here).
 */
async function addDirectory(
  info: WorktreeFields,
  input: DirectoryInput & {
    projectDir: string;
    newBranch: boolean;
    /** the commit the branch names (a new one: `info.base`; a resume's: its tip) */
    tip: string;
  },
): Promise<void> {
  const { repo, path, branch } = info;
  let added = false;
  try {
    const args = input.newBranch ? ["worktree", "add", "-q", "-b", branch, path, info.base] : ["worktree", "add", "-q", path, branch];
    await adds.post(repo, () => git(args, { cwd: repo }));
    added = true;
    // read now, from the worktree git just made (the child has not run): never from its .git file later
    const [gitDir, commonDir] = (await git(["rev-parse", "--absolute-git-dir", "--path-format=absolute", "--git-common-dir"], { cwd: path })).split("\n");
    info.gitDir = await fs.realpath(gitDir!);
    info.commonDir = await fs.realpath(resolve(path, commonDir!));
    info.linked = await linkConfig(repo, input.projectDir, path);
    if (input.sandbox) {
      const { kind, path: toolPath, caches } = input.sandbox;
      info.sandboxDir = await prepareSandbox({
        worktree: path,
        gitDir: info.gitDir,
        commonDir: info.commonDir,
        branch,
        head: input.tip,
        projectID: input.projectID,
        taskId: input.taskId,
        tool: kind,
        toolPath,
        caches,
        env: input.env,
      });
    }
    // ready to work before the child's first step: .worktreeinclude's entries, the set-up command (in the sandbox)
    const made = await readyWorktree({
      repo,
      projectDir: input.projectDir,
      worktree: path,
      directory: info.directory,
      sandbox:
        input.sandbox && info.sandboxDir
          ? {
              tool: { kind: input.sandbox.kind, path: input.sandbox.path },
              layout: layoutOf({ sandboxDir: info.sandboxDir, gitDir: info.gitDir, commonDir: info.commonDir }, path, input.taskId, input.sandbox.caches),
              branch,
            }
          : undefined,
      options: input.ready ?? { worktreeSetup: "", worktreeSetupTimeoutSeconds: 1 },
    });
    info.linked = [...info.linked, ...made.linked];
    if (made.ready) info.ready = made.ready;
  } catch (error) {
    // only what this call made goes: a branch of that name that was already there is not ours
    if (added) await removeWorktree({ ...info, branch: input.newBranch ? branch : "" }).catch(() => {});
    else await fs.rm(path, { recursive: true, force: true }).catch(() => {});
    if (!input.newBranch) await removeSandbox(info.sandboxDir).catch(() => {});
    throw error;
  }
}

/**
 * A resume of a task whose worktree directory was freed (its run was committed): the directory is
 * made again from the task's branch, at the same path (so the child's session still names it), with
 * its config links, with `sandbox` a new sandbox, and made ready again (the set-up command runs again). Returns the task's worktree record as it is
 * now (the caller records it); throws a clear error and leaves the task's branch as it was.
 */
export async function recreateWorktree(info: Readonly<WorktreeInfo>, input: DirectoryInput): Promise<WorktreeInfo> {
  if (await exists(info.path)) throw new GitError(`${info.path} already exists; the worktree was not freed`);
  const tip = await runGit(["rev-parse", "--verify", "-q", `refs/heads/${info.branch}^{commit}`], { cwd: info.repo });
  if (tip.code !== 0) throw new GitError(`the task's branch ${info.branch} is gone from ${info.repo}: its work cannot be checked out again`);
  // (a prune first: git keeps the freed worktree's admin entry until then, and refuses the branch as checked out there)
  await runGit(["worktree", "prune"], { cwd: info.repo });
  const next: WorktreeFields = { ...info, linked: [], containment: input.sandbox ? input.sandbox.kind : "text" };
  delete next.freedAt;
  delete next.sandboxDir;
  delete next.gitDir;
  delete next.commonDir;
  delete next.ready; // (made ready again: .worktreeinclude and the set-up command run as at a launch)
  // the parent's directory inside the repository, as the record names it
  const projectDir = join(info.repo, relative(info.path, info.directory));
  await addDirectory(next, { ...input, projectDir, newBranch: false, tip: tip.stdout.trim() });
  return next;
}

/**
 * A committed run's worktree directory and sandbox directory go; the branch stays (it holds the
 * run's commit: a take, a diff, a discard and a resume read it). Only for a worktree whose run was
 * just committed: what is not committed (ignored files: build output, installed packages) goes with it.
 */
export async function freeWorktree(info: Pick<WorktreeInfo, "repo" | "path" | "sandboxDir">): Promise<void> {
  await removeWorktree({ ...info, branch: "" });
}

/** Whether the task's worktree directory is there (a freed one is not). */
export async function hasDirectory(info: Pick<WorktreeInfo, "path">): Promise<boolean> {
  return exists(info.path);
}

/** The commit the branch starts from: HEAD, or a snapshot commit of the working tree on top of it. */
async function snapshotOf(repo: string, head: { commit: string; tree: string; index: string }, taskId: string): Promise<string> {
  const realIndex = resolve(repo, head.index);
  const tempIndex = `${realIndex}.offshoot-${taskId}`;
  try {
    await fs.copyFile(realIndex, tempIndex).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== "ENOENT") throw error; // no index yet: start from an empty one
    });
    const env = { GIT_INDEX_FILE: tempIndex };
    await git(["add", "-A", "--", "."], { cwd: repo, env });
    const tree = await git(["write-tree"], { cwd: repo, env });
    if (tree === head.tree) return head.commit;
    return await git(["commit-tree", tree, "-p", head.commit, "-m", `${SNAPSHOT_SUBJECT} when task ${taskId} started`], {
      cwd: repo,
      env: { ...env, ...AUTHOR_ENV },
    });
  } finally {
    await fs.rm(tempIndex, { force: true });
  }
}

/** Links the parent's config entries that git did not bring into the worktree; returns them (relative to the worktree). */
async function linkConfig(repo: string, projectDir: string, worktree: string): Promise<string[]> {
  const linked: string[] = [];
  // from the project directory up to the repository's top: OpenCode looks there
  for (let dir = projectDir; ; dir = dirname(dir)) {
    const rel = relative(repo, dir);
    for (const name of CONFIG_ENTRIES) {
      const source = join(dir, name);
      const target = join(worktree, rel, name);
      if (!(await exists(source)) || (await exists(target))) continue;
      await fs.mkdir(dirname(target), { recursive: true });
      await fs.symlink(source, target);
      linked.push(join(rel, name));
    }
    if (dir === repo || !dir.startsWith(repo)) break;
  }
  return linked;
}

/** The branch after a run's commit: its head, and the summary of everything on it since `base` (none: no change). */
export interface RunCommit {
  head: string;
  changes: WorktreeInfo["changes"];
}

/**
 * Commits what the run changed (message: the task's description; author: this plugin) and returns
 * the summary of everything on the branch since `base` (the caller records it on the task).
 */
export async function commitRun(info: Readonly<WorktreeInfo>, message: string, sandboxPath?: string): Promise<RunCommit> {
  const head = isSandboxed(info) ? await commitSandboxed(info, message, sandboxPath) : await commitInPlace(info, message);
  return branchSummary(info, head);
}

/**
 * The branch as it is, read from the repository alone (no worktree directory): its head and the
 * summary of everything on it since `base`. What a run whose directory is already gone (a kill
 * between its removal and its record) reports.
 */
export async function branchCommit(info: Readonly<WorktreeInfo>): Promise<RunCommit> {
  const head = await git(["rev-parse", "--verify", `refs/heads/${info.branch}^{commit}`], { cwd: info.repo });
  return branchSummary(info, head);
}

async function branchSummary(info: Readonly<WorktreeInfo>, head: string): Promise<RunCommit> {
  // read from the repository, never through the worktree's .git (which the child may have rewritten)
  const numstat = await git(["diff", "--numstat", "-z", info.base, head], { cwd: info.repo });
  const files: string[] = [];
  let insertions = 0;
  let deletions = 0;
  // -z: "added\tdeleted\tpath\0" (a rename: "added\tdeleted\t\0from\0to\0")
  const fields = numstat.split("\0");
  for (let i = 0; i < fields.length; i++) {
    const field = fields[i]!;
    if (!field) continue;
    const [added, deleted, path] = field.split("\t");
    insertions += Number(added) || 0;
    deletions += Number(deleted) || 0;
    if (path) files.push(path);
    else {
      files.push(fields[i + 2] ?? fields[i + 1] ?? "");
      i += 2;
    }
  }
  const changes =
    files.length || head !== info.base
      ? {
          files: files.slice(0, SUMMARY_MAX_FILES),
          fileCount: files.length,
          insertions,
          deletions,
          ...(files.length > SUMMARY_MAX_FILES ? { paths: files.slice(0, CHANGED_PATHS_MAX) } : {}),
        }
      : undefined;
  return { head, changes };
}

/** Whether a task's child ran in an OS sandbox (its record says where). */
export function isSandboxed(
  info: Pick<WorktreeInfo, "containment" | "sandboxDir" | "gitDir" | "commonDir">,
): info is WorktreeInfo & { containment: SandboxTool; sandboxDir: string; gitDir: string; commonDir: string } {
  return (info.containment === "bwrap" || info.containment === "sandbox-exec") && !!info.sandboxDir && !!info.gitDir && !!info.commonDir;
}

/** A sandboxed run: committed inside the sandbox, imported into the branch (sandbox/run.ts). */
async function commitSandboxed(
  info: WorktreeInfo & { containment: SandboxTool; sandboxDir: string; gitDir: string; commonDir: string },
  message: string,
  sandboxPath?: string,
): Promise<string> {
  if (!sandboxPath)
    throw new GitError(
      `the task ran in a ${info.containment} sandbox, which this process cannot run now: its run is not committed (the worktree ${info.path} is kept)`,
    );
  const layout = layoutOf(info, info.path, basename(info.path), []);
  return commitInSandbox({
    tool: { kind: info.containment, path: sandboxPath },
    layout,
    repo: info.repo,
    branch: info.branch,
    message,
    linked: info.linked,
    author: AUTHOR_ENV,
  });
}

/** A run contained by the text-level checks only: committed by the host in the worktree. */
async function commitInPlace(info: Readonly<WorktreeInfo>, message: string): Promise<string> {
  const cwd = info.path;
  // the admin and common directories recorded when the worktree was made, not what its .git file
  // (which the child could rewrite: gitdir: <checkout>/.git) says now; no hooks
  const env: Record<string, string> = info.gitDir && info.commonDir ? { GIT_DIR: info.gitDir, GIT_COMMON_DIR: info.commonDir, GIT_WORK_TREE: cwd } : {};
  const noHooks = ["-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false"];
  // a commit lands where HEAD points: only ever on the task's own branch
  const on = (await runGit(["symbolic-ref", "-q", "HEAD"], { cwd, env })).stdout.trim();
  if (on !== `refs/heads/${info.branch}`)
    throw new GitError(`the worktree's HEAD is not on its branch ${info.branch} any more (it is ${on || "detached"}); nothing was committed`);
  await git([...noHooks, "add", "-A"], { cwd, env });
  // the linked config is the parent's, never the task's change (a pathspec naming an ignored path would fail the add)
  if (info.linked.length) await git(["rm", "-r", "--cached", "-q", "--ignore-unmatch", "--", ...info.linked.map((p) => `:(literal)${p}`)], { cwd, env });
  const staged = await runGit(["diff", "--cached", "--quiet"], { cwd, env });
  if (staged.code === 1) await git([...noHooks, "commit", "-q", "--no-verify", "-m", message || "offshoot task"], { cwd, env: { ...env, ...AUTHOR_ENV } });
  else if (staged.code !== 0) throw new GitError(`git diff --cached failed: ${staged.stderr.trim()}`);
  return git(["rev-parse", "HEAD"], { cwd, env });
}

/** Removes the worktree (whatever is in it), its sandbox directory and its branch. Idempotent. */
export async function removeWorktree(info: Pick<WorktreeInfo, "repo" | "path" | "branch" | "sandboxDir">): Promise<void> {
  await removeSandbox(info.sandboxDir);
  if (await exists(info.path)) {
    const removed = await runGit(["worktree", "remove", "--force", "--force", info.path], { cwd: info.repo });
    if (removed.code !== 0) {
      await fs.rm(info.path, { recursive: true, force: true });
      await runGit(["worktree", "prune"], { cwd: info.repo });
    }
  } else {
    await runGit(["worktree", "prune"], { cwd: info.repo });
  }
  if (!info.branch) return; // (a branch that is kept)
  const branch = await runGit(["branch", "-D", info.branch], { cwd: info.repo });
  if (branch.code !== 0 && !/not found/i.test(branch.stderr)) throw new GitError(`git branch -D ${info.branch} failed: ${branch.stderr.trim()}`);
}
