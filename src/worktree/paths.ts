// Where a worktree child's paths lead. The child of a worktree task inherits (fork) or is handed
// (prompt) the parent's absolute paths; every one of them that lies under the parent's checkout
// means the same relative path in the child's own worktree. Pure: the path rules of node:path
// (posix) and string scans, but for the symlink resolution (`resolveLinks`, `realPathOf`,
// `writeEscape`: they read the disk, lstat and readlink, nothing else), done before `mapPath` is asked.
//
// - `mapPath`: one path argument of a file tool (absolute, or relative to the child's working
//   directory; `..` segments are resolved first, as the tools do) -> its worktree path, or undefined
//   when it stays as it is (outside the checkout, or already in the worktree).
// - `mapToolArgs`: the path arguments of every built-in tool of OpenCode 1.18.33 that takes one
//   (read, write, edit, lsp: filePath; glob: path and an absolute pattern; grep: path; apply_patch:
//   the file headers of patchText; bash: workdir), rewritten in place.
// - `writeEscape`: where a path a file tool WRITES (write, edit, apply_patch: in OpenCode's own
//   process, outside any sandbox) really leads, every symlink followed: outside the worktree (the
//   checkout, a sibling worktree, the repository's .git, anywhere) or into a `.git` is refused.
// - `namesCheckout`: whether a shell command names the checkout (bash is refused then, see
//   instance.ts: a command is not rewritten, its meaning could change silently).

import { promises as fs } from "node:fs";
import path from "node:path";

const { dirname, isAbsolute, relative, resolve, sep } = path.posix;

/** The two trees of one worktree task, as absolute, normalised paths. */
export interface WorktreeMap {
  /** the parent's checkout (the repository's top), and any other spelling of it (its real path) */
  checkouts: readonly string[];
  /** the task's worktree (the same tree, the branch offshoot/<task id>) */
  worktree: string;
  /** the child's working directory (the worktree, or the project's subdirectory in it): relative paths start here */
  cwd: string;
}

/** `child` is `parent` or below it (path-segment wise: /repo2 is not under /repo). */
export function isUnder(child: string, parent: string): boolean {
  const rel = relative(parent, child);
  return rel === "" || (rel !== ".." && !rel.startsWith(`..${sep}`) && !isAbsolute(rel));
}

/**
 * The worktree path a tool's path argument means, or undefined when it keeps its own meaning.
 * `resolved` is the argument with symlinks resolved (realPathOf), when the caller could: a link
 * that leads into the checkout maps like the checkout path it leads to. A link in the worktree
 * itself is followed only with `throughWorktreeLinks` (a reading tool's argument): a writing tool's
 * path in the worktree is never redirected, it is checked (writeEscape) and refused when it leaves.
 */
export function mapPath(arg: string, map: WorktreeMap, resolved?: string, throughWorktreeLinks = false): string | undefined {
  if (typeof arg !== "string" || arg === "") return undefined;
  const absolute = resolve(map.cwd, arg);
  for (const candidate of resolved && resolved !== absolute ? [absolute, resolved] : [absolute]) {
    if (isUnder(candidate, map.worktree)) {
      // a read by a path in the worktree that a link leads into the checkout reads the worktree's copy
      if (throughWorktreeLinks && candidate === absolute) continue;
      return undefined;
    }
    for (const checkout of map.checkouts) {
      if (isUnder(candidate, checkout)) {
        const rel = relative(checkout, candidate);
        return rel ? `${map.worktree}${sep}${rel}` : map.worktree;
      }
    }
  }
  return undefined;
}

/** How many symlinks one path may pass through (Linux's own limit, MAXSYMLINKS). */
const MAX_LINKS = 40;

/**
 * `path` (absolute) as the kernel resolves it: component by component, each symlink replaced by its
 * target (a dangling one too: a write there creates its target), `..` taken after the links before
 * it (so `link/..` is the parent of the link's target, not the link's directory). Past the first
 * component that does not exist, the rest is taken literally (what a write creates there is a real
 * directory). Throws on a loop of links, or a component it may not read (EACCES).
 */
