// Can this machine run a worktree child in an OS sandbox? A probe that really runs the sandbox (the
// same namespaces, network namespace and seccomp filter a child gets, around `true`), once per
// process, classifies the machine as one of: ready; not installed; user namespaces blocked;
// unsupported system. A worktree launch on a
// machine that is not ready is refused with the reason and the fix (sandbox.txt.ts), unless the
// user accepted text-level containment (option `allowUnsandboxedWorktrees`).

import { spawn } from "node:child_process";
import { constants, promises as fs } from "node:fs";
import { delimiter, join } from "node:path";
import { BWRAP_BASE, SECCOMP_FD, shellQuote, withFilter } from "./plan.js";
import { probeText } from "./sandbox.txt.js";
import { seccompFilter } from "./seccomp.js";

export type SandboxTool = "bwrap" | "sandbox-exec";

export type SandboxProbe =
  /** `bash`: the shell a sandboxed worktree's instance runs commands with (its BASH_ENV enters the sandbox) */
  | { kind: "ready"; tool: SandboxTool; path: string; bash: string }
  | { kind: "not-installed" | "userns-blocked" | "unsupported" | "failed"; reason: string; fix: string };

/** How long the probe may take before it counts as failed (it takes ~20 ms here). */
const PROBE_TIMEOUT_MS = 5000;

async function which(name: string, env: NodeJS.ProcessEnv): Promise<string | undefined> {
  for (const dir of (env.PATH ?? "").split(delimiter)) {
    if (!dir) continue;
    const path = join(dir, name);
    const ok = await fs.access(path, constants.X_OK).then(
      () => true,
      () => false,
    );
    if (ok) return path;
  }
  return undefined;
}

/**
 * Runs the probe's command; `fd`: bytes handed to it on file descriptor SECCOMP_FD, written to its
 * stdin, which a shell in the child moves there (plan.ts withFilter).
 */
function run(file: string, args: string[], fd?: Buffer): Promise<{ code: number | null; stderr: string; error?: NodeJS.ErrnoException }> {
  return new Promise((resolve) => {
    let stderr = "";
    let error: NodeJS.ErrnoException | undefined;
    const [command, ...rest] = fd ? withFilter([file, ...args], "stdin") : [file, ...args];
    const child = spawn(command!, rest, { stdio: [fd ? "pipe" : "ignore", "ignore", "pipe"], windowsHide: true });
    const timer = setTimeout(() => child.kill("SIGKILL"), PROBE_TIMEOUT_MS);
    child.stderr!.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    if (fd) {
      child.stdin!.on("error", () => {});
      child.stdin!.end(fd);
    }
    child.on("error", (e) => (error = e));
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code: error ? null : code, stderr, ...(error ? { error } : {}) });
    });
  });
}

/** The probe's command line, as the fix text quotes it (the user can run the same). */
export function probeCommand(bwrap: string): string {
  return [bwrap, ...BWRAP_BASE, "--", "true"].map(shellQuote).join(" ");
}

/** bubblewrap's messages when the kernel or a policy refuses it the namespaces it needs. */
const USERNS_BLOCKED = /namespace|Operation not permitted|Permission denied|uid map|No permissions/i;

/** Probes the machine (not cached: see `sandboxProbe`). */
export async function probeSandbox(platform: NodeJS.Platform = process.platform, env: NodeJS.ProcessEnv = process.env): Promise<SandboxProbe> {
  const bash = await which("bash", env);
  if (platform === "linux") {
    const bwrap = await which("bwrap", env);
    if (!bwrap) return { kind: "not-installed", ...probeText.notInstalled() };
    if (!bash) return { kind: "not-installed", ...probeText.noBash() };
    const filter = seccompFilter();
    if (!filter) return { kind: "unsupported", ...probeText.noFilter(process.arch) };
    const tried = await run(bwrap, [...BWRAP_BASE, "--seccomp", String(SECCOMP_FD), "--", "true"], filter);
    if (tried.code === 0) return { kind: "ready", tool: "bwrap", path: bwrap, bash };
    // which part failed: the namespaces and mounts (run again without the filter), or the filter
    const base = await run(bwrap, [...BWRAP_BASE, "--", "true"]);
    const failed = base.code === 0 ? tried : base;
    const said = (failed.stderr || failed.error?.message || `exit code ${failed.code}`).trim().split("\n")[0]!.slice(0, 300);
    if (base.code === 0) return { kind: "failed", ...probeText.seccompFailed(said) };
    if (USERNS_BLOCKED.test(said)) return { kind: "userns-blocked", ...probeText.usernsBlocked(said) };
    return { kind: "failed", ...probeText.failed(said, probeCommand(bwrap)) };
  }
  if (platform === "darwin") {
    const tool = "/usr/bin/sandbox-exec";
    const tried = await run(tool, ["-p", "(version 1)(allow default)(deny file-write*)", "/usr/bin/true"]);
    if (!bash) return { kind: "not-installed", ...probeText.noBash() };
    if (tried.code === 0) return { kind: "ready", tool: "sandbox-exec", path: tool, bash };
    if (tried.error?.code === "ENOENT") return { kind: "not-installed", ...probeText.noSandboxExec() };
    return { kind: "failed", ...probeText.failedSeatbelt((tried.stderr || `exit code ${tried.code}`).trim().slice(0, 300)) };
  }
  return { kind: "unsupported", ...probeText.unsupported(platform) };
}

let cached: Promise<SandboxProbe> | undefined;

/** The probe of this process, run once (the machine does not change under a running OpenCode). */
export function sandboxProbe(): Promise<SandboxProbe> {
  return (cached ??= probeSandbox());
}
