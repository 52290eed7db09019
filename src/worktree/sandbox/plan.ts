// What a worktree child's sandbox allows, as data, and the two ways to say it to a kernel:
// bubblewrap's arguments (Linux) and a sandbox-exec profile (macOS). Pure: no I/O here; the
// files and processes are prepare.ts's and run.ts's.
//
// The rule (openspec background-task, "Contained by the kernel"): everything is readable and
// nothing is writable, but
// - the child's worktree;
// - its own git state: the worktree's admin directory (<common>/worktrees/<name>: HEAD, index,
//   rebase state), a private object store (GIT_OBJECT_DIRECTORY, with the repository's objects as an
//   alternate: read, never written) and, on Linux, private copies of the repository's refs and
//   reflogs mounted over <common>/refs and <common>/logs: a branch, tag or stash made inside stays
//   inside; the host imports the one commit the task ends on (run.ts), checked by git's fsck;
// - its own temp directory (TMPDIR);
// - the caches the user allows (option `sandboxWritable`).
// The repository's config, hooks, info, packed-refs, objects, other worktrees, the user's checkout
// and home stay read-only. Bubblewrap also gives the child its own process namespace and /proc
// (no /proc/<host pid>/root or cwd into the host's mounts), and kills whatever the command left
// running when it ends.

import { join } from "node:path";

/** Where one task's sandbox writes, and what it mounts where. */
export interface SandboxLayout {
  /** the task's worktree (its root) */
  worktree: string;
  /** the worktree's admin directory in the repository (<common>/worktrees/<name>), recorded at creation */
  gitDir: string;
  /** the repository's common git directory (<repo>/.git) */
  commonDir: string;
  /** the task's private directory (sandbox.ts: under the plugin's data directory) */
  privateDir: string;
  /** more writable directories: the caches the user allows (absolute, existing) */
  caches: readonly string[];
  /** the task, for the marker variable */
  taskId: string;
}

/** The files of a task's private directory. */
export function privatePaths(dir: string) {
  return {
    /** a bare repository: its objects are the child's object store; the host fetches from it */
    git: join(dir, "git"),
    objects: join(dir, "git", "objects"),
    /** a copy of the repository's refs (mounted over <common>/refs) */
    refs: join(dir, "refs"),
    /** the child's reflogs (mounted over <common>/logs) */
    logs: join(dir, "logs"),
    tmp: join(dir, "tmp"),
    /** the BASH_ENV script that re-runs a bash command inside the sandbox */
    enter: join(dir, "enter.sh"),
  };
}

export interface Mount {
  source: string;
  target: string;
}

/** What is writable inside the sandbox, mounted from where. */
export function writableMounts(layout: SandboxLayout): Mount[] {
  const own = privatePaths(layout.privateDir);
  const same = (path: string): Mount => ({ source: path, target: path });
  return [
    same(layout.worktree),
    same(layout.gitDir),
    same(own.objects),
    { source: own.refs, target: join(layout.commonDir, "refs") },
    { source: own.logs, target: join(layout.commonDir, "logs") },
    same(own.tmp),
    ...layout.caches.map(same),
  ];
}

/** The environment inside the sandbox (on top of the command's own). */
export function sandboxEnv(layout: SandboxLayout): Record<string, string> {
  const own = privatePaths(layout.privateDir);
  return {
    TMPDIR: own.tmp,
    GIT_OBJECT_DIRECTORY: own.objects,
    GIT_ALTERNATE_OBJECT_DIRECTORIES: join(layout.commonDir, "objects"),
    // no automatic gc or maintenance: they would write the repository's shared files
    GIT_CONFIG_COUNT: "2",
    GIT_CONFIG_KEY_0: "gc.auto",
    GIT_CONFIG_VALUE_0: "0",
    GIT_CONFIG_KEY_1: "maintenance.auto",
    GIT_CONFIG_VALUE_1: "false",
    OFFSHOOT_SANDBOX: layout.taskId,
  };
}

