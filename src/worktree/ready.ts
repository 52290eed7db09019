// A new worktree made ready to work before its child's first step (openspec background-tasks,
// "A worktree is ready to work"): the ignored files and directories `.worktreeinclude` lists are
// brought in from the checkout, and the set-up command of the plugin options runs in it.
//
// Rules:
// - `.worktreeinclude` (gitignore syntax, at the repository's top) is matched by git itself:
//   `git ls-files --others --ignored --exclude-from=<file> --directory` (a whole directory is one
//   entry). The file is hostile input: at most INCLUDE_MAX_BYTES, a regular file; an entry that is
//   not ignored by the repository's own rules is skipped (the snapshot brought it already, or it would
//   be committed as the task's change); an entry that leads outside the repository (a symlink), or
//   into a .git directory, is skipped; nothing is written through a worktree path that leads out of it.
// - The cheapest safe way per kind: a copy-on-write clone where the file system has one (probed
//   once: FICLONE); otherwise, in an OS sandbox, a directory is a symlink to the checkout's (the
//   sandbox mounts the checkout read-only, and the host's file tools refuse a path that leads out of
//   the worktree: paths.ts), and everything else is a byte copy. Symlinks inside a copied tree are
//   copied as they are (node_modules/.bin's relative links stay relative).
// - The set-up command runs in the child's directory, inside the task's sandbox when it has one,
//   with a time limit that kills it with every process it started; a failure throws (the caller,
//   createWorktree, removes the worktree, its sandbox and its branch).

import { type ChildProcess, spawn } from "node:child_process";
import { constants, promises as fs } from "node:fs";
import { dirname, join, relative, sep } from "node:path";
import type { WorktreeReady } from "../task-record.js";
import { runGit } from "./git.js";
import type { SandboxLayout } from "./sandbox/plan.js";
import type { SandboxTool } from "./sandbox/probe.js";
import { spawnInSandbox } from "./sandbox/run.js";
import { NO_COW, includeRefused, readyHint, setupFailed } from "./ready.txt.js";

/** The largest .worktreeinclude read. */
export const INCLUDE_MAX_BYTES = 64 * 1024;
/** The most entries brought from one .worktreeinclude (the rest are counted in `more`). */
export const INCLUDE_MAX_ENTRIES = 200;
/** The most entries a task's record lists. */
export const READY_LISTED = 50;
/** The most directories linked (they join the record's `linked`, which holds at most 50). */
const LINKS_MAX = 40;
/** What of the set-up command's output is kept (its end). */
export const SETUP_OUTPUT_MAX = 4000;
/** Big ignored directories a project needs to run: the launch hints at them when nothing brings them. */
export const BIG_IGNORED = ["node_modules", ".venv", "venv", "vendor/bundle"] as const;

export interface ReadyOptions {
  /** the set-up command (a shell command line); empty: none */
  worktreeSetup: string;
  worktreeSetupTimeoutSeconds: number;
}

/** The task's sandbox, for the set-up command and the choice of a link. */
export interface ReadySandbox {
  tool: { kind: SandboxTool; path: string };
  layout: SandboxLayout;
  branch: string;
}

export interface ReadyResult {
  ready?: WorktreeReady;
  /** entries made as symlinks to the checkout (relative to the worktree): never committed (the record's `linked`) */
  linked: string[];
}

/**
 * Makes a worktree ready: brings `.worktreeinclude`'s entries, runs the set-up command, or finds
 * the hint. Throws a clear error when the set-up command fails (what was brought stays: the caller
 * removes the whole worktree).
 */