export async function resolveLinks(absolute: string): Promise<string> {
  const queue = absolute.split(sep).filter((c) => c !== "" && c !== ".");
  let done: string = sep;
  const missing: string[] = []; // components below the first one that does not exist
  let links = 0;
  while (queue.length) {
    const name = queue.shift()!;
    if (name === "..") {
      if (missing.length) missing.pop();
      else done = dirname(done);
      continue;
    }
    if (missing.length) {
      missing.push(name);
      continue;
    }
    const next = done === sep ? `${sep}${name}` : `${done}${sep}${name}`;
    const stat = await fs.lstat(next).catch((error: NodeJS.ErrnoException) => {
      if (error.code === "ENOENT" || error.code === "ENOTDIR") return undefined;
      throw error;
    });
    if (!stat) {
      missing.push(name);
      continue;
    }
    if (!stat.isSymbolicLink()) {
      done = next;
      continue;
    }
    if (++links > MAX_LINKS) throw new Error(`too many symbolic links in ${absolute}`);
    const target = await fs.readlink(next);
    if (isAbsolute(target)) done = sep;
    queue.unshift(...target.split(sep).filter((c) => c !== "" && c !== "."));
  }
  return missing.length ? resolve(done, ...missing) : done;
}

/**
 * The path with its symlinks resolved (resolveLinks of the path resolved against `cwd`, `..`
 * first, as OpenCode's tools do). Undefined when it could not be resolved.
 */
export async function realPathOf(arg: string, cwd: string): Promise<string | undefined> {
  return resolveLinks(resolve(cwd, arg)).catch(() => undefined);
}

/**
 * The checkout's spellings: as the parent's OpenCode names it (its project directory, less the part
 * the worktree's directory adds below the worktree), then its real path (the repository's top).
 */
export function checkoutSpellings(info: { repo: string; path: string; directory: string }, projectDirectory?: string): string[] {
  const out = new Set<string>();
  const rel = relative(info.path, info.directory);
  if (projectDirectory && isAbsolute(projectDirectory)) {
    const dir = resolve(projectDirectory);
    if (!rel) out.add(dir);
    else if (dir.endsWith(`${sep}${rel}`)) out.add(dir.slice(0, dir.length - rel.length - 1) || sep);
  }
  out.add(info.repo);
  return [...out];
}

/** A path argument of a tool call: where it is in the args, read and written back. */
interface PathSlot {
  get(): string | undefined;
  set(value: string): void;
}

function field(args: Record<string, unknown>, key: string): PathSlot {
  return {
    get: () => (typeof args[key] === "string" ? (args[key] as string) : undefined),
    set: (value) => {
      args[key] = value;
    },
  };
}

/** The tools of OpenCode 1.18.33 whose arguments name files (chunk-7eg57x9n: the tool registry's built-ins). */
export const PATH_ARGS: Readonly<Record<string, readonly string[]>> = {
  read: ["filePath"],
  write: ["filePath"],
  edit: ["filePath"],
  lsp: ["filePath"],
  glob: ["path", "pattern"],
  grep: ["path"],
  bash: ["workdir"],
};

/**
 * The tools of OpenCode 1.18.33 that write files from OpenCode's own process (no sandbox holds
 * them): write and edit (`filePath`, through `writeWithDirs`), apply_patch (each file header: added,
 * updated, moved to, deleted). The others with a path argument only read (read, lsp, glob, grep),
 * or run in the shell (bash's `workdir`).
 */
export const WRITE_TOOLS: readonly string[] = ["write", "edit", "apply_patch"];

/** The header lines of apply_patch's patchText that name a file (OpenCode's parser trims what follows). */
const PATCH_HEADERS = ["*** Add File:", "*** Delete File:", "*** Update File:", "*** Move to:"] as const;

