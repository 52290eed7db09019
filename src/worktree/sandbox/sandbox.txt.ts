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
  failed: (said: string, command: string) => ({
    reason: `the sandbox did not start (it said: ${said})`,
    fix: `run the same probe yourself to see why: ${command}; ${TEXT_OPTION}`,
  }),
  seccompFailed: (said: string) => ({
    reason: `bubblewrap runs, but not with the seccomp filter that keeps a task from the user's unix sockets (it said: ${said})`,
    fix: `a kernel built without seccomp filters (CONFIG_SECCOMP_FILTER) cannot contain a task's sockets; ${TEXT_OPTION}`,
  }),
  failedSeatbelt: (said: string) => ({
    reason: `the sandbox did not start (sandbox-exec said: ${said})`,
    fix: `run the same probe yourself to see why: /usr/bin/sandbox-exec -p '(version 1)(allow default)(deny file-write*)' /usr/bin/true; ${TEXT_OPTION}`,
  }),
  noFilter: (arch: string) => ({
    reason: `no seccomp filter is written for this CPU (${arch}; x64 and arm64 are), so the sandbox cannot keep a task from the user's unix sockets`,
    fix: TEXT_OPTION,
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

/** Where a sandboxed child may write, in the words its first prompt and its read-only hint share. */
function writable(worktree: string, tmp: string, caches: string): string {
  return `${worktree} (but OpenCode's config there: opencode.json, opencode.jsonc, .opencode/), your temp directory $TMPDIR (${tmp}) and your tools' caches (${caches}: npm, pip, go, cargo…)`;
}

/** What a worktree child is told about its sandbox (its first prompt, after where it works). */
export function sandboxNote(worktree: string, tmp: string, caches: string, hosts: readonly string[]): string {
  const network = hosts.length
    ? `Your commands reach only ${hosts.join(", ")}, over HTTP(S) through a proxy (HTTPS_PROXY is set), and no other host, not even this machine's own services.`
    : "Your commands have no network: no host is reachable, not even this machine's own services (a server you start inside is reachable on 127.0.0.1).";
  return `Your shell commands run in a sandbox: you may write only under ${writable(worktree, tmp, caches)}; the parent's checkout, the repository's shared .git (config, hooks, other branches) and the rest of the machine are read-only to them. ${network} Unix sockets cannot be made (socketpairs and pipes work), and variables that hold secrets are not passed in. git add, commit, stash and rebase work on your own branch.`;
}

/** Added to a shell command's output that met a read-only file system inside the sandbox. */
export function readOnlyHint(worktree: string, tmp: string, caches: string): string {
  return `[sandbox: this command ran in the task's sandbox, where only ${writable(worktree, tmp, caches)} are writable; the parent's checkout, the repository's shared .git and the rest of the machine are read-only. Write under your worktree instead.]`;
}

/** The refusal of a sandboxed task's shell command when its sandbox cannot run (`why`). */
export function sandboxMissingRefusal(why: string): string {
  return `Refused: this task's sandbox cannot run (${why}), and a shell command of a worktree task never runs outside it; nothing ran. The task cannot run shell commands now: end your work and say so.`;
}
