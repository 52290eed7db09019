// What a worktree child's sandbox allows, as data, and the two ways to say it to a kernel:
// bubblewrap's arguments (Linux) and a sandbox-exec profile (macOS). Pure: no I/O here; the
// files and processes are prepare.ts's and run.ts's, the proxy is network.ts's.
//
// The rule (openspec background-task, "Contained by the kernel"): everything is readable and
// nothing is writable, but
// - the child's worktree, except OpenCode's config there (opencode.json, opencode.jsonc,
//   .opencode/ at each level OpenCode reads: read-only, so nothing the host loads later is the
//   child's: worktree.ts guardConfig puts the user's there);
// - its own git state: a private copy of the worktree's admin directory (HEAD, index, reflog,
//   rebase state: mounted over <common>/worktrees/<name>, so the user's repository never names a
//   commit only the task has), a private object store (GIT_OBJECT_DIRECTORY, with the repository's
//   objects as an alternate: read, never written) and, on Linux, private copies of the repository's
//   refs and reflogs mounted over <common>/refs and <common>/logs: a branch, tag or stash made inside
//   stays inside; the host imports the one commit the task ends on (run.ts), checked by git's fsck;
// - its own temp directory (TMPDIR);
// - the tasks' own caches (npm, pip, go, cargo, XDG_CACHE_HOME pointed there: shared by tasks, never
//   read by the user's builds), and the caches the user chose to share (option `sandboxWritable`).
// Nothing of the host is reachable but through those files:
// - no network: a network namespace of its own (its own loopback works: a test server it starts is
//   reachable from inside), or, when a person allowed hosts, only those, through the plugin's proxy
//   outside the sandbox (network.ts), reached through a bridge on the sandbox's loopback;
// - no unix socket of the host's (ssh-agent, docker, D-Bus, a service's socket anywhere): a seccomp
//   filter refuses to make one (seccomp.ts);
// - no variable that names such a socket, or whose name says it holds a secret (`dropsVariable`).
// The repository's config, hooks, info, packed-refs, objects, other worktrees, the user's checkout
// and home stay read-only. Bubblewrap also gives the child its own process namespace and /proc
// (no /proc/<host pid>/root or cwd into the host's mounts), and kills whatever the command left
// running when it ends.

import { join } from "node:path";

/** Hosts a task's commands may reach through the plugin's proxy, and how the bridge inside starts. */
export interface SandboxNetwork {
  /** the allowed host patterns (options.ts: `sandboxNetwork` and the task's own `network`) */
  hosts: readonly string[];
  /** the program that runs the bridge inside (argv before the script: the JS runtime this plugin runs on) */
  runtime: readonly string[];
  /** bash, which runs the bridge's script (the probe found it) */
  shell: string;
}

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
  /** the tasks' own caches (shared by every task of the user: prepare.ts taskCachesHome); absent: none */
  taskCaches?: string | undefined;
  /** cache variables left as the user set them: they point into a directory the user shares (`caches`) */
  sharedCacheVariables?: readonly string[] | undefined;
  /** OpenCode's config entries in the worktree (absolute; they exist: worktree.ts guardConfig): read-only inside */
  protect?: readonly string[] | undefined;
  /** the hosts its commands may reach through the proxy; absent: no network at all */
  network?: SandboxNetwork | undefined;
  /** variables passed in although their names say they hold a secret (option `sandboxPassEnv`) */
  passEnv?: readonly string[] | undefined;
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
    /** a copy of the worktree's admin directory (mounted over <common>/worktrees/<name>) */
    admin: join(dir, "admin"),
    tmp: join(dir, "tmp"),
    /** the BASH_ENV script that re-runs a bash command inside the sandbox */
    enter: join(dir, "enter.sh"),
    /** the seccomp filter (seccomp.ts), handed to bubblewrap as file descriptor SECCOMP_FD */
    seccomp: join(dir, "seccomp.bpf"),
    /** with allowed hosts: the script that starts the bridge, and the bridge itself (network.ts) */
    netScript: join(dir, "net.sh"),
    bridge: join(dir, "bridge.mjs"),
    /** a link to the proxy's socket (its own path is short: a socket's path has at most 107 bytes) */
    proxy: join(dir, "proxy.sock"),
  };
}

/** The file descriptor the seccomp filter is handed on (the scripts redirect it; run.ts opens it there). */
export const SECCOMP_FD = 9;