/** The patch with every file header under the checkout naming its worktree path instead; undefined when none does. */
export function mapPatchText(patchText: string, map: WorktreeMap, resolved: ReadonlyMap<string, string> = new Map()): string | undefined {
  let changed = false;
  const lines = patchText.split("\n").map((line) => {
    const header = PATCH_HEADERS.find((h) => line.startsWith(h));
    if (!header) return line;
    const carriage = line.endsWith("\r") ? "\r" : "";
    const target = line.slice(header.length, line.length - carriage.length).trim();
    const mapped = mapPath(target, map, resolved.get(target));
    if (mapped === undefined) return line;
    changed = true;
    return `${header} ${mapped}${carriage}`;
  });
  return changed ? lines.join("\n") : undefined;
}

/** The file paths a patch's headers name (for resolving their symlinks before mapping). */
export function patchPaths(patchText: string): string[] {
  const out: string[] = [];
  for (const line of patchText.split("\n")) {
    const header = PATCH_HEADERS.find((h) => line.startsWith(h));
    if (header) out.push(line.slice(header.length).trim());
  }
  return out;
}

/** The path arguments of one call of `tool` (with the strings they hold now). */
export function pathArgsOf(tool: string, args: Record<string, unknown>): string[] {
  const keys = PATH_ARGS[tool] ?? [];
  const out = keys.flatMap((key) => {
    const value = field(args, key).get();
    // a glob pattern is a path only when it is absolute (a relative one is matched under `path`)
    return value !== undefined && (key !== "pattern" || isAbsolute(value)) ? [value] : [];
  });
  if (tool === "apply_patch" && typeof args.patchText === "string") out.push(...patchPaths(args.patchText));
  return out;
}

/**
 * Rewrites, in place, the path arguments of a call of `tool` that lie under the checkout; returns
 * the names of the arguments it changed. `resolved` holds each path's symlink-free form, when known.
 */
export function mapToolArgs(tool: string, args: Record<string, unknown>, map: WorktreeMap, resolved: ReadonlyMap<string, string> = new Map()): string[] {
  const changed: string[] = [];
  for (const key of PATH_ARGS[tool] ?? []) {
    const slot = field(args, key);
    const value = slot.get();
    if (value === undefined || (key === "pattern" && !isAbsolute(value))) continue;
    const mapped = mapPath(value, map, resolved.get(value), !WRITE_TOOLS.includes(tool));
    if (mapped === undefined) continue;
    slot.set(mapped);
    changed.push(key);
  }
  if (tool === "apply_patch" && typeof args.patchText === "string") {
    const patch = mapPatchText(args.patchText, map, resolved);
    if (patch !== undefined) {
      args.patchText = patch;
      changed.push("patchText");
    }
  }
  return changed;
}

/** Characters a path name is made of: a match followed or preceded by one of them is part of another name. */
function isNameChar(c: string | undefined): boolean {
  return c !== undefined && /[\w.~-]/.test(c);
}

