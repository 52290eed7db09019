// Files that run on their own in the user's checkout: a branch that adds or changes one of them is
// code the host runs later without anyone calling it (OpenCode loads its config and plugins at
// start, git runs hooks at a commit, direnv runs .envrc when the shell enters the directory, an
// editor runs its tasks and settings, npm runs install scripts and reads .npmrc). A task's branch is
// the child's, and a child is untrusted: the agent cannot take such a branch on its own, only a
// person in /tasks with this list shown (manager/take.ts). Pure rules first; `runsAloneIn` at the
// end reads what they need of git (the repository's hooks path, package.json's blobs).

import { git, parseRawDiff, runGit } from "./git.js";

/** One file of a branch that runs on its own, and why. */
export interface RunsAlone {
  path: string;
  why: string;
}

/** The lifecycle scripts `npm install` runs in the project itself (and `npm ci`, `npm publish` some of them). */
export const INSTALL_SCRIPTS = ["preinstall", "install", "postinstall", "prepublish", "preprepare", "prepare", "postprepare"] as const;

/** Why `path` (relative to the checkout's top, `/`-separated) runs on its own, or undefined; `hooksPath`: the repository's core.hooksPath, relative to its top. */
export function runsAloneKind(path: string, hooksPath?: string): string | undefined {
  const parts = path.split("/");
  const lower = parts.map((p) => p.toLowerCase());
  const name = lower[lower.length - 1]!;
  const under = (dir: string) => path === dir || path.startsWith(`${dir}/`);
  if (name === "opencode.json" || name === "opencode.jsonc" || lower.includes(".opencode"))
    return "OpenCode's config: OpenCode loads its plugins, tools, agents and MCP servers at its next start";
  if (lower[0] === ".husky" || lower[0] === ".githooks") return `a git hook directory (${parts[0]}/): git runs it at your next commit or checkout`;
  if (hooksPath && under(hooksPath)) return `your git hook directory (core.hooksPath ${hooksPath}): git runs it at your next commit or checkout`;
  if (path === ".pre-commit-config.yaml" || /^\.?lefthook(-local)?\.ya?ml$/.test(name))
    return "git hooks' config (pre-commit, lefthook): they run what it names at your next commit";
  if (name === ".envrc") return "direnv runs it when your shell enters the directory";
  if (lower[0] === ".vscode" && ["tasks.json", "launch.json", "settings.json"].includes(lower[1] ?? ""))
    return "an editor's tasks, launch or settings file: VS Code runs what it names";
  if (lower[0] === ".zed" && ["tasks.json", "settings.json"].includes(lower[1] ?? "")) return "an editor's tasks or settings file: Zed runs what it names";
  if (lower[0] === ".idea" && lower[1] === "runconfigurations") return "an IDE's run configuration: JetBrains IDEs run what it names";
  if (name.endsWith(".code-workspace")) return "a VS Code workspace file: it can hold tasks and settings VS Code runs";
  if ([".npmrc", ".yarnrc", ".yarnrc.yml", ".pnpmfile.cjs", ".pnpmfile.mjs"].includes(name))
    return "a package manager's config: npm, yarn or pnpm reads it (and may run what it names) at your next install";
  return undefined;
}

/** The install scripts a change of a package.json adds or changes (`before` absent: a new file), or "unreadable" when `after` is not JSON with an object. */
export function installScriptsChanged(before: string | undefined, after: string): string[] | "unreadable" {
  const scripts = (text: string | undefined): Record<string, unknown> | undefined => {
    if (text === undefined) return {};
    try {
      const parsed = JSON.parse(text) as { scripts?: unknown };
      if (!parsed || typeof parsed !== "object") return undefined;
      return parsed.scripts && typeof parsed.scripts === "object" ? (parsed.scripts as Record<string, unknown>) : {};
    } catch {
      return undefined;
    }
  };
  const now = scripts(after);
  if (!now) return "unreadable";
  const was = scripts(before) ?? {};
  return INSTALL_SCRIPTS.filter((name) => now[name] !== undefined && JSON.stringify(now[name]) !== JSON.stringify(was[name]));
}

/** A change a take writes: its path, and its blob before and after (absent: added or deleted). */
export interface BlobChange {
  path: string;
  before: { blob: string } | null;
  after: { blob: string } | null;
}

/** The files among `changes` that run on their own (added or changed ones only: a deletion runs nothing). */
export async function runsAlone(changes: readonly BlobChange[], hooksPath: string | undefined, read: (blob: string) => Promise<string>): Promise<RunsAlone[]> {
  const out: RunsAlone[] = [];
  for (const change of changes) {
    if (!change.after) continue;
    const kind = runsAloneKind(change.path, hooksPath);
    if (kind) {
      out.push({ path: change.path, why: kind });
      continue;
    }
    if (change.path !== "package.json" && !change.path.endsWith("/package.json")) continue;
    const scripts = installScriptsChanged(change.before ? await read(change.before.blob) : undefined, await read(change.after.blob));
    if (scripts === "unreadable") out.push({ path: change.path, why: "not readable as JSON: npm would read its install scripts, which cannot be checked" });
    else if (scripts.length) out.push({ path: change.path, why: `its install scripts change (${scripts.join(", ")}): npm install runs them` });
  }
  return out;
}

/** The repository's core.hooksPath (relative to its top), when it names a directory inside it. */
async function hooksPathOf(repo: string): Promise<string | undefined> {
  const read = await runGit(["config", "--get", "core.hooksPath"], { cwd: repo });
  const value = read.code === 0 ? read.stdout.trim().replace(/\/+$/, "") : "";
  if (!value) return undefined;
  const rel = value.startsWith(`${repo}/`) ? value.slice(repo.length + 1) : value.startsWith("/") ? undefined : value.replace(/^\.\//, "");
  return rel && !rel.split("/").includes("..") ? rel : undefined;
}

/**
 * The files that run on their own among what `changes` writes in the checkout at `repo` (a take's
 * plan), or among the difference between two trees or commits (`from`, `to`: a branch's summary).
 */
export async function runsAloneIn(repo: string, changes: readonly BlobChange[] | { from: string; to: string }): Promise<RunsAlone[]> {
  const list = "from" in changes ? parseRawDiff(await git(["diff-tree", "-r", "-z", "--no-renames", changes.from, changes.to], { cwd: repo })) : changes;
  if (!list.some((c) => c.after)) return [];
  return runsAlone(list, await hooksPathOf(repo), (blob) => git(["cat-file", "blob", blob], { cwd: repo }));
}