/**
 * The argv that runs `argv` with the filter on SECCOMP_FD, opened by a shell in the child from
 * `filter` (a path), or from its stdin ("stdin": the caller writes the filter there). The plugin's
 * process hands no child a descriptor beyond stdio's three: OpenCode runs it on Bun, which closes
 * such a descriptor again once the child is collected, whatever its number is by then
 * (test/unit/worktree/bun/descriptors.test.ts). A filter that cannot be opened ends the shell first.
 */
export function withFilter(argv: readonly string[], filter: string | "stdin"): string[] {
  if (filter === "stdin") return ["/bin/sh", "-c", `exec "$@" ${SECCOMP_FD}<&0 0</dev/null`, "sh", ...argv];
  return ["/bin/sh", "-c", `exec "$@" ${SECCOMP_FD}<"$0"`, filter, ...argv];
}

export interface Mount {
  source: string;
  target: string;
}

/** The caches a task's tools use instead of the user's: each variable, and its directory under the tasks' caches. */
export const TASK_CACHE_VARIABLES: readonly (readonly [string, string])[] = [
  ["XDG_CACHE_HOME", "xdg"], // pip, go-build, node-gyp and most tools that follow XDG
  ["npm_config_cache", "npm"],
  ["PIP_CACHE_DIR", "pip"],
  ["GOCACHE", "go-build"],
  ["GOMODCACHE", "go-mod"],
  ["CARGO_HOME", "cargo"],
  ["YARN_CACHE_FOLDER", "yarn"],
  ["BUN_INSTALL_CACHE_DIR", "bun"],
];

/** What is writable inside the sandbox, mounted from where. */
export function writableMounts(layout: SandboxLayout): Mount[] {
  const own = privatePaths(layout.privateDir);
  const same = (path: string): Mount => ({ source: path, target: path });
  return [
    same(layout.worktree),
    { source: own.admin, target: layout.gitDir },
    same(own.objects),
    { source: own.refs, target: join(layout.commonDir, "refs") },
    { source: own.logs, target: join(layout.commonDir, "logs") },
    same(own.tmp),
    ...(layout.taskCaches ? [same(layout.taskCaches)] : []),
    ...layout.caches.map(same),
  ];
}

/** The environment inside the sandbox (on top of the command's own, less what `dropsVariable` drops). */
export function sandboxEnv(layout: SandboxLayout): Record<string, string> {
  const own = privatePaths(layout.privateDir);
  const caches = layout.taskCaches;
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
    ...(caches
      ? Object.fromEntries(
          TASK_CACHE_VARIABLES.filter(([name]) => !layout.sharedCacheVariables?.includes(name)).map(([name, dir]) => [name, join(caches, dir)]),
        )
      : {}),
    OFFSHOOT_SANDBOX: layout.taskId,
  };
}

/** Variables that name a socket of the user's (an agent, a bus, a daemon, a terminal or editor to drive): never passed in. */
export const SOCKET_VARIABLES = [
  "SSH_AUTH_SOCK",
  "SSH_AGENT_PID",
  "GPG_AGENT_INFO",
  "DBUS_SESSION_BUS_ADDRESS",
  "DBUS_SYSTEM_BUS_ADDRESS",
  "DOCKER_HOST",
  "CONTAINER_HOST",
  "TMUX",
  "KITTY_LISTEN_ON",
  "NVIM",
  "NVIM_LISTEN_ADDRESS",
  "VSCODE_IPC_HOOK_CLI",
  "VSCODE_GIT_IPC_HANDLE",
] as const;
/** Words that, anywhere in a variable's name (any case), say it holds a secret: not passed in unless `sandboxPassEnv` names it. */
export const SECRET_WORDS = ["KEY", "SECRET", "TOKEN", "PASSWORD", "PASSWD", "CREDENTIAL"] as const;

/** Whether a variable of the host's environment stays out of the sandbox (`pass`: names passed all the same). */
export function dropsVariable(name: string, pass: readonly string[] = []): boolean {
  if (pass.includes(name)) return false;
  const upper = name.toUpperCase();
  return (SOCKET_VARIABLES as readonly string[]).includes(upper) || SECRET_WORDS.some((word) => upper.includes(word));
}

/** The host's environment less what the sandbox drops. */
export function scrubEnv(env: NodeJS.ProcessEnv, pass: readonly string[] = []): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(env).filter(([name]) => !dropsVariable(name, pass)));
}

/**
 * The variable through which the worktree instance's `shell.env` hook hands the BASH_ENV script the
 * names to drop (`dropList`: computed once per call in JS, so the script unsets them without a
 * subshell); without it (a shell the hook did not prepare) the script lists the variables itself.
 */