/** The ways a shell command can spell `dir`: as is, with its spaces and quotes escaped, from ~ or $HOME. */
export function shellSpellings(dir: string, home?: string): string[] {
  const spellings = new Set([dir, dir.replace(/([\s'"\\$`!&;|()<>*?[\]{}#])/g, "\\$1")]);
  if (home && home !== sep && isUnder(dir, home) && dir !== home) {
    const rel = relative(home, dir);
    for (const prefix of ["~/", "$HOME/", "${HOME}/"]) spellings.add(prefix + rel);
  }
  return [...spellings];
}

/**
 * Whether `command` names one of `dirs` as a path (at a name boundary: `/repo` is not named by
 * `/repo2` nor by `/x/repo`). Linear in the command's length per spelling.
 */
export function namesCheckout(command: string, dirs: readonly string[], home?: string): boolean {
  if (typeof command !== "string" || !command) return false;
  for (const dir of dirs) {
    for (const spelling of shellSpellings(dir, home)) {
      for (let at = command.indexOf(spelling); at !== -1; at = command.indexOf(spelling, at + 1)) {
        const before = command[at - 1];
        const after = command[at + spelling.length];
        // "/x/repo" names another directory; "~/repo" and "$HOME/repo" start with their own boundary
        const startsClean = !spelling.startsWith(sep) || (!isNameChar(before) && before !== sep);
        if (startsClean && !isNameChar(after)) return true;
      }
    }
  }
  return false;
}

/** The paths a call of `tool` writes or removes (none for a tool that does not write). */
export function writtenPathsOf(tool: string, args: Record<string, unknown>): string[] {
  if (tool === "apply_patch") return typeof args.patchText === "string" ? patchPaths(args.patchText).filter(Boolean) : [];
  if (!WRITE_TOOLS.includes(tool)) return [];
  const value = field(args, "filePath").get();
  return value ? [value] : [];
}

/** Code points HFS+ ignores in a name (git's is_hfs_dotgit): `.g\u200cit` is `.git` there. */
const HFS_IGNORED = /[\u200c-\u200f\u202a-\u202e\u206a-\u206f\ufeff]/g;

/**
 * A name that is git's `.git` on some file system: in any case (case-insensitive systems), with
 * trailing dots or spaces (NTFS drops them), as NTFS's short name `git~1`, or with code points HFS+
 * ignores. Checked on every system: a branch or a child can carry any of them.
 */
export function isDotGitName(name: string): boolean {
  const plain = name
    .replace(HFS_IGNORED, "")
    .toLowerCase()
    .replace(/[. ]+$/, "");
  return plain === ".git" || plain === "git~1";
}

/** Whether a relative path (`/`-separated) has a `.git` component (isDotGitName). */
export function hasDotGitComponent(rel: string): boolean {
  return rel.split("/").some(isDotGitName);
}

/** Why a path a file tool writes may not be written: where it really leads. */
export interface WriteEscape {
  /** the path as the call names it (after the mapping) */
  path: string;
  /** where it leads, every symlink followed */
  resolved: string;
  /** into the parent's checkout, elsewhere outside the worktree, into git's own files, or into OpenCode's config in the worktree */
  where: "checkout" | "outside" | "git" | "config";
}

/** Whether `rel` (relative to the worktree's top, `/`-separated) is one of OpenCode's config entries or inside one (any case: a file system may fold it). */
export function isConfigPath(rel: string, entries: readonly string[]): boolean {
  const path = rel.split(sep).join("/").toLowerCase();
  return entries.some((entry) => {
    const e = entry.toLowerCase();
    return path === e || path.startsWith(`${e}/`);
  });
}

/**
 * Where a path a file tool writes really leads, when that is not a place it may write: outside
 * every one of `roots` (the worktree as spelled and as resolved) once every symlink on the way is
 * followed, the last component and a dangling link included; or a `.git` component below the root
 * (the worktree's `.git` file says where its repository is). Both spellings a tool may use are
 * checked: the path resolved against `cwd` first (`..` taken by name: apply_patch, a relative
 * path) and, for an absolute path, as the kernel takes it (`link/..`: write and edit pass it on as
 * it is). With `config` (the worktree as spelled and resolved, and its config entries: worktree.ts
 * guardConfig), a path that leads into OpenCode's config there is refused too. Undefined when the
 * path may be written. Throws when it cannot be resolved (a loop of links, an unreadable directory).
 */
export async function writeEscape(
  arg: string,
  map: WorktreeMap,
  roots: readonly string[],
  config?: { roots: readonly string[]; entries: readonly string[] },
): Promise<WriteEscape | undefined> {
  const forms = [resolve(map.cwd, arg)];
  if (isAbsolute(arg) && arg !== forms[0]) forms.push(arg);
  for (const form of forms) {
    const resolved = await resolveLinks(form);
    const root = roots.find((r) => isUnder(resolved, r));
    if (root === undefined) return { path: arg, resolved, where: map.checkouts.some((c) => isUnder(resolved, c)) ? "checkout" : "outside" };
    if (hasDotGitComponent(relative(root, resolved))) return { path: arg, resolved, where: "git" };
    const top = config?.roots.find((r) => isUnder(resolved, r));
    if (top !== undefined && isConfigPath(relative(top, resolved), config!.entries)) return { path: arg, resolved, where: "config" };
  }
  return undefined;
}
