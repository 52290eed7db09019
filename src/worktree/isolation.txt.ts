// What a worktree task's child is told about where it works (its first prompt: launch/launcher.ts, and a
// native fork's directive), and the reply a shell command naming the parent's checkout gets
// (instance.ts). Pure texts.

import type { WorktreeInfo } from "../task-record.js";
import { privatePaths } from "./sandbox/plan.js";
import { sandboxNote } from "./sandbox/sandbox.txt.js";

/** What a sandboxed child is told of its sandbox besides its paths: its tools' caches, and the hosts it may reach. */
export interface SandboxFacts {
  caches: string;
  hosts: readonly string[];
}

/** Where the child works: its first prompt starts with this (a native fork: its directive). */
export function workplaceNote(info: Pick<WorktreeInfo, "repo" | "path" | "directory" | "branch" | "sandboxDir">, sandbox?: SandboxFacts): string {
  return [
    `You work in your own git worktree: your working directory is ${info.directory} (branch ${info.branch}), a copy of the parent's checkout ${info.repo} made from its HEAD plus its uncommitted changes.`,
    `Every path under ${info.repo} in this conversation and in your instructions means the same path under ${info.path}: your file tools are pointed there, and a shell command that names ${info.repo} is refused (use paths under ${info.path}, or relative paths).`,
    ...(info.sandboxDir && sandbox ? [sandboxNote(info.path, privatePaths(info.sandboxDir).tmp, sandbox.caches, sandbox.hosts)] : []),
    `Your changes are committed on your branch when you end (OpenCode's config files are not yours to change: they stay as the parent has them); the parent takes them into its checkout when it chooses.`,
  ].join("\n");
}

/** A first prompt with the note in front. */
export function withWorkplace(
  info: Pick<WorktreeInfo, "repo" | "path" | "directory" | "branch" | "sandboxDir">,
  prompt: string,
  sandbox?: SandboxFacts,
): string {
  return `${workplaceNote(info, sandbox)}\n\n${prompt}`;
}

/** The refusal of a file tool's write to OpenCode's config in the worktree (the host would load it, outside any sandbox). */
export function configWriteRefusal(tool: string, path: string): string {
  return `Refused: this ${tool} call would write ${path}, OpenCode's config (opencode.json, opencode.jsonc, .opencode/), which OpenCode loads and runs in its own process, outside your sandbox: in a task's worktree it is the parent's, never yours to change; nothing was written. If the task needs a config change, say so in your answer for the parent to make.`;
}

/** The refusal of a shell command that names the parent's checkout. */
export function checkoutCommandRefusal(checkout: string, worktree: string, directory: string): string {
  return [
    `Refused: this command names ${checkout}, the parent's checkout, which a task in its own worktree must not touch (nothing ran).`,
    `You work in your own copy at ${worktree} (your working directory: ${directory}).`,
    `Run the command again with ${worktree} in place of ${checkout} (e.g. cd ${JSON.stringify(directory)} && …), or with relative paths, or with workdir set to ${directory}.`,
  ].join(" ");
}

/** The refusal of a call whose paths could not be checked. */
export function unmappedRefusal(tool: string, why: string): string {
  return `Refused: the paths of this ${tool} call could not be checked against the parent's checkout (${why}); nothing ran. Call it again with paths under your working directory.`;
}

/** The refusal of a git command that would change the repository the worktree shares with the parent's checkout. */
export function sharedRepositoryRefusal(command: string, what: string, branch: string): string {
  return [
    `Refused: \`${command.length > 200 ? `${command.slice(0, 200)}…` : command}\` ${what}, in the repository your worktree shares with the parent's checkout (its branches, tags, stash and config are the parent's too); nothing ran.`,
    `Work on your own branch ${branch}: commit your changes there (they are committed for you when you end), and leave other branches, tags, the stash and the config as they are.`,
  ].join(" ");
}

/** The refusal of a file tool's write that leads out of the worktree (a symlink, a path outside) or into git's own files. */
export function writeEscapeRefusal(tool: string, escape: { path: string; resolved: string; where: "checkout" | "outside" | "git" }, worktree: string): string {
  const link = escape.resolved !== escape.path ? ` (${escape.path} leads there through a symlink)` : "";
  const where =
    escape.where === "git"
      ? "in git's own files (a .git component), which no file tool may write"
      : escape.where === "checkout"
        ? "in the parent's checkout, which a task in its own worktree must not change"
        : "outside your worktree";
  return [
    `Refused: this ${tool} call would write ${escape.resolved}${link}, ${where}; nothing was written.`,
    `Your file tools write only inside your worktree ${worktree}, and never through a symlink that leads out of it (a link is followed to where it points).`,
    "Write the file by its own path in your worktree, not through the link.",
  ].join(" ");
}
