// What the launch reply, background_output and a failed launch say about what a worktree was given
// before its child's first step (ready.ts). Pure texts.

import type { Frozen, WorktreeReady } from "../task-record.js";

type Brought = WorktreeReady["brought"][number];

/** How one entry was brought, in a few words. */
export function wayText(entry: Brought): string {
  if (entry.way === "skipped") return `not brought: ${entry.reason ?? "skipped"}`;
  if (entry.way === "link") return "linked to your checkout's, read-only in the sandbox";
  const size = entry.bytes !== undefined ? `, ${sizeText(entry.bytes)}` : "";
  if (entry.way === "reflink")
    return `copy-on-write clone${size}${entry.fellBack ? `; ${entry.fellBack} file${entry.fellBack === 1 ? "" : "s"} fell back to a byte copy` : ""}`;
  return `copied${size}${entry.reason ? `; ${entry.reason}` : ""}`;
}

export function sizeText(bytes: number): string {
  if (bytes >= 1024 * 1024 * 1024) return `${(bytes / 1024 / 1024 / 1024).toFixed(1)} GB`;
  if (bytes >= 1024 * 1024) return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
  if (bytes >= 1024) return `${Math.round(bytes / 1024)} KB`;
  return `${bytes} B`;
}

/** Why a byte copy was made where copy-on-write was tried. */
export const NO_COW = "no copy-on-write on this file system";

/** The lines about a worktree's readiness (none when nothing was brought, run or hinted). */
export function readyLines(ready: Frozen<WorktreeReady> | undefined): string[] {
  if (!ready) return [];
  const lines: string[] = [];
  if (ready.brought.length) {
    const listed = ready.brought.map((entry) => `${entry.path} (${wayText(entry)})`).join("; ");
    lines.push(`brought in (.worktreeinclude): ${listed}${ready.more ? `; … ${ready.more} more` : ""}`);
  }
  if (ready.setup)
    lines.push(
      `set-up: ${JSON.stringify(ready.setup.command)} ended with exit code ${ready.setup.code} after ${(ready.setup.ms / 1000).toFixed(1)} s${ready.setup.output ? ` (its output's last line: ${lastLine(ready.setup.output)})` : ""}`,
    );
  if (ready.hint) lines.push(ready.hint);
  return lines;
}

function lastLine(output: string): string {
  const line = output.trim().split("\n").pop() ?? "";
  return JSON.stringify(line.length > 200 ? `${line.slice(0, 200)}…` : line);
}

/** The one-line hint where a checkout has a big ignored directory the worktree lacks. */
export function readyHint(paths: readonly string[]): string {
  const first = paths[0]!;
  return `ready: your checkout's ${paths.map((p) => `${p}/`).join(", ")} ${paths.length === 1 ? "is" : "are"} not in this worktree (git ignores ${paths.length === 1 ? "it" : "them"}); to bring ${paths.length === 1 ? "it" : "them"}, add "${first}/" to .worktreeinclude at the repository's top, or set the plugin option "worktreeSetup" to the command that installs ${paths.length === 1 ? "it" : "them"} (e.g. "npm ci --offline")`;
}

/** A set-up command that failed: the launch's error (the worktree is gone already). */
export function setupFailed(command: string, outcome: { code: number; timedOut: boolean; timeoutSeconds: number; output: string }): string {
  const how = outcome.timedOut
    ? `did not finish within ${outcome.timeoutSeconds} s (option worktreeSetupTimeoutSeconds) and was killed with its processes`
    : `failed with exit code ${outcome.code}`;
  return [
    `the worktree set-up command ${JSON.stringify(command)} (plugin option worktreeSetup) ${how}, so the task's worktree and branch were removed.`,
    outcome.output.trim() ? `Its output (the end):\n${outcome.output.trim()}` : "It printed nothing",
  ].join("\n");
}

/** A .worktreeinclude that cannot be read as a list. */
export function includeRefused(why: string): string {
  return `the repository's .worktreeinclude was not used: ${why}`;
}
