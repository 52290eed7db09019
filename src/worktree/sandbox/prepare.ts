// A task's sandbox on disk: its private directory (the child's object store, refs, reflogs and temp
// directory, and the BASH_ENV script that enters the sandbox), made when the task's worktree is made
// and removed with it. Everything here is written by the host before the child runs; nothing in it
// is read back as trusted (run.ts checks what it imports).
//
// Where: `$XDG_DATA_HOME/opencode/plugins/offshoot/sandboxes/<project id>/<task id>`, beside the
// worktrees. Size: a copy of the repository's loose refs (a few KB), then what the child's git writes
// (its objects, its reflogs) and its temp files; it goes when the worktree goes (discard, take, a run
// that changed nothing) or, orphaned, at the next start-up's sweep.

import { promises as fs } from "node:fs";
import { homedir } from "node:os";
import { dirname, isAbsolute, join, sep } from "node:path";
import { git } from "../git.js";
import { type SandboxLayout, enterScript, enterScriptSeatbelt, privatePaths } from "./plan.js";
import type { SandboxTool } from "./probe.js";

/** `$XDG_DATA_HOME/opencode/plugins/offshoot/sandboxes`: every project's task sandboxes live below it. */
export function sandboxesHome(env: NodeJS.ProcessEnv = process.env): string {
  const dataHome = env.XDG_DATA_HOME || join(env.HOME || homedir(), ".local", "share");
  return join(dataHome, "opencode", "plugins", "offshoot", "sandboxes");
}

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

/** The layout of a task's sandbox from its record. */
export function layoutOf(record: SandboxRecord, worktree: string, taskId: string, caches: readonly string[]): SandboxLayout {
  return { worktree, gitDir: record.gitDir, commonDir: record.commonDir, privateDir: record.sandboxDir, caches, taskId };
}

/**
 * Makes a new worktree's sandbox (right after `git worktree add`, before the child exists): the
 * private bare repository whose objects are the child's (the repository's objects as its
 * alternate), a copy of the repository's refs, an empty reflog directory, the temp directory, and
 * the script that enters the sandbox. Throws a clear error; the caller removes what was made.
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
  tool: SandboxTool;
  toolPath: string;
  caches: readonly string[];
  env?: NodeJS.ProcessEnv;
}): Promise<string> {
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
  // the mount points must exist in the repository (git makes logs/ at its first reflog anyway)
  await fs.mkdir(join(commonDir, "logs"), { recursive: true });
  const layout = layoutOf({ sandboxDir: dir, gitDir, commonDir }, worktree, input.taskId, input.caches);
  const script = input.tool === "bwrap" ? enterScript(input.toolPath, layout) : enterScriptSeatbelt(input.toolPath, layout, input.branch);
  await fs.writeFile(own.enter, script, { mode: 0o644 });
  return dir;
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

/** Removes a task's sandbox directory (idempotent). */
export async function removeSandbox(dir: string | undefined): Promise<void> {
  if (dir) await fs.rm(dir, { recursive: true, force: true });
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