export const DROP_VARIABLE = "OFFSHOOT_DROP";

/** The names of `env` the sandbox drops, as DROP_VARIABLE's value. */
export function dropList(env: NodeJS.ProcessEnv, pass: readonly string[] = []): string {
  return Object.keys(env)
    .filter((name) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(name) && dropsVariable(name, pass))
    .join(" ");
}

/** The same rule for the BASH_ENV script: unsets what `dropsVariable` drops (bash; names are case-folded). */
function scrubScript(pass: readonly string[]): string[] {
  const patterns = [...SOCKET_VARIABLES, ...SECRET_WORDS.map((word) => `*${word}*`)].join("|");
  return [
    // the hook's list: unset without a subshell; without one, the script lists the variables itself
    `if [ -n "\${${DROP_VARIABLE}+set}" ]; then unset ${DROP_VARIABLE} $${DROP_VARIABLE}; else`,
    "shopt -s nocasematch",
    "for __offshoot_v in $(compgen -e); do",
    "  case $__offshoot_v in",
    ...(pass.length ? [`    ${pass.map(shellQuote).join("|")}) ;;`] : []),
    `    ${patterns}) unset "$__offshoot_v" ;;`,
    "  esac",
    "done",
    "shopt -u nocasematch; unset __offshoot_v",
    "fi",
  ];
}

