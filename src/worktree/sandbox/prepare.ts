// A task's sandbox on disk: its private directory (the child's object store, refs, reflogs, its copy
// of the worktree's admin directory and temp directory; the BASH_ENV script that enters the sandbox,
// the seccomp filter and, with allowed hosts, the bridge's script and the bridge), made when the
// task's worktree is made and removed with it. Everything here is written by the host before the
// child runs; nothing in it is read back as trusted (run.ts checks what it imports).
//
// Where: `$XDG_DATA_HOME/opencode/plugins/offshoot/sandboxes/<project id>/<task id>`, beside the
// worktrees. Size: a copy of the repository's loose refs and of the worktree's admin directory (its
// index: about 100 bytes a tracked file), then what the child's git writes (its objects, its reflogs)
// and its temp files; it goes when the worktree goes (discard, take, a run that changed nothing, a
// committed run's freed directory) or, orphaned, at the next start-up's sweep.
//
// The tasks' own caches (`$XDG_DATA_HOME/opencode/plugins/offshoot/caches`: npm, pip, go, cargo…,
// plan.ts TASK_CACHE_VARIABLES) are shared by every task of the user and never read by the user's own
// builds. Size: what the tools put there (like the user's own caches). Retention: removed whole at a
// start-up when no launch used them for CACHES_UNUSED_DAYS days (`sweepTaskCaches`).

import { promises as fs } from "node:fs";
import { homedir } from "node:os";
import { dirname, isAbsolute, join, sep } from "node:path";
import { git } from "../git.js";
import { BRIDGE_SOURCE, closeTaskNetwork, openTaskNetwork } from "./network.js";
import { TASK_CACHE_VARIABLES, type SandboxLayout, enterScript, enterScriptSeatbelt, netScript, privatePaths } from "./plan.js";
import type { SandboxTool } from "./probe.js";
import { seccompFilter } from "./seccomp.js";

/** `$XDG_DATA_HOME/opencode/plugins/offshoot/sandboxes`: every project's task sandboxes live below it. */
export function sandboxesHome(env: NodeJS.ProcessEnv = process.env): string {
  return join(pluginData(env), "sandboxes");
}

/** `$XDG_DATA_HOME/opencode/plugins/offshoot/caches`: the tasks' own caches (plan.ts TASK_CACHE_VARIABLES). */
export function taskCachesHome(env: NodeJS.ProcessEnv = process.env): string {
  return join(pluginData(env), "caches");
}

function pluginData(env: NodeJS.ProcessEnv): string {
  const dataHome = env.XDG_DATA_HOME || join(env.HOME || homedir(), ".local", "share");
  return join(dataHome, "opencode", "plugins", "offshoot");
}

/** The file whose time says when a launch last used the tasks' caches. */
const CACHES_STAMP = ".last-used";
/** The tasks' caches go whole at a start-up after this many days without a launch that used them. */
export const CACHES_UNUSED_DAYS = 14;

/** What a task's record keeps of its sandbox (WorktreeInfo). */
export interface SandboxRecord {
  sandboxDir: string;
  gitDir: string;
  commonDir: string;
}

/** The caches the user allows, as existing real directories (`~/` is the home directory); none that holds the home directory. */
export async function writableCaches(entries: readonly string[], env: NodeJS.ProcessEnv = process.env): Promise<string[]> {
  const home = env.HOME || homedir();
  const guarded = { home: await fs.realpath(home).catch(() => home) };
  const out: string[] = [];
  for (const entry of entries) {
    const path = expandHome(entry, home);
    if (!isAbsolute(path)) continue; // (the option's parse warned of it: options.ts)
    const real = await fs.realpath(path).catch(() => undefined);
    const stat = real ? await fs.stat(real).catch(() => undefined) : undefined;
    if (real && stat?.isDirectory() && !cacheRefusal(real, guarded)) out.push(real);
  }
  return out;
}

/** An entry of `sandboxWritable` with `~` and `~/` read as the home directory. */
export function expandHome(entry: string, home: string): string {
  return entry === "~" ? home : entry.startsWith("~/") ? join(home, entry.slice(2)) : entry;
}

