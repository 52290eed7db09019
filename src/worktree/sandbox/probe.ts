// Can this machine run a worktree child in an OS sandbox? A probe that really runs the sandbox (the
// same namespaces a child gets, around `true`), once per process, classifies the machine as one
// of: ready; not installed; user namespaces blocked; unsupported system. A worktree launch on a
// machine that is not ready is refused with the reason and the fix (sandbox.txt.ts), unless the
// user accepted text-level containment (option `allowUnsandboxedWorktrees`).

import { execFile } from "node:child_process";
import { constants, promises as fs } from "node:fs";
import { delimiter, join } from "node:path";
import { BWRAP_BASE } from "./plan.js";
import { probeText } from "./sandbox.txt.js";

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

function run(file: string, args: string[]): Promise<{ code: number | null; stderr: string; error?: NodeJS.ErrnoException }> {
  return new Promise((resolve) => {
    execFile(file, args, { timeout: PROBE_TIMEOUT_MS, windowsHide: true }, (error, _stdout, stderr) => {
      const e = error as (NodeJS.ErrnoException & { code?: unknown }) | null;
      resolve({ code: e ? (typeof e.code === "number" ? e.code : null) : 0, stderr: String(stderr), ...(e ? { error: e } : {}) });
    });
  });
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
    const tried = await run(bwrap, [...BWRAP_BASE, "--", "true"]);
    if (tried.code === 0) return { kind: "ready", tool: "bwrap", path: bwrap, bash };
    const said = (tried.stderr || tried.error?.message || `exit code ${tried.code}`).trim().split("\n")[0]!.slice(0, 300);
    if (USERNS_BLOCKED.test(said)) return { kind: "userns-blocked", ...probeText.usernsBlocked(said) };
    return { kind: "failed", ...probeText.failed(said) };
  }
  if (platform === "darwin") {
    const tool = "/usr/bin/sandbox-exec";
    const tried = await run(tool, ["-p", "(version 1)(allow default)(deny file-write*)", "/usr/bin/true"]);
    if (!bash) return { kind: "not-installed", ...probeText.noBash() };
    if (tried.code === 0) return { kind: "ready", tool: "sandbox-exec", path: tool, bash };
    if (tried.error?.code === "ENOENT") return { kind: "not-installed", ...probeText.noSandboxExec() };
    return { kind: "failed", ...probeText.failed((tried.stderr || `exit code ${tried.code}`).trim().slice(0, 300)) };
  }
  return { kind: "unsupported", ...probeText.unsupported(platform) };
}

let cached: Promise<SandboxProbe> | undefined;

/** The probe of this process, run once (the machine does not change under a running OpenCode). */
export function sandboxProbe(): Promise<SandboxProbe> {
  return (cached ??= probeSandbox());
}
