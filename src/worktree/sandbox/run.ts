// The host's own commands inside a task's sandbox, and the one way the child's work leaves it.
//
// When a run ends, its changes are committed INSIDE the sandbox (the child's git state is the
// child's: its HEAD, index and refs may be anything it made them), and the host then imports the
// one commit the worktree's HEAD names: `git fetch` from the private object store into the task's
// branch, with git's fsck of every object (transfer.fsckObjects). Nothing else of the sandbox is
// read as trusted: the commit id must look like one, the store's alternates must be as written, and
// no child process runs any more (bubblewrap ended them with each command).

import { execFile } from "node:child_process";
import { promises as fs } from "node:fs";
import { join } from "node:path";
import { GitError, git, runGit } from "../git.js";
import { type SandboxLayout, bwrapArgs, privatePaths, sandboxEnv, seatbeltProfile } from "./plan.js";
import type { SandboxTool } from "./probe.js";

export interface SandboxRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** The program, arguments and extra environment that run `argv` inside the task's sandbox, in `cwd`. */
export function sandboxCommand(
  tool: { kind: SandboxTool; path: string },
  layout: SandboxLayout,
  branch: string,
  argv: string[],
  cwd: string,
): { file: string; args: string[]; env: Record<string, string> } {
  if (tool.kind === "bwrap") return { file: tool.path, args: [...bwrapArgs(layout), "--chdir", cwd, "--", ...argv], env: {} };
  return { file: tool.path, args: ["-p", seatbeltProfile(layout, branch), ...argv], env: sandboxEnv(layout) };
}

/** Runs `argv` inside the task's sandbox, in `cwd`, with `env` on top of this process's. */
export function runInSandbox(
  tool: { kind: SandboxTool; path: string },
  layout: SandboxLayout,
  branch: string,
  argv: string[],
  options: { cwd: string; env?: Record<string, string> },
): Promise<SandboxRun> {
  const { file, args, env: inside } = sandboxCommand(tool, layout, branch, argv, options.cwd);
  const env = { ...process.env, GIT_TERMINAL_PROMPT: "0", GIT_PAGER: "cat", LC_ALL: "C", ...options.env, ...inside };
  return new Promise((resolve, reject) => {
    execFile(file, args, { cwd: options.cwd, env, maxBuffer: 64 * 1024 * 1024, windowsHide: true }, (error, stdout, stderr) => {
      const e = error as (NodeJS.ErrnoException & { code?: unknown }) | null;
      if (e && typeof e.code !== "number") return reject(new GitError(`the sandbox (${tool.kind}) could not run: ${e.message}`));
      resolve({ code: e ? (e.code as unknown as number) : 0, stdout: String(stdout), stderr: String(stderr) });
    });
  });
}

/** The script that commits a run inside the sandbox and prints the commit HEAD names ($1: message; then the linked config paths). */
const COMMIT_SCRIPT = [
  "set -e",
  'message="$1"; shift',
  "git add -A",
  // the linked config is the parent's, never the task's change
  '[ "$#" -eq 0 ] || git rm -r --cached -q --ignore-unmatch -- "$@"',
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
  message: string;
  linked: readonly string[];
  author: Record<string, string>;
}): Promise<string> {
  const { layout } = input;
  const committed = await runInSandbox(
    input.tool,
    layout,
    input.branch,
    ["/bin/sh", "-c", COMMIT_SCRIPT, "offshoot-commit", input.message || "offshoot task", ...input.linked.map((p) => `:(literal)${p}`)],
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