/**
 * What a writable cache must keep clear of: it may lie inside the home directory but never hold it
 * (a child that writes ~/.bashrc reaches every later shell of yours); it may neither hold nor lie
 * inside the checkout or its git directory (what the sandbox exists to keep the child out of).
 */
export interface GuardedDirs {
  readonly home?: string;
  readonly checkout?: string;
  readonly gitDir?: string;
}

/**
 * Why `dir` (absolute, normalised: no `..`, no trailing separator) cannot be writable in the sandbox,
 * or undefined when it can. Pure: it compares the paths as given (the caller decides whether they
 * are real paths or the entries as written).
 */
export function cacheRefusal(dir: string, guarded: GuardedDirs): string | undefined {
  if (guarded.home && holds(dir, guarded.home)) return dir === guarded.home ? "it is your home directory" : `it holds your home directory ${guarded.home}`;
  // (no checkout: OpenCode's "/" outside git)
  const kept = [
    ["your checkout", guarded.checkout],
    ["your checkout's git directory", guarded.gitDir],
  ].filter((pair): pair is [string, string] => Boolean(pair[1]) && pair[1] !== sep);
  for (const [what, path] of kept) if (holds(dir, path)) return dir === path ? `it is ${what}` : `it holds ${what} ${path}`;
  // (the git directory first: the narrower name, when it lies in the checkout)
  for (const [what, path] of kept.reverse()) if (holds(path, dir)) return `it is inside ${what} ${path}`;
  return undefined;
}

/** Whether `outer` is `inner` or one of its ancestors. */
function holds(outer: string, inner: string): boolean {
  return inner === outer || inner.startsWith(outer.endsWith(sep) ? outer : outer + sep);
}

/** The OS sandbox a worktree child runs in, as chosen at its launch (launch.ts sandboxFor): the tool, and what the layout takes besides its paths. */
export interface SandboxChoice {
  kind: SandboxTool;
  path: string;
  /** the caches the user allows (writableCaches) */
  caches: readonly string[];
  /** the tasks' own caches (taskCachesHome) */
  taskCaches?: string | undefined;
  /** cache variables the user points into a directory they share (sandboxWritable): left as they are */
  sharedCacheVariables?: readonly string[] | undefined;
  /** the hosts its commands may reach through the proxy (none: no network) */
  hosts?: readonly string[] | undefined;
  /** variables passed in although their names say they hold secrets */
  passEnv?: readonly string[] | undefined;
  /** bash (the probe's), and the runtime that runs the bridge (this plugin's) */
  shell?: string | undefined;
  runtime?: readonly string[] | undefined;
}

/** The program that runs the bridge inside the sandbox: the runtime this plugin runs on (OpenCode's Bun, which runs a script as `bun` with BUN_BE_BUN=1; or Node). */
export function bridgeRuntime(): string[] {
  return process.versions.bun ? ["/usr/bin/env", "BUN_BE_BUN=1", process.execPath] : [process.execPath];
}

/**
 * What a task's sandbox is made with on this machine now: the probe's tool and bash, the options'
 * caches, hosts and variables, and the task's own hosts (its record's `network`).
 */
export async function chooseSandbox(
  probe: { tool: SandboxTool; path: string; bash: string },
  options: { sandboxWritable: readonly string[]; sandboxNetwork: readonly string[]; sandboxPassEnv: readonly string[] },
  taskHosts: readonly string[] = [],
  env: NodeJS.ProcessEnv = process.env,
): Promise<SandboxChoice> {
  const caches = await writableCaches(options.sandboxWritable, env);
  // a cache variable of the user's that points into a directory they chose to share stays theirs (they were warned: options.ts)
  const shared: string[] = [];
  for (const [name] of TASK_CACHE_VARIABLES) {
    const value = env[name];
    const real = value && isAbsolute(value) ? await fs.realpath(value).catch(() => undefined) : undefined;
    if (real && caches.some((dir) => real === dir || real.startsWith(`${dir}/`))) shared.push(name);
  }
  return {
    kind: probe.tool,
    path: probe.path,
    caches,
    taskCaches: taskCachesHome(env),
    sharedCacheVariables: shared,
    hosts: [...new Set([...options.sandboxNetwork, ...taskHosts])],
    passEnv: options.sandboxPassEnv,
    shell: probe.bash,
    runtime: bridgeRuntime(),
  };
}

