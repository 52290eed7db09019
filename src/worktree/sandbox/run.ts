// The host's own commands inside a task's sandbox, and the one way the child's work leaves it.
//
// When a run ends, its changes are committed INSIDE the sandbox (the child's git state is the
// child's: its HEAD, index and refs may be anything it made them), and the host then imports the
// one commit the worktree's HEAD names: `git fetch` from the private object store into the task's
// branch, with git's fsck of every object (transfer.fsckObjects). Nothing else of the sandbox is
// read as trusted: the commit id must look like one, the store's alternates must be as written, and
// no child process runs any more (bubblewrap ended them with each command).

import { type ChildProcess, spawn } from "node:child_process";
import { promises as fs } from "node:fs";
import { join } from "node:path";
import { GitError, git, runGit } from "../git.js";
import { type SandboxLayout, privatePaths, sandboxArgv, sandboxEnv, scrubEnv, seatbeltProfile, withFilter } from "./plan.js";
import type { SandboxTool } from "./probe.js";

export interface SandboxRun {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Starts `argv` inside the task's sandbox, in `cwd` (its own process group: `detached`), with the
 * host's environment less what the sandbox drops, `env` on top. Under bubblewrap the seccomp filter
 * is opened on SECCOMP_FD by a shell in the child (plan.ts withFilter), as the BASH_ENV script does;
 * a filter that cannot be opened ends the shell before bubblewrap runs (nothing runs outside).
 */
export function spawnInSandbox(
  tool: { kind: SandboxTool; path: string },
  layout: SandboxLayout,
  branch: string,
  argv: string[],
  options: { cwd: string; env?: Record<string, string>; stdin?: "ignore" | "pipe" },
): ChildProcess {
  const env = { ...scrubEnv(process.env, layout.passEnv), GIT_TERMINAL_PROMPT: "0", GIT_PAGER: "cat", LC_ALL: "C", ...options.env };
  const stdio: ["ignore" | "pipe", "pipe", "pipe"] = [options.stdin ?? "ignore", "pipe", "pipe"];
  if (tool.kind !== "bwrap") {
    const inside = sandboxEnv(layout);
    return spawn(tool.path, ["-p", seatbeltProfile(layout, branch), ...argv], { cwd: options.cwd, env: { ...env, ...inside }, detached: true, stdio });
  }
  const [file, ...args] = withFilter(sandboxArgv(tool.path, layout, argv, options.cwd), privatePaths(layout.privateDir).seccomp);
  return spawn(file!, args, { cwd: options.cwd, env, detached: true, stdio });
}

/** Runs `argv` inside the task's sandbox, in `cwd`, with `env` on top of this process's (less what the sandbox drops). */
export function runInSandbox(
  tool: { kind: SandboxTool; path: string },
  layout: SandboxLayout,
  branch: string,
  argv: string[],
  options: { cwd: string; env?: Record<string, string> },
): Promise<SandboxRun> {
  return new Promise((resolve, reject) => {
    let child: ChildProcess;
    try {
      child = spawnInSandbox(tool, layout, branch, argv, options);
    } catch (error) {
      return reject(new GitError(`the sandbox (${tool.kind}) could not run: ${(error as Error).message}`));
    }
    let stdout = "";
    let stderr = "";
    child.stdout!.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr!.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    child.on("error", (error) => reject(new GitError(`the sandbox (${tool.kind}) could not run: ${error.message}`)));
    child.on("close", (code, signal) => resolve({ code: code ?? (signal ? 128 : 1), stdout, stderr }));
  });
}

/**
 * The script that commits a run inside the sandbox and prints the commit HEAD names ($1: message;
 * $2: the branch's base; $3, $4: files of NUL-separated paths: the entries linked to the checkout,
 * and OpenCode's config entries).
 */
const COMMIT_SCRIPT = [
  "set -e",
  'message="$1"; base="$2"; linked="$3"; config="$4"',
  "git add -A",
  // the entries linked to the checkout (.worktreeinclude's directories) are the parent's, never the task's change
  '[ ! -s "$linked" ] || git --literal-pathspecs rm -r --cached -q --ignore-unmatch --pathspec-from-file="$linked" --pathspec-file-nul',
  // OpenCode's config is the user's, never the task's change: the index holds it as the branch started
  '[ ! -s "$config" ] || git --literal-pathspecs reset -q "$base" --pathspec-from-file="$config" --pathspec-file-nul',
  'if ! git diff --cached --quiet; then git -c core.hooksPath=/dev/null commit -q --no-verify -m "$message"; fi',
  "git rev-parse --verify HEAD^{commit}",
].join("\n");

const COMMIT_ID = /^[0-9a-f]{40}(?:[0-9a-f]{24})?$/;

/**
 * Commits the run inside the sandbox and imports the commit its worktree's HEAD names into the
 * task's branch (forced: the child may have rewritten its own history). Returns the branch's head.
 * Throws a clear error (the worktree stays; nothing is lost).
 */
export async function commitInSandbox(input: {
  tool: { kind: SandboxTool; path: string };
  layout: SandboxLayout;
  repo: string;
  branch: string;
  base: string;
  message: string;
  /** entries linked to the checkout, and OpenCode's config entries (relative to the worktree) */
  linked: readonly string[];
  config: readonly string[];
  author: Record<string, string>;
}): Promise<string> {
  const { layout } = input;
  // the path lists are written by the host where the child cannot write (the private directory's top)
  const lists = { linked: join(layout.privateDir, "commit-linked"), config: join(layout.privateDir, "commit-config") };
  await fs.writeFile(lists.linked, input.linked.map((p) => `${p}\0`).join(""));
  await fs.writeFile(lists.config, input.config.map((p) => `${p}\0`).join(""));
  const committed = await runInSandbox(
    input.tool,
    layout,
    input.branch,
    ["/bin/sh", "-c", COMMIT_SCRIPT, "offshoot-commit", input.message || "offshoot task", input.base, lists.linked, lists.config],
    { cwd: layout.worktree, env: input.author },
  );
  const said = (committed.stderr || committed.stdout).trim().split("\n").slice(-3).join(" ");
  if (committed.code !== 0) throw new GitError(`committing inside the sandbox failed: ${said || `exit code ${committed.code}`}`);
  const head = committed.stdout.trim().split("\n").pop() ?? "";
  if (!COMMIT_ID.test(head)) throw new GitError(`the sandbox's commit is not a commit id (${JSON.stringify(head.slice(0, 80))})`);
  await importCommit(input.repo, layout, input.branch, head);
  return head;
}

/** Brings `commit` and what it reaches from the task's private store into the branch, checked by fsck. */
async function importCommit(repo: string, layout: SandboxLayout, branch: string, commit: string): Promise<void> {
  const own = privatePaths(layout.privateDir);
  const alternates = join(own.objects, "info", "alternates");
  const stat = await fs.lstat(alternates).catch(() => undefined);
  const text = stat?.isFile() ? await fs.readFile(alternates, "utf8") : undefined;
  if (text !== `${join(layout.commonDir, "objects")}\n`)
    throw new GitError(`the task's private object store was changed (${alternates} is not what the plugin wrote); nothing was imported`);
  await git(["update-ref", "refs/heads/run", commit], { cwd: own.git });
  const fetched = await runGit(
    [
      "-c",
      "transfer.fsckObjects=true",
      "-c",
      "fetch.fsckObjects=true",
      "fetch",
      "-q",
      "--no-tags",
      "--no-write-fetch-head",
      "--update-head-ok",
      "--no-auto-gc",
      "--no-recurse-submodules",
      own.git,
      `+refs/heads/run:refs/heads/${branch}`,
    ],
    { cwd: repo },
  );
  if (fetched.code !== 0) {
    const said = fetched.stderr.trim().split("\n").slice(0, 3).join(" ") || `exit code ${fetched.code}`;
    throw new GitError(`its run's commit was not imported: git's check of its objects refused it (${said}); the branch is as before`);
  }
}