/** What every bubblewrap sandbox starts with (the probe runs exactly this around `true`): its own processes and /proc, a read-only root. */
export const BWRAP_BASE: readonly string[] = [
  "--die-with-parent",
  "--new-session",
  "--unshare-pid",
  "--unshare-ipc",
  "--unshare-uts",
  "--unshare-cgroup-try",
  "--ro-bind",
  "/",
  "/",
  "--dev",
  "/dev",
  "--proc",
  "/proc",
];

/**
 * bubblewrap's arguments, up to (not including) `--chdir` and the command. Order matters: the
 * read-only root first, then the writable mounts over it.
 */
export function bwrapArgs(layout: SandboxLayout): string[] {
  const args = [...BWRAP_BASE];
  for (const mount of writableMounts(layout)) args.push("--bind", mount.source, mount.target);
  for (const [key, value] of Object.entries(sandboxEnv(layout))) args.push("--setenv", key, value);
  args.push("--unsetenv", "BASH_ENV");
  return args;
}

/** A string as a sandbox-exec (SBPL) literal. */
function sbplString(text: string): string {
  return `"${text.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

/** An exact path as an SBPL regex (for the ref's lock file beside it). */
function sbplRegexOf(path: string): string {
  return path.replace(/[.*+?^${}()|[\]\\/]/g, (c) => `\\${c}`);
}

/**
 * The macOS profile (sandbox-exec -p): reads allowed, writes denied but under the writable paths.
 * Seatbelt cannot mount, so the refs are not private there: the task's own branch ref, its lock and
 * its reflog are writable in place (other branches, tags, the stash, config and hooks are not).
 * Not run on these machines (no macOS): its text is unit-tested against the same rules.
 */
export function seatbeltProfile(layout: SandboxLayout, branch: string): string {
  const own = privatePaths(layout.privateDir);
  const ref = join(layout.commonDir, "refs", "heads", branch);
  const log = join(layout.commonDir, "logs", "refs", "heads", branch);
  const subpaths = [layout.worktree, layout.gitDir, own.objects, own.tmp, ...layout.caches];
  return [
    "(version 1)",
    "(allow default)",
    "(deny file-write*)",
    `(allow file-write* ${subpaths.map((p) => `(subpath ${sbplString(p)})`).join(" ")})`,
    `(allow file-write* (regex #"^${sbplRegexOf(ref)}(\\.lock)?$") (regex #"^${sbplRegexOf(log)}(\\.lock)?$"))`,
    '(allow file-write* (literal "/dev/null") (literal "/dev/tty") (regex #"^/dev/fd/"))',
    "",
  ].join("\n");
}

/** A word for a POSIX shell script, quoted. */
export function shellQuote(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/**
 * The BASH_ENV script: a non-interactive bash reads it before the command, and it runs the same
 * command again inside the sandbox. A failed `exec` ends a non-interactive bash, so the command never
 * runs outside (fail closed).
 */
export function enterScript(bwrap: string, layout: SandboxLayout): string {
  const args = bwrapArgs(layout).map(shellQuote).join(" ");
  return [
    "# opencode-offshoot: this bash command runs inside the task's sandbox (src/sandbox/plan.ts)",
    "unset BASH_ENV",
    `exec ${shellQuote(bwrap)} ${args} --chdir "$PWD" -- "$BASH" -c "$BASH_EXECUTION_STRING"`,
    "",
  ].join("\n");
}

/** The macOS counterpart of `enterScript`: sandbox-exec with the profile, the variables set by env. */
export function enterScriptSeatbelt(sandboxExec: string, layout: SandboxLayout, branch: string): string {
  const vars = Object.entries(sandboxEnv(layout)).map(([key, value]) => shellQuote(`${key}=${value}`));
  return [
    "# opencode-offshoot: this bash command runs inside the task's sandbox (src/sandbox/plan.ts)",
    "unset BASH_ENV",
    `exec ${shellQuote(sandboxExec)} -p ${shellQuote(seatbeltProfile(layout, branch))} /usr/bin/env ${vars.join(" ")} "$BASH" -c "$BASH_EXECUTION_STRING"`,
    "",
  ].join("\n");
}
