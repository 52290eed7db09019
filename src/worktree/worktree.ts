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
// - OpenCode reads config (models, plugins, MCP servers, agents, commands) from the worktree, and
//   runs it in its own process, outside any sandbox: that config is the user's, never the child's
//   (guardConfig). Whatever git checked out there (the branch is the child's: git can commit any
//   tree) is replaced by the user's own, every time a worktree directory is made and every time a
//   process hosts the task again; the sandbox mounts those entries read-only, the file tools refuse
//   them, and a run's commit keeps them as the branch started.
// - Anything that fails is a clear error, and what was created so far is removed.

import { promises as fs } from "node:fs";
import { homedir } from "node:os";
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { GitError, git, runGit } from "./git.js";
import { KeyedSerialQueue } from "../serial-queue.js";
import type { WorktreeFields, WorktreeInfo } from "../task-record.js";
import { type GuardedDirs, type SandboxChoice, cacheRefusal, ensurePrivateState, layoutOf, prepareSandbox, removeSandbox } from "./sandbox/prepare.js";
import { commitInSandbox } from "./sandbox/run.js";
import { type ReadyOptions, readyWorktree } from "./ready.js";
import { runsAloneIn } from "./runs-alone.js";
import { fetchBase } from "./remote.js";
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
/** What OpenCode reads config from in a directory (each level from the instance's directory up to the worktree's top). */
export const CONFIG_ENTRIES = ["opencode.json", "opencode.jsonc", ".opencode"] as const;
/** What an empty config directory holds: what OpenCode would write there itself, so that it installs nothing into it. */
const EMPTY_CONFIG_DIR: Readonly<Record<string, string>> = {
  ".gitignore": ["node_modules", "package.json", "package-lock.json", "bun.lock", ".gitignore"].join("\n"),
  "package.json": `${JSON.stringify({ dependencies: { "@opencode-ai/plugin": "*" } })}\n`,
  "package-lock.json": `${JSON.stringify({ packages: { "": { dependencies: { "@opencode-ai/plugin": "*" } } } })}\n`,
};
/** The subject of the snapshot commit a branch may start from. */
export const SNAPSHOT_SUBJECT = "offshoot: the parent's uncommitted changes";
/** How many changed files a summary names. */
export const SUMMARY_MAX_FILES = 10;
/** How many files that run on their own a task's record names. */
const RUNS_LISTED = 20;
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

export type { SandboxChoice };

/** What making a task's worktree directory takes besides where: the task, its sandbox and set-up, the environment. */
interface DirectoryInput {
  projectID: string;
  taskId: string;
  sandbox?: SandboxChoice;
  /** the set-up command (plugin options); absent: none */
  ready?: ReadyOptions;
  /** the hosts a person allowed this task (its record keeps them) */
  network?: readonly string[];
  env?: NodeJS.ProcessEnv;
  /** told of each of the sandbox's caches left out because its real path holds or lies inside the checkout or its git directory */
  onCacheLeftOut?: (dir: string, why: string) => void;
}

/**
 * Creates the task's worktree (and, with `sandbox`, its sandbox: src/worktree/sandbox); throws a
 * clear error (and leaves nothing behind) when it cannot. Without `sandbox` the task is contained by
 * the text-level checks only (instance.ts).
 */
/** What a launch reads of the parent's repository, and the commit its task starts from (`base`). */
export interface Snapshot {
  /** the repository's top (real path) and the parent's directory in it (real path) */
  repo: string;
  projectDir: string;
  parentHead: string;
  base: string;
}

/**
 * The commit a task's branch starts from: the parent's HEAD, or a snapshot commit of its uncommitted
 * changes and untracked files on top of it (snapshotOf), made without touching its index or tree.
 */
export async function snapshotFor(projectDir: string, taskId: string): Promise<Snapshot> {
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
  return { repo, projectDir: realProjectDir, parentHead, base };
}

/**
 * A task launched from another machine (docs/remote.md) starts from the commit its parent sent
 * through the shared git remote, not from this clone's HEAD: fetched (git's checks), found to be
 * exactly that commit, and the branch made there.
 */
export interface FromRemote {
  base: string;
  /** the parent's HEAD on its machine (what the base was made on top of) */
  parentHead: string;
  gitRemote: string;
}