/** The layout of a task's sandbox from its record and its choice (`protect`: its config entries, worktree.ts guardConfig). */
export function layoutOf(
  record: SandboxRecord,
  worktree: string,
  taskId: string,
  choice: Pick<SandboxChoice, "caches" | "taskCaches" | "sharedCacheVariables" | "hosts" | "passEnv" | "shell" | "runtime">,
  protect: readonly string[] = [],
): SandboxLayout {
  const hosts = choice.hosts ?? [];
  return {
    worktree,
    gitDir: record.gitDir,
    commonDir: record.commonDir,
    privateDir: record.sandboxDir,
    caches: choice.caches,
    taskCaches: choice.taskCaches,
    sharedCacheVariables: choice.sharedCacheVariables,
    protect,
    network: hosts.length && choice.shell && choice.runtime ? { hosts, shell: choice.shell, runtime: choice.runtime } : undefined,
    passEnv: choice.passEnv,
    taskId,
  };
}

/**
 * Makes a new worktree's sandbox (right after `git worktree add`, before the child exists): the
 * private bare repository whose objects are the child's (the repository's objects as its
 * alternate), a copy of the repository's refs, an empty reflog directory, a copy of the worktree's
 * admin directory, the temp directory, and the files that enter the sandbox (`writeSandboxFiles`).
 * Throws a clear error; the caller removes what was made.
 */
export async function prepareSandbox(input: {
  worktree: string;
  /** the worktree's admin directory and the repository's common one, as read when the worktree was made */
  gitDir: string;
  commonDir: string;
  branch: string;
  /** the commit the branch names now (the caller just made the worktree from it) */
  head: string;
  projectID: string;
  taskId: string;
  choice: SandboxChoice;
  /** the worktree's config entries (read-only inside) */
  protect: readonly string[];
  env?: NodeJS.ProcessEnv;
}): Promise<{ dir: string; layout: SandboxLayout }> {
  const { worktree, gitDir, commonDir } = input;
  const { head } = input;
  const home = join(sandboxesHome(input.env), input.projectID);
  await fs.mkdir(home, { recursive: true, mode: 0o700 });
  const dir = join(await fs.realpath(home), input.taskId);
  await fs.rm(dir, { recursive: true, force: true }); // a leftover of a killed launch of the same id
  await fs.mkdir(dir, { mode: 0o700 });
  const own = privatePaths(dir);
  await git(["init", "--bare", "-q", own.git], { cwd: dir });
  await fs.writeFile(join(own.objects, "info", "alternates"), `${join(commonDir, "objects")}\n`);
  // the repository's refs as they are now (loose ones; packed ones are read from packed-refs), and the task's branch
  await copyRefs(join(commonDir, "refs"), own.refs);
  await fs.mkdir(dirname(join(own.refs, "heads", input.branch)), { recursive: true });
  await fs.writeFile(join(own.refs, "heads", input.branch), `${head}\n`);
  await fs.mkdir(own.logs);
  await fs.mkdir(own.tmp);
  // the worktree's admin directory as git just made it: the child's HEAD, index and reflog are written there, never in the repository
  await fs.cp(gitDir, own.admin, { recursive: true, verbatimSymlinks: true });
  // the mount points must exist in the repository (git makes logs/ at its first reflog anyway)
  await fs.mkdir(join(commonDir, "logs"), { recursive: true });
  const layout = layoutOf({ sandboxDir: dir, gitDir, commonDir }, worktree, input.taskId, input.choice, input.protect);
  await writeSandboxFiles(input.choice, layout, input.branch);
  return { dir, layout };
}

/**
 * (Re)writes the files that enter a task's sandbox, as this process runs it now: the BASH_ENV
 * script, the seccomp filter, with allowed hosts the bridge and its script (and opens the task's
 * proxy); makes the tasks' caches. Called when the sandbox is made, and when a process hosts a task
 * whose directory is still there (a restart: the scripts then say what this version and these
 * options say). Throws a clear error.
 */
