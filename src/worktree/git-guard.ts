// A worktree shares its repository with the parent's checkout: its branches, tags, stash and config.
// A git command run inside the worktree that creates, moves or deletes a branch or tag other than the
// task's own, writes the stash, adds or removes worktrees, or writes the repository's config changes
// the parent's repository although it names no path of it. This finds such a command in a shell
// command line, as text (what paths.ts does for the checkout's paths). Pure and linear: one pass to
// split the line into simple commands and words, one look at each `git` word's subcommand.
//
// What it cannot see: a git command built at run time (a variable, eval, a script file). Those keep
// the limit docs/worktrees.md states ("Without a sandbox: text-level checks only").

/** Git's global options that take a value as the next word (`git -C dir status`). */
const GLOBAL_WITH_VALUE = new Set(["-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path", "--config-env"]);

/** Options of `git branch` that only read (list, filter, show); those of `git tag`. */
const BRANCH_LISTING = new Set(["-l", "--list", "-a", "--all", "-r", "--remotes", "-v", "-vv", "--verbose", "--show-current", "--column", "--no-column"]);
const TAG_LISTING = new Set(["-l", "--list", "-n", "--column", "--no-column"]);
const LISTING_WITH_VALUE = new Set(["--contains", "--no-contains", "--merged", "--no-merged", "--points-at", "--format", "--sort", "--color"]);
const lists = (args: readonly string[], listing: ReadonlySet<string>) => args.some((a) => listing.has(a) || LISTING_WITH_VALUE.has(a.split("=")[0]!));

/** Splits a command line into simple commands (at ; & | && || newlines, parentheses, $( and backticks), each into words (quotes removed). */
function simpleCommands(line: string): string[][] {
  const commands: string[][] = [];
  let words: string[] = [];
  let word = "";
  let inWord = false;
  let quote: string | undefined;
  const endWord = () => {
    if (inWord) words.push(word);
    word = "";
    inWord = false;
  };
  const endCommand = () => {
    endWord();
    if (words.length) commands.push(words);
    words = [];
  };
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quote) {
      if (c === quote) quote = undefined;
      else if (c === "\\" && quote === '"' && i + 1 < line.length) word += line[++i];
      else word += c;
      continue;
    }
    if (c === "'" || c === '"') {
      quote = c;
      inWord = true;
    } else if (c === "\\" && i + 1 < line.length) {
      word += line[++i];
      inWord = true;
    } else if (c === " " || c === "\t") endWord();
    else if (c === ";" || c === "&" || c === "|" || c === "\n" || c === "(" || c === ")" || c === "`") endCommand();
    else if (c === "$" && line[i + 1] === "(") {
      endCommand();
      i++;
    } else {
      word += c;
      inWord = true;
    }
  }
  endCommand();
  return commands;
}

/** The positional words after a subcommand (options and their values left out). */
function positionals(args: readonly string[], withValue: ReadonlySet<string>): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === "--") {
      out.push(...args.slice(i + 1));
      break;
    }
    if (a.startsWith("-")) {
      if (withValue.has(a)) i++;
      continue;
    }
    out.push(a);
  }
  return out;
}

const has = (args: readonly string[], ...options: string[]) =>
  args.some((a) => options.includes(a) || options.some((o) => o.startsWith("--") && a.startsWith(`${o}=`)));
const ownRef = (name: string, own: string) => name === own || name === `refs/heads/${own}`;

/** What `git <sub> <args>` would change of the shared repository, or undefined. */
function sharedWrite(sub: string, args: readonly string[], own: string): string | undefined {
  switch (sub) {
    case "branch": {
      if (has(args, "-d", "-D", "--delete")) return "deletes a branch";
      if (has(args, "-m", "-M", "--move", "-c", "-C", "--copy")) return "renames or copies a branch";
      if (lists(args, BRANCH_LISTING)) return undefined;
      const names = positionals(args, new Set(["-u", "--set-upstream-to", "-t", "--track"]));
      if (names.length === 0 || ownRef(names[0]!, own)) return undefined;
      return `creates or moves the branch ${names[0]}`;
    }
    case "checkout":
    case "switch": {
      const creating = sub === "checkout" ? ["-b", "-B", "--orphan"] : ["-c", "-C", "--create", "--force-create", "--orphan"];
      for (let i = 0; i < args.length; i++) {
        const [name, value] = args[i]!.split("=", 2);
        if (creating.includes(name!)) {
          const branch = value ?? args[i + 1];
          return branch && ownRef(branch, own) ? undefined : `creates the branch ${branch ?? ""}`.trim();
        }
      }
      // switching the worktree onto another branch: its commits would then move that branch
      if (sub === "switch" && !has(args, "-d", "--detach")) {
        const target = positionals(args, new Set(["-t", "--track", "--conflict"]))[0];
        if (target && target !== "-" && !ownRef(target, own)) return `switches to the branch ${target} (your commits would move it)`;
      }
      return undefined;
    }
    case "tag": {
      if (has(args, "-d", "--delete")) return "deletes a tag";
      if (lists(args, TAG_LISTING)) return undefined;
      const names = positionals(args, new Set(["-m", "--message", "-F", "--file", "-u", "--local-user", "--cleanup"]));
      return names.length > 0 ? `creates or moves the tag ${names[0]}` : undefined;
    }
    case "update-ref": {
      const names = positionals(args, new Set(["-m"]));
      return names[0] && !ownRef(names[0], own) ? `writes the ref ${names[0]}` : undefined;
    }
    case "symbolic-ref":
      return positionals(args, new Set(["-m"])).length >= 2 ? "writes a symbolic ref" : undefined;
    case "worktree": {
      const action = positionals(args, new Set())[0];
      return action && action !== "list" ? `runs git worktree ${action} (the repository's worktrees are shared)` : undefined;
    }
    case "stash": {
      const action = positionals(args, new Set())[0];
      return action === "list" || action === "show" ? undefined : "writes the stash (shared with the parent's checkout)";
    }
    case "config": {
      if (has(args, "--global", "--system", "--file", "-f", "--blob")) return undefined;
      if (has(args, "--unset", "--unset-all", "--add", "--replace-all", "--rename-section", "--remove-section", "-e", "--edit"))
        return "writes the repository's config";
      if (has(args, "--get", "--get-all", "--get-regexp", "--list", "-l", "--show-origin", "--get-urlmatch")) return undefined;
      return positionals(args, new Set(["--type", "--default"])).length >= 2 ? "writes the repository's config" : undefined;
    }
    default:
      return undefined;
  }
}

/**
 * The first git command in `line` that would change the repository the worktree shares with the
 * parent's checkout (other than the task's own branch `ownBranch`): `{ command, what }`, else undefined.
 */
export function sharedRepositoryWrite(line: string, ownBranch: string): { command: string; what: string } | undefined {
  if (typeof line !== "string" || !line.includes("git")) return undefined;
  for (const words of simpleCommands(line)) {
    for (let at = 0; at < words.length; at++) {
      const w = words[at]!;
      if (w !== "git" && !w.endsWith("/git")) continue;
      let i = at + 1;
      while (i < words.length && words[i]!.startsWith("-")) i += GLOBAL_WITH_VALUE.has(words[i]!) ? 2 : 1;
      const sub = words[i];
      if (!sub) break;
      const what = sharedWrite(sub, words.slice(i + 1), ownBranch);
      if (what) return { command: words.slice(at).join(" "), what };
      break;
    }
  }
  return undefined;
}