/**
 * Creates the task's worktree (and, with `sandbox`, its sandbox: src/worktree/sandbox); throws a
 * clear error (and leaves nothing behind) when it cannot. Without `sandbox` the task is contained by
 * the text-level checks only (instance.ts). With `from`, the branch starts at the commit a remote
 * parent sent (fetched first) instead of a snapshot of this checkout.
 */
export async function createWorktree(input: DirectoryInput & { projectDir: string; from?: FromRemote }): Promise<WorktreeInfo> {
  const { taskId } = input;
  let repo: string, realProjectDir: string, parentHead: string, base: string;
  if (input.from) {
    const top = await git(["rev-parse", "--show-toplevel"], { cwd: input.projectDir }).catch(() => {
      throw new GitError(`${input.projectDir} is not inside a git repository`);
    });
    repo = await fs.realpath(top);
    realProjectDir = await fs.realpath(input.projectDir);
    await fetchBase(repo, input.from.gitRemote, taskId, input.from.base);
    ({ base, parentHead } = input.from);
  } else ({ repo, projectDir: realProjectDir, parentHead, base } = await snapshotFor(input.projectDir, taskId));
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
    ...(input.network?.length ? { network: [...input.network] } : {}),
  };
  await addDirectory(info, { ...input, projectDir: realProjectDir, newBranch: true, tip: base });
  return info;
}