export async function readyWorktree(input: {
  /** the repository's top (real path) */
  repo: string;
  /** the parent's directory in the checkout (real path) */
  projectDir: string;
  /** the worktree's root, and the child's directory in it */
  worktree: string;
  directory: string;
  sandbox?: ReadySandbox;
  options: ReadyOptions;
}): Promise<ReadyResult> {
  const ready: WorktreeReady = { brought: [] };
  const linked: string[] = [];
  const include = join(input.repo, ".worktreeinclude");
  const includeStat = await fs.lstat(include).catch(() => undefined);
  if (includeStat) {
    const entries = await bringIncluded(input, include, includeStat, linked);
    ready.brought = entries.slice(0, READY_LISTED);
    if (entries.length > READY_LISTED) ready.more = entries.length - READY_LISTED;
  }
  const command = input.options.worktreeSetup.trim();
  if (command) {
    const outcome = await runSetup(command, input.directory, input.options.worktreeSetupTimeoutSeconds * 1000, input.sandbox);
    if (outcome.timedOut || outcome.code !== 0)
      throw new Error(setupFailed(command, { ...outcome, timeoutSeconds: input.options.worktreeSetupTimeoutSeconds }));
    ready.setup = { command: command.slice(0, 4000), code: outcome.code, ms: outcome.ms, output: outcome.output };
  }
  if (!includeStat && !command) {
    const missing = await bigIgnoredMissing(input.repo, input.projectDir, input.worktree);
    if (missing.length) ready.hint = readyHint(missing);
  }
  return { ready: ready.brought.length || ready.setup || ready.hint ? ready : undefined, linked };
}

type Brought = WorktreeReady["brought"][number];

/** The entries git lists for .worktreeinclude, each brought or skipped (with why). */
async function bringIncluded(
  input: { repo: string; worktree: string; sandbox?: ReadySandbox },
  include: string,
  stat: import("node:fs").Stats,
  linked: string[],
): Promise<Brought[]> {
  const refused = (why: string): Brought[] => [{ path: ".worktreeinclude", way: "skipped", reason: includeRefused(why).slice(0, 300) }];
  if (!stat.isFile()) return refused("it is not a regular file (a symlink or a directory)");
  if (stat.size > INCLUDE_MAX_BYTES) return refused(`it is larger than ${INCLUDE_MAX_BYTES} bytes`);
  const listed = await runGit(["ls-files", "-z", "--others", "--ignored", `--exclude-from=${include}`, "--directory"], { cwd: input.repo });
  if (listed.code !== 0) return refused(`git could not match it (${listed.stderr.trim().slice(0, 200)})`);
  const paths = onlyWhatIsMeant(listed.stdout.split("\0").filter(Boolean));
  const out: Brought[] = [];
  const taken = paths.slice(0, INCLUDE_MAX_ENTRIES);
  const ignored = await ignoredByRepo(input.repo, taken);
  const cow = await hasReflink(include, input.worktree);
  for (const path of taken) {
    const brought = await bringOne(input, path, ignored.has(path.replace(/\/$/, "")), cow, linked).catch((error: Error): Brought => ({
      path,
      way: "skipped",
      reason: `it could not be brought: ${error.message}`.slice(0, 300),
    }));
    // (what the worktree has already, e.g. .opencode/node_modules through the linked config, is not news)
    if (brought) out.push(brought);
  }
  for (const path of paths.slice(INCLUDE_MAX_ENTRIES))
    out.push({ path, way: "skipped", reason: `.worktreeinclude matched more than ${INCLUDE_MAX_ENTRIES} entries` });
  return out;
}

/**
 * git also lists an untracked directory that merely holds a matched file (`sub/` for `sub/x.log`):
 * only the file is meant. In sorted order whatever lies under a directory follows it at once, so one
 * pass finds them (linear in the entries after the sort).
 */
export function onlyWhatIsMeant(listed: readonly string[]): string[] {
  const sorted = [...listed].sort();
  return sorted.filter((path, i) => !(path.endsWith("/") && sorted[i + 1]?.startsWith(path)));
}

/** Which of `paths` the repository's own ignore rules ignore (git check-ignore). */
async function ignoredByRepo(repo: string, paths: readonly string[]): Promise<Set<string>> {
  if (!paths.length) return new Set();
  const names = paths.map((path) => path.replace(/\/$/, ""));
  const child = spawn("git", ["check-ignore", "-z", "--stdin"], { cwd: repo, env: { ...process.env, LC_ALL: "C" }, stdio: ["pipe", "pipe", "ignore"] });
  let stdout = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
  child.stdin.on("error", () => {});
  child.stdin.end(`${names.join("\0")}\0`);
  await new Promise<void>((resolve) => child.on("close", () => resolve()).on("error", () => resolve()));
  return new Set(stdout.split("\0").filter(Boolean));
}

