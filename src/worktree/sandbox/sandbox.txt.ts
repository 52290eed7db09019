// What the sandbox says: the probe's verdicts with their fixes (a refused worktree launch quotes
// them), what a child is told about where it may write, and the hint added to a shell command that
// met the sandbox's read-only walls. Pure texts.

const TEXT_OPTION = 'or, to run worktree tasks with only the weaker text-level checks, set the plugin option "allowUnsandboxedWorktrees": true';

export const probeText = {
  notInstalled: () => ({
    reason: "bubblewrap (bwrap) is not installed, so a worktree task cannot run in an OS sandbox",
    fix: `install it (Debian/Ubuntu: sudo apt-get install bubblewrap; Fedora: sudo dnf install bubblewrap; Arch: sudo pacman -S bubblewrap), ${TEXT_OPTION}`,
  }),
  usernsBlocked: (said: string) => ({
    reason: `bubblewrap cannot create the namespaces a sandbox needs: unprivileged user namespaces are blocked on this machine (bwrap said: ${said})`,
    fix: `on Ubuntu 24.04 and later allow them for bwrap (an AppArmor profile for /usr/bin/bwrap with "userns,", or sudo sysctl kernel.apparmor_restrict_unprivileged_userns=0); in a container run it with user namespaces allowed; ${TEXT_OPTION}`,
  }),
  failed: (said: string) => ({
    reason: `the sandbox did not start (it said: ${said})`,
    fix: `run the same probe yourself: bwrap --ro-bind / / --dev /dev --proc /proc --unshare-pid -- true; ${TEXT_OPTION}`,
  }),
  noBash: () => ({
    reason: "bash is not installed (a sandboxed worktree task runs its shell commands with bash, which enters the sandbox before each one)",
    fix: `install bash, ${TEXT_OPTION}`,
  }),
  noSandboxExec: () => ({
    reason: "sandbox-exec is missing from /usr/bin, so a worktree task cannot run in an OS sandbox",
    fix: TEXT_OPTION,
  }),
  unsupported: (platform: string) => ({
    reason: `this system (${platform}) has no OS sandbox the plugin can use (bubblewrap on Linux, sandbox-exec on macOS)`,
    fix: TEXT_OPTION,
  }),
};

/** What a worktree child is told about its sandbox (its first prompt, after where it works). */
export function sandboxNote(worktree: string, tmp: string): string {
  return `Your shell commands run in a sandbox: you may write only under ${worktree} and your temp directory $TMPDIR (${tmp}); the parent's checkout, the repository's shared .git (config, hooks, other branches) and the rest of the machine are read-only to them. git add, commit, stash and rebase work on your own branch.`;
}

/** Added to a shell command's output that met a read-only file system inside the sandbox. */
export function readOnlyHint(worktree: string, tmp: string): string {
  return `[sandbox: this command ran in the task's sandbox, where only ${worktree} and $TMPDIR (${tmp}) are writable; the parent's checkout, the repository's shared .git and the rest of the machine are read-only. Write under your worktree instead.]`;
}

/** The refusal of a sandboxed task's shell command when its sandbox cannot run (`why`). */
export function sandboxMissingRefusal(why: string): string {
  return `Refused: this task's sandbox cannot run (${why}), and a shell command of a worktree task never runs outside it; nothing ran. The task cannot run shell commands now: end your work and say so.`;
}