/** The caches none of whose real paths holds or lies inside `guarded`'s directories; each other one is reported. */
function cachesClearOf(caches: readonly string[], guarded: GuardedDirs, report?: (dir: string, why: string) => void): string[] {
  return caches.filter((dir) => {
    const why = cacheRefusal(dir, guarded);
    if (why) report?.(dir, why);
    return !why;
  });
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
    // OpenCode's config there is the user's, whatever git checked out (guardConfig), before anything boots an instance there
    const config = await guardConfig({ repo, path, directory: info.directory }, !!input.sandbox && input.sandbox.kind === "bwrap");
    info.linked = [];
    // a cache whose real path leads into the checkout or its git directory is left out (a link can; options.ts warned of the entries as written)
    const sandbox = input.sandbox && {
      ...input.sandbox,
      caches: cachesClearOf(input.sandbox.caches, { checkout: repo, gitDir: info.commonDir }, input.onCacheLeftOut),
    };
    let layout;
    if (sandbox) {
      const prepared = await prepareSandbox({
        worktree: path,
        gitDir: info.gitDir,
        commonDir: info.commonDir,
        branch,
        head: input.tip,
        projectID: input.projectID,
        taskId: input.taskId,
        choice: sandbox,
        protect: config.map((rel) => join(path, rel)),
        env: input.env,
      });
      info.sandboxDir = prepared.dir;
      layout = prepared.layout;
    }
    // ready to work before the child's first step: .worktreeinclude's entries, the set-up command (in the sandbox, as contained as the child)
    const made = await readyWorktree({
      repo,
      projectDir: input.projectDir,
      worktree: path,
      directory: info.directory,
      sandbox: sandbox && layout ? { tool: { kind: sandbox.kind, path: sandbox.path }, layout, branch } : undefined,
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

/**
 * Makes OpenCode's config in a task's worktree the user's (`worktree` is the record's path, `repo`
 * the user's checkout): at each level OpenCode reads, from the child's directory up to the
 * worktree's top, whatever is at opencode.json, opencode.jsonc and .opencode (checked out from the
 * branch, or left by a child) goes, and the user's own takes its place: a file as a copy, the
 * `.opencode` directory as a real directory of links to each of its entries (a real entry, so the
 * sandbox can mount it read-only: a link would be followed). Where the user has none, `placeholders`
 * (bubblewrap: a mount needs something to mount over) leaves an empty file (OpenCode reads it as `{}`)
 * or an empty config directory (EMPTY_CONFIG_DIR: nothing to load, nothing to install). A level that
 * is not a real directory of the worktree (a child's link out of it) is made one again first, so
 * nothing here writes outside the worktree. Returns the entries (relative to the worktree), which a
 * run's commit keeps as the branch started. Throws a clear error.
 */
export async function guardConfig(info: Pick<WorktreeInfo, "repo" | "path" | "directory">, placeholders: boolean): Promise<string[]> {
  const entries: string[] = [];
  for (const rel of configLevels(info)) {
    const level = await realLevel(info.path, rel);
    for (const name of CONFIG_ENTRIES) {
      const target = join(level, name);
      const source = join(info.repo, rel, name);
      await fs.rm(target, { recursive: true, force: true });
      const stat = await fs.stat(source).catch(() => undefined);
      if (stat?.isDirectory()) {
        await fs.mkdir(target);
        for (const entry of await fs.readdir(source)) await fs.symlink(join(source, entry), join(target, entry));
      } else if (stat?.isFile()) {
        await fs.copyFile(source, target);
      } else if (placeholders) {
        if (name === ".opencode") {
          await fs.mkdir(join(target, "node_modules"), { recursive: true });
          for (const [file, text] of Object.entries(EMPTY_CONFIG_DIR)) await fs.writeFile(join(target, file), text);
        } else await fs.writeFile(target, "");
      }
      entries.push(rel ? `${rel.split(sep).join("/")}/${name}` : name);
    }
  }
  return entries;
}

/** The levels OpenCode reads config from, relative to the worktree's top: the child's directory, then each one up to "". */
export function configLevels(info: Pick<WorktreeInfo, "path" | "directory">): string[] {
  const levels: string[] = [];
  for (let rel = relative(info.path, info.directory); ; rel = dirname(rel)) {
    if (rel.startsWith("..") || isAbsolute(rel)) throw new GitError(`the task's directory ${info.directory} is not inside its worktree ${info.path}`);
    levels.push(rel === "." ? "" : rel);
    if (rel === "." || rel === "") break;
  }
  return levels;
}

/** `rel` under the worktree as a real directory, each component checked with lstat (a link or a file there is replaced by a directory). */
async function realLevel(worktree: string, rel: string): Promise<string> {
  let dir = worktree;
  for (const part of rel ? rel.split(sep) : []) {
    dir = join(dir, part);
    const stat = await fs.lstat(dir).catch(() => undefined);
    if (stat?.isDirectory()) continue;
    if (stat) await fs.rm(dir, { force: true });
    await fs.mkdir(dir);
  }
  return dir;
}

/** The config entries of a worktree (relative to its top), as guardConfig writes them: what a run's commit keeps as the branch started. */
export function configEntries(info: Pick<WorktreeInfo, "path" | "directory">): string[] {
  return configLevels(info).flatMap((rel) => CONFIG_ENTRIES.map((name) => (rel ? `${rel.split(sep).join("/")}/${name}` : name)));
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
  // the files that run on their own in the checkout (runs-alone.ts): the TUI shows them before a person takes them
  const runs = files.length ? (await runsAloneIn(info.repo, { from: info.base, to: head })).slice(0, RUNS_LISTED) : [];
  const changes =
    files.length || head !== info.base
      ? {
          files: files.slice(0, SUMMARY_MAX_FILES),
          fileCount: files.length,
          insertions,
          deletions,
          ...(files.length > SUMMARY_MAX_FILES ? { paths: files.slice(0, CHANGED_PATHS_MAX) } : {}),
          ...(runs.length ? { runs: runs.map((r) => `${r.path}: ${r.why}`.slice(0, 600)) } : {}),
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
  // (no network, no caches: the commit is the plugin's own script)
  const layout = layoutOf(info, info.path, basename(info.path), { caches: [] });
  await ensurePrivateState(layout, info.containment);
  return commitInSandbox({
    tool: { kind: info.containment, path: sandboxPath },
    layout,
    repo: info.repo,
    branch: info.branch,
    base: info.base,
    message,
    linked: info.linked,
    config: configEntries(info),
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
  // the entries linked to the checkout are the parent's, never the task's change (a pathspec naming an ignored path would fail the add)
  if (info.linked.length) await git(["rm", "-r", "--cached", "-q", "--ignore-unmatch", "--", ...info.linked.map((p) => `:(literal)${p}`)], { cwd, env });
  // OpenCode's config is the user's, never the task's change: the index holds it as the branch started
  await git(["reset", "-q", info.base, "--", ...configEntries(info).map((p) => `:(literal)${p}`)], { cwd, env });
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