/** Whether a copy-on-write clone works from the checkout to the worktree (tried once, on .worktreeinclude itself). */
async function hasReflink(source: string, worktree: string): Promise<boolean> {
  const probe = join(worktree, `.offshoot-reflink-probe-${process.pid}`);
  try {
    await fs.copyFile(source, probe, constants.COPYFILE_FICLONE_FORCE);
    return true;
  } catch {
    return false;
  } finally {
    await fs.rm(probe, { force: true });
  }
}

function inside(root: string, path: string): boolean {
  return path === root || path.startsWith(root + sep);
}

async function bringOne(
  input: { repo: string; worktree: string; sandbox?: ReadySandbox },
  path: string,
  ignored: boolean,
  cow: boolean,
  linked: string[],
): Promise<Brought | undefined> {
  const name = path.replace(/\/$/, "");
  const skip = (reason: string): Brought => ({ path, way: "skipped", reason });
  if (name.split("/").some((part) => part === ".git" || part === ".." || part === "")) return skip("it is inside a .git directory or leaves the repository");
  if (!ignored) return skip("git does not ignore it here, so the worktree has it already (or it would be committed as the task's change)");
  const source = join(input.repo, name);
  const real = await fs.realpath(source).catch(() => undefined);
  if (!real) return skip("it is gone");
  if (!inside(input.repo, real) || inside(join(input.repo, ".git"), real)) return skip("it leads outside the repository (a symbolic link)");
  const target = join(input.worktree, name);
  if (
    await fs.lstat(target).then(
      () => true,
      () => false,
    )
  )
    return undefined; // the worktree has it already
  // the directory it goes into must be the worktree's own: never write through a link out of it
  await fs.mkdir(dirname(target), { recursive: true });
  if (!inside(input.worktree, await fs.realpath(dirname(target)))) return skip("its directory in the worktree leads outside the worktree");
  const stat = await fs.stat(real);
  if (stat.isDirectory()) {
    if (!cow && input.sandbox && linked.length < LINKS_MAX) {
      await fs.symlink(real, target);
      linked.push(name);
      return { path, way: "link" };
    }
    const copied = await copyTree(real, target, cow);
    return brought(path, cow, copied);
  }
  if (!stat.isFile()) return skip("it is neither a file nor a directory");
  const copied = { bytes: 0, fellBack: 0, files: 0 };
  await copyFileInto(real, target, cow, copied);
  return brought(path, cow, copied);
}

function brought(path: string, cow: boolean, copied: { bytes: number; fellBack: number; files: number }): Brought {
  if (!cow) return { path, way: "copy", bytes: copied.bytes, reason: NO_COW };
  // a clone only when some file was cloned; each file that fell back is counted, never called a clone
  if (copied.fellBack === copied.files && copied.files > 0)
    return { path, way: "copy", bytes: copied.bytes, reason: "its copy-on-write clone failed: bytes copied" };
  return { path, way: "reflink", bytes: copied.bytes, ...(copied.fellBack ? { fellBack: copied.fellBack } : {}) };
}

async function copyFileInto(source: string, target: string, cow: boolean, copied: { bytes: number; fellBack: number; files: number }): Promise<void> {
  const size = (await fs.lstat(source)).size;
  copied.files++;
  copied.bytes += size;
  if (cow) {
    const cloned = await fs.copyFile(source, target, constants.COPYFILE_FICLONE_FORCE).then(
      () => true,
      () => false,
    );
    if (cloned) return;
    copied.fellBack++;
  }
  await fs.copyFile(source, target);
}