/** What every bubblewrap sandbox starts with (the probe runs exactly this around `true`): its own processes, /proc and network, a read-only root. */
export const BWRAP_BASE: readonly string[] = [
  "--die-with-parent",
  "--new-session",
  "--unshare-pid",
  "--unshare-ipc",
  "--unshare-uts",
  "--unshare-net",
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
 * bubblewrap's arguments, up to (not including) the seccomp filter, `--chdir` and the command.
 * Order matters: the read-only root first, then the writable mounts over it, then the read-only
 * config entries over those.
 */
export function bwrapArgs(layout: SandboxLayout): string[] {
  const args = [...BWRAP_BASE];
  for (const mount of writableMounts(layout)) args.push("--bind", mount.source, mount.target);
  for (const path of layout.protect ?? []) args.push("--ro-bind", path, path);
  for (const [key, value] of Object.entries(sandboxEnv(layout))) args.push("--setenv", key, value);
  args.push("--unsetenv", "BASH_ENV");
  return args;
}

/**
 * The whole command line that runs `argv` in the sandbox, in `cwd` (its file descriptor SECCOMP_FD
 * must be the filter). Without hosts: one bubblewrap with the filter. With hosts: the outer
 * bubblewrap (the network namespace, the mounts) runs the bridge's script (netScript), which starts
 * the bridge on the sandbox's loopback, then runs `argv` in a second bubblewrap that only adds the
 * filter (the bridge itself must reach the proxy's unix socket, which the filter refuses).
 */
export function sandboxArgv(bwrap: string, layout: SandboxLayout, argv: readonly string[], cwd: string): string[] {
  const outer = [bwrap, ...bwrapArgs(layout)];
  if (!layout.network) return [...outer, "--seccomp", String(SECCOMP_FD), "--chdir", cwd, "--", ...argv];
  return [...outer, "--chdir", cwd, "--", layout.network.shell, privatePaths(layout.privateDir).netScript, ...argv];
}

/** The variables that point a task's tools at the bridge (with the port it listens on). */
export function proxyVariables(port: string): Record<string, string> {
  const url = `http://127.0.0.1:${port}`;
  const local = "localhost,127.0.0.1,::1";
  return {
    HTTP_PROXY: url,
    HTTPS_PROXY: url,
    http_proxy: url,
    https_proxy: url,
    NO_PROXY: local,
    no_proxy: local,
    NODE_USE_ENV_PROXY: "1",
  };
}

/**
 * The bridge's script (with allowed hosts), run by bash inside the outer bubblewrap with the
 * command as its arguments: the bridge (network.ts) listens on the sandbox's loopback and says its
 * port; the command then runs under the filter with the proxy variables set. A bridge that does not
 * start fails the command (it never runs with the network it was not given).
 */
export function netScript(bwrap: string, layout: SandboxLayout & { network: SandboxNetwork }): string {
  const own = privatePaths(layout.privateDir);
  const bridge = [...layout.network.runtime, own.bridge, own.proxy].map(shellQuote).join(" ");
  const vars = Object.entries(proxyVariables("$port")).map(([key, value]) => `${key}="${value}"`);
  return [
    "# opencode-offshoot: the network bridge of a task's sandbox (src/worktree/sandbox/plan.ts)",
    `exec 3< <(exec ${bridge} </dev/null)`,
    'IFS= read -r port <&3 || { echo "[sandbox: the network bridge of this task did not start; nothing ran]" >&2; exit 126; }',
    "exec 3<&-",
    `export ${vars.join(" ")}`,
    `exec ${shellQuote(bwrap)} --dev-bind / / --die-with-parent --seccomp ${SECCOMP_FD} -- "$@" ${SECCOMP_FD}< ${shellQuote(own.seccomp)}`,
    "",
  ].join("\n");
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
 * The macOS profile (sandbox-exec -p): reads allowed, writes denied but under the writable paths,
 * and the config entries denied again (SBPL: the last matching rule wins, and a path that does not
 * exist yet is denied by name). Seatbelt cannot mount, so the refs and the admin directory are not
 * private there: the task's own branch ref, its lock and its reflog are writable in place (other
 * branches, tags, the stash, config and hooks are not). The network is denied whole, unix sockets
 * with it: Seatbelt has no namespace, so the sandbox's own loopback cannot be told from the host's,
 * and no proxy is offered (a launch with allowed hosts is refused on macOS: launch.ts). Not run on
 * these machines (no macOS): its text is unit-tested against the same rules.
 */
export function seatbeltProfile(layout: SandboxLayout, branch: string): string {
  const own = privatePaths(layout.privateDir);
  const ref = join(layout.commonDir, "refs", "heads", branch);
  const log = join(layout.commonDir, "logs", "refs", "heads", branch);
  const subpaths = [layout.worktree, layout.gitDir, own.objects, own.tmp, ...(layout.taskCaches ? [layout.taskCaches] : []), ...layout.caches];
  const protect = layout.protect ?? [];
  return [
    "(version 1)",
    "(allow default)",
    "(deny file-write*)",
    `(allow file-write* ${subpaths.map((p) => `(subpath ${sbplString(p)})`).join(" ")})`,
    `(allow file-write* (regex #"^${sbplRegexOf(ref)}(\\.lock)?$") (regex #"^${sbplRegexOf(log)}(\\.lock)?$"))`,
    '(allow file-write* (literal "/dev/null") (literal "/dev/tty") (regex #"^/dev/fd/"))',
    ...(protect.length ? [`(deny file-write* ${protect.map((p) => `(literal ${sbplString(p)}) (subpath ${sbplString(p)})`).join(" ")})`] : []),
    "(deny network*)",
    "",
  ].join("\n");
}

/** A word for a POSIX shell script, quoted. */
export function shellQuote(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/**
 * The BASH_ENV script: a non-interactive bash reads it before the command, drops the variables the
 * sandbox does not pass in, and runs the same command again inside the sandbox. A failed `exec`
 * ends a non-interactive bash, so the command never runs outside (fail closed).
 */
export function enterScript(bwrap: string, layout: SandboxLayout): string {
  const argv = sandboxArgv(bwrap, layout, ["\0BASH", "-c", "\0CMD"], "\0PWD")
    .map((word) => (word === "\0BASH" ? '"$BASH"' : word === "\0CMD" ? '"$BASH_EXECUTION_STRING"' : word === "\0PWD" ? '"$PWD"' : shellQuote(word)))
    .join(" ");
  return [
    "# opencode-offshoot: this bash command runs inside the task's sandbox (src/worktree/sandbox/plan.ts)",
    "unset BASH_ENV",
    ...scrubScript(layout.passEnv ?? []),
    `exec ${argv} ${SECCOMP_FD}< ${shellQuote(privatePaths(layout.privateDir).seccomp)}`,
    "",
  ].join("\n");
}

/** The macOS counterpart of `enterScript`: sandbox-exec with the profile, the variables set by env. */
export function enterScriptSeatbelt(sandboxExec: string, layout: SandboxLayout, branch: string): string {
  const vars = Object.entries(sandboxEnv(layout)).map(([key, value]) => shellQuote(`${key}=${value}`));
  return [
    "# opencode-offshoot: this bash command runs inside the task's sandbox (src/worktree/sandbox/plan.ts)",
    "unset BASH_ENV",
    ...scrubScript(layout.passEnv ?? []),
    `exec ${shellQuote(sandboxExec)} -p ${shellQuote(seatbeltProfile(layout, branch))} /usr/bin/env ${vars.join(" ")} "$BASH" -c "$BASH_EXECUTION_STRING"`,
    "",
  ].join("\n");
}
