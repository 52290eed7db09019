// A remote task's git side (docs/remote.md): the snapshot of what the parent sees travels to the
// remote as a commit, through the git remote both clones share (`refs/heads/offshoot/<id>-base`); the
// remote makes its worktree from exactly that commit, and pushes the task's branch back there
// (`refs/heads/offshoot/<id>`) once each run is committed; the parent's side fetches it into its own
// `refs/heads/offshoot/<id>` with git's object checks, and only a tip that descends from the base is
// taken in. A take, a discard or a run that changed nothing removes both refs from the shared remote.
// Every git call here runs no hook and asks nobody for a password.

import { GitError, git, runGit } from "./git.js";
import { baseRefOf, branchRefOf } from "../remote-protocol.js";

/** No hooks, no fsmonitor; every object that arrives checked (a `.git` path, a malformed tree: refused). */
const SAFE = ["-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "transfer.fsckObjects=true", "-c", "fetch.fsckObjects=true"];

/** A ref of this repository that holds a fetched tip until it is checked. */
function holdingRef(taskId: string): string {
  return `refs/offshoot-fetch/${taskId}`;
}

/** Pushes the task's base commit to the shared git remote; returns what git reported it wrote (for the bench), or throws a clear error. */
export async function pushBase(repo: string, gitRemote: string, taskId: string, base: string): Promise<string> {
  const pushed = await runGit([...SAFE, "push", "--no-verify", "--porcelain", "--progress", gitRemote, `${base}:${baseRefOf(taskId)}`], { cwd: repo });
  if (pushed.code !== 0) throw new GitError(`pushing the task's base to the git remote "${gitRemote}" failed: ${lastLines(pushed.stderr || pushed.stdout)}`);
  return pushed.stderr;
}

/** B: the task's base fetched from the shared git remote (checked), and found to be exactly `base`. Throws a clear error. */
export async function fetchBase(repo: string, gitRemote: string, taskId: string, base: string): Promise<void> {
  const hold = holdingRef(taskId);
  try {
    const fetched = await runGit([...SAFE, "fetch", "--no-tags", "--no-write-fetch-head", "-q", gitRemote, `+${baseRefOf(taskId)}:${hold}`], { cwd: repo });
    if (fetched.code !== 0) throw new GitError(`fetching the task's base from the git remote "${gitRemote}" failed: ${lastLines(fetched.stderr)}`);
    const tip = await git(["rev-parse", "--verify", `${hold}^{commit}`], { cwd: repo });
    if (tip !== base) throw new GitError(`the git remote "${gitRemote}" holds ${tip.slice(0, 12)} as the task's base, not ${base.slice(0, 12)}`);
  } finally {
    await runGit(["update-ref", "-d", hold], { cwd: repo });
  }
}

/** B: the task's branch pushed to the shared git remote (its run committed); returns the head pushed, or throws a clear error. */
export async function pushBranch(repo: string, gitRemote: string, branch: string): Promise<string> {
  const head = await git(["rev-parse", "--verify", `refs/heads/${branch}^{commit}`], { cwd: repo });
  const pushed = await runGit([...SAFE, "push", "--no-verify", "--force", "-q", gitRemote, `${head}:refs/heads/${branch}`], { cwd: repo });
  if (pushed.code !== 0) throw new GitError(`pushing ${branch} to the git remote "${gitRemote}" failed: ${lastLines(pushed.stderr || pushed.stdout)}`);
  return head;
}

/** What fetching a remote task's branch came to: its tip is the local branch now; not there yet; or refused (and nothing of it kept). */
export type BranchFetch = { head: string } | { missing: string } | { refused: string };

/**
 * A: the task's branch fetched from the shared git remote into `refs/heads/<branch>`, once git checked
 * every object (transfer.fsckObjects: a `.git` path in any spelling, a malformed object: refused) and
 * its tip descends from `base`. A failure to reach the git remote throws (try again later).
 */
export async function fetchBranch(repo: string, gitRemote: string, taskId: string, branch: string, base: string): Promise<BranchFetch> {
  const hold = holdingRef(taskId);
  try {
    const fetched = await runGit([...SAFE, "fetch", "--no-tags", "--no-write-fetch-head", "-q", gitRemote, `+${branchRefOf(taskId)}:${hold}`], {
      cwd: repo,
    });
    if (fetched.code !== 0) {
      const said = lastLines(fetched.stderr);
      if (/couldn't find remote ref|no such ref|not our ref/i.test(said)) return { missing: said };
      if (/fsck|hasDotgit|bad tree|index-pack failed|invalid object|malformed/i.test(said))
        return { refused: `git's checks refused the objects of its branch (${said})` };
      throw new GitError(`fetching ${branch} from the git remote "${gitRemote}" failed: ${said}`);
    }
    const tip = await git(["rev-parse", "--verify", `${hold}^{commit}`], { cwd: repo });
    const descends = await runGit(["merge-base", "--is-ancestor", base, tip], { cwd: repo });
    if (descends.code === 1) return { refused: `its tip ${tip.slice(0, 12)} does not descend from the task's base ${base.slice(0, 12)}` };
    if (descends.code !== 0) throw new GitError(`git merge-base failed: ${lastLines(descends.stderr)}`);
    await git(["update-ref", `refs/heads/${branch}`, tip], { cwd: repo });
    return { head: tip };
  } finally {
    await runGit(["update-ref", "-d", hold], { cwd: repo });
  }
}

/** The task's refs on the shared git remote (its base and its branch) that are there now. */
export async function remoteRefs(repo: string, gitRemote: string, taskId: string): Promise<string[]> {
  const listed = await runGit([...SAFE, "ls-remote", "--refs", gitRemote, baseRefOf(taskId), branchRefOf(taskId)], { cwd: repo });
  if (listed.code !== 0) throw new GitError(`listing the task's refs on the git remote "${gitRemote}" failed: ${lastLines(listed.stderr)}`);
  return listed.stdout
    .split("\n")
    .map((line) => line.split("\t")[1]?.trim())
    .filter((ref): ref is string => ref === baseRefOf(taskId) || ref === branchRefOf(taskId));
}

/** Removes the task's refs from the shared git remote (those that are there). Throws a clear error. */
export async function deleteRemoteRefs(repo: string, gitRemote: string, taskId: string): Promise<void> {
  const refs = await remoteRefs(repo, gitRemote, taskId);
  if (!refs.length) return;
  const deleted = await runGit([...SAFE, "push", "--no-verify", "-q", gitRemote, ...refs.map((ref) => `:${ref}`)], { cwd: repo });
  if (deleted.code !== 0) throw new GitError(`removing the task's refs from the git remote "${gitRemote}" failed: ${lastLines(deleted.stderr)}`);
}

/** The git remote is configured in the repository (its URL is never repeated anywhere). */
export async function hasGitRemote(repo: string, gitRemote: string): Promise<boolean> {
  return (await runGit(["remote", "get-url", gitRemote], { cwd: repo })).code === 0;
}

/** git's last lines, with any credentials in a URL it names cut out. */
function lastLines(text: string): string {
  return (
    text
      .replace(/([a-z][a-z0-9+.-]*:\/\/)[^/@\s]+@/gi, "$1…@")
      .trim()
      .split("\n")
      .filter((line) => line.trim())
      .slice(-3)
      .join("; ")
      .slice(0, 600) || "no output"
  );
}