/** A directory tree copied (or cloned) file by file; symlinks copied as they are; .git, sockets and devices left out. */
async function copyTree(source: string, target: string, cow: boolean, copied = { bytes: 0, fellBack: 0, files: 0 }) {
  const mode = (await fs.stat(source)).mode & 0o7777;
  await fs.mkdir(target, { mode: mode | 0o700 });
  const entries = await fs.readdir(source, { withFileTypes: true });
  const BATCH = 32;
  for (let i = 0; i < entries.length; i += BATCH) {
    await Promise.all(
      entries.slice(i, i + BATCH).map(async (entry) => {
        if (entry.name === ".git") return;
        const from = join(source, entry.name);
        const to = join(target, entry.name);
        if (entry.isSymbolicLink()) await fs.symlink(await fs.readlink(from), to);
        else if (entry.isDirectory()) await copyTree(from, to, cow, copied);
        else if (entry.isFile()) await copyFileInto(from, to, cow, copied);
      }),
    );
  }
  await fs.chmod(target, mode);
  return copied;
}

/** How a set-up command ended. */
export interface SetupOutcome {
  code: number;
  timedOut: boolean;
  ms: number;
  /** the end of its output (stdout and stderr as they came), at most SETUP_OUTPUT_MAX characters */
  output: string;
}

/**
 * Runs the set-up command (`/bin/sh -c`) in `cwd`: inside the sandbox when there is one (bubblewrap
 * ends every process in it when it is killed), else as a process group of its own; at the time limit
 * the group is killed (SIGKILL).
 */
export function runSetup(command: string, cwd: string, timeoutMs: number, sandbox?: ReadySandbox): Promise<SetupOutcome> {
  const argv = ["/bin/sh", "-c", command];
  const started = Date.now();
  return new Promise((resolve) => {
    let output = "";
    let timedOut = false;
    const keep = (chunk: Buffer) => {
      output = (output + chunk.toString("utf8")).slice(-SETUP_OUTPUT_MAX);
    };
    let child: ChildProcess;
    try {
      child = sandbox
        ? spawnInSandbox(sandbox.tool, sandbox.layout, sandbox.branch, argv, { cwd })
        : spawn(argv[0]!, argv.slice(1), { cwd, env: process.env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
    } catch (error) {
      return resolve({ code: 127, timedOut: false, ms: Date.now() - started, output: `the sandbox could not run: ${(error as Error).message}` });
    }
    child.stdout!.on("data", keep);
    child.stderr!.on("data", keep);
    const kill = () => {
      try {
        if (child.pid) process.kill(-child.pid, "SIGKILL");
      } catch {
        child.kill("SIGKILL");
      }
    };
    const timer = setTimeout(() => {
      timedOut = true;
      kill();
    }, timeoutMs);
    let code = 1;
    let ended = false;
    const done = () => {
      if (ended) return;
      ended = true;
      clearTimeout(timer);
      resolve({ code, timedOut, ms: Date.now() - started, output });
    };
    child.on("error", (error) => {
      keep(Buffer.from(`\n${error.message}`));
      code = 127;
      done();
    });
    child.on("exit", (exitCode, signal) => {
      code = exitCode ?? (signal ? 128 : 1);
      kill(); // whatever it left running in its group goes with it
      // its output is read to the end (the pipes close once nothing holds them); a process that left
      // the group and holds them does not keep the launch waiting
      setTimeout(() => {
        child.stdout!.destroy();
        child.stderr!.destroy();
        done();
      }, 2000).unref();
    });
    child.on("close", done);
  });
}

/** The big ignored directories (BIG_IGNORED) the checkout has, at the project's directory or the top, that the worktree lacks. */
async function bigIgnoredMissing(repo: string, projectDir: string, worktree: string): Promise<string[]> {
  const dirs = [...new Set([relative(repo, projectDir), ""])].filter((rel) => !rel.startsWith(".."));
  const out: string[] = [];
  for (const rel of dirs)
    for (const name of BIG_IGNORED) {
      const path = rel ? `${rel.split(sep).join("/")}/${name}` : name;
      const isDir = await fs.lstat(join(repo, path)).then(
        (s) => s.isDirectory(),
        () => false,
      );
      if (
        isDir &&
        !(await fs.lstat(join(worktree, path)).then(
          () => true,
          () => false,
        ))
      )
        out.push(path);
    }
  return out.slice(0, 4);
}