export async function writeSandboxFiles(choice: SandboxChoice, layout: SandboxLayout, branch: string): Promise<void> {
  const own = privatePaths(layout.privateDir);
  if (layout.taskCaches) {
    await fs.mkdir(layout.taskCaches, { recursive: true, mode: 0o700 });
    const stamp = join(layout.taskCaches, CACHES_STAMP);
    await fs.writeFile(stamp, "");
  }
  await ensurePrivateState(layout, choice.kind);
  if (layout.network) {
    if (choice.kind !== "bwrap") throw new Error("allowed hosts need the Linux sandbox (bubblewrap): on macOS a worktree task has no network");
    await fs.writeFile(own.bridge, BRIDGE_SOURCE, { mode: 0o644 });
    await fs.writeFile(own.netScript, netScript(choice.path, { ...layout, network: layout.network }), { mode: 0o644 });
    await openTaskNetwork(layout.privateDir, own.proxy, layout.network.hosts);
  }
  const script = choice.kind === "bwrap" ? enterScript(choice.path, layout) : enterScriptSeatbelt(choice.path, layout, branch);
  await fs.writeFile(own.enter, script, { mode: 0o644 });
}

/**
 * What every command in the sandbox needs of the private directory besides what the sandbox was
 * made with: the private admin directory (a sandbox made by an earlier version has none: it starts
 * from the repository's, which the child wrote in place then) and the seccomp filter.
 */
export async function ensurePrivateState(layout: SandboxLayout, tool: SandboxTool): Promise<void> {
  const own = privatePaths(layout.privateDir);
  if (!(await exists(own.admin))) await fs.cp(layout.gitDir, own.admin, { recursive: true, verbatimSymlinks: true });
  if (tool !== "bwrap") return;
  const filter = seccompFilter();
  if (!filter) throw new Error(`no seccomp filter is written for this CPU (${process.arch}): the sandbox cannot keep a task from the user's unix sockets`);
  await fs.writeFile(own.seccomp, filter, { mode: 0o644 });
}

async function exists(path: string): Promise<boolean> {
  return fs.lstat(path).then(
    () => true,
    () => false,
  );
}

/** Start-up: the tasks' caches go whole when no launch used them for CACHES_UNUSED_DAYS days (and no task is running). */
export async function sweepTaskCaches(now: number, env: NodeJS.ProcessEnv = process.env): Promise<boolean> {
  const home = taskCachesHome(env);
  const stat = await fs.stat(join(home, CACHES_STAMP)).catch(() => undefined);
  if (!stat || now - stat.mtimeMs < CACHES_UNUSED_DAYS * 24 * 60 * 60 * 1000) return false;
  await fs.rm(home, { recursive: true, force: true });
  return true;
}

/**
 * Copies a refs directory as it is now. Other launches and removals change it meanwhile (a branch
 * made or deleted, git's `<ref>.lock` files come and go): a ref gone before it is read was deleted
 * and is not copied, and a lock file is not a ref. (`fs.cp` failed the launch on such a ref: ENOENT.)
 */
export async function copyRefs(from: string, to: string): Promise<void> {
  await fs.mkdir(to, { recursive: true });
  const entries = await fs.readdir(from, { withFileTypes: true }).catch((error: NodeJS.ErrnoException) => {
    if (error.code === "ENOENT") return [];
    throw error;
  });
  for (const entry of entries) {
    const source = join(from, entry.name);
    const target = join(to, entry.name);
    if (entry.isDirectory()) await copyRefs(source, target);
    else if (entry.isFile() && !entry.name.endsWith(".lock"))
      await fs.copyFile(source, target).catch((error: NodeJS.ErrnoException) => {
        if (error.code !== "ENOENT") throw error;
      });
  }
}

/** Removes a task's sandbox directory and closes its proxy (idempotent). */
export async function removeSandbox(dir: string | undefined): Promise<void> {
  if (!dir) return;
  await closeTaskNetwork(dir);
  await fs.rm(dir, { recursive: true, force: true });
}

/** Start-up: the sandbox directories of this project that no task names are removed. */
export async function sweepSandboxes(projectID: string, isKnown: (taskId: string) => boolean, env?: NodeJS.ProcessEnv): Promise<string[]> {
  const home = join(sandboxesHome(env), projectID);
  const removed: string[] = [];
  for (const name of await fs.readdir(home).catch(() => [] as string[])) {
    if (isKnown(name)) continue;
    await fs.rm(join(home, name), { recursive: true, force: true });
    removed.push(join(home, name));
  }
  return removed;
}
