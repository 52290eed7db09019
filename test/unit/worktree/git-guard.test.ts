/**
 * A worktree shares branches, tags, the stash and the config with the parent's checkout: a git
 * command in a worktree child that writes any of them (other than the task's own branch) is found
 * in the shell command's text (src/worktree/git-guard.ts), and reading commands pass.
 */
import { describe, expect, test } from "vitest";
import { sharedRepositoryWrite } from "../../../src/worktree/git-guard.js";

const OWN = "offshoot/bg_1";
const write = (line: string) => sharedRepositoryWrite(line, OWN)?.what;

describe("git commands that write what the worktree shares", () => {
  test.each([
    ["git checkout -b feature", "creates the branch feature"],
    ["git checkout -B feature HEAD~1", "creates the branch feature"],
    ["git switch -c feature", "creates the branch feature"],
    ["git switch --create=feature", "creates the branch feature"],
    ["git switch develop", "switches to the branch develop (your commits would move it)"],
    ["git branch feature", "creates or moves the branch feature"],
    ["git branch -f main HEAD", "creates or moves the branch main"],
    ["git branch -D main", "deletes a branch"],
    ["git branch -m old new", "renames or copies a branch"],
    ["git tag v1.0", "creates or moves the tag v1.0"],
    ['git tag -a v1 -m "release one"', "creates or moves the tag v1"],
    ["git tag -d v1", "deletes a tag"],
    ["git update-ref refs/heads/main HEAD", "writes the ref refs/heads/main"],
    ["git symbolic-ref HEAD refs/heads/main", "writes a symbolic ref"],
    ["git worktree add ../x", "runs git worktree add (the repository's worktrees are shared)"],
    ["git stash", "writes the stash (shared with the parent's checkout)"],
    ["git stash pop", "writes the stash (shared with the parent's checkout)"],
    ["git config user.email a@b.c", "writes the repository's config"],
    ["git config --unset user.email", "writes the repository's config"],
  ])("%s", (line, what) => {
    expect(write(line)).toBe(what);
  });

  test("found after other commands, behind global options, in a subshell, through a path to git, quoted", () => {
    expect(write("npm test && git -C . branch -f main")).toBe("creates or moves the branch main");
    expect(write("cd src; (git -c core.x=1 --no-pager tag v2)")).toBe("creates or moves the tag v2");
    expect(write("echo $(/usr/bin/git stash)")).toBe("writes the stash (shared with the parent's checkout)");
    expect(write("x=1 | git 'checkout' \"-b\" my\\ branch")).toBe("creates the branch my branch");
    expect(sharedRepositoryWrite("make && git branch feature", OWN)?.command).toBe("git branch feature");
  });
});

describe("what passes", () => {
  test.each([
    "git status",
    "git add -A && git commit -m 'branch off: tag it later'",
    "git diff HEAD~1",
    "git log --oneline main..",
    "git branch",
    "git branch --list 'off*'",
    "git branch -a",
    "git branch --show-current",
    "git branch --contains HEAD",
    `git branch -f ${OWN} HEAD~1`,
    `git checkout -b ${OWN}`,
    `git switch ${OWN}`,
    "git switch --detach HEAD~2",
    "git switch -",
    "git checkout -- src/a.ts",
    "git tag",
    "git tag -l 'v*'",
    "git stash list",
    "git config user.email",
    "git config --get user.name",
    "git config --global user.name me",
    "git worktree list",
    "git reset --hard HEAD~1",
    "git rebase -i HEAD~3",
    "echo digit tagging",
    "npm run build",
  ])("%s", (line) => {
    expect(write(line)).toBeUndefined();
  });

  test("is linear: a long line of many commands is read in one pass", () => {
    const line = Array.from({ length: 20_000 }, (_, i) => `git status ${i}`).join(" && ");
    expect(write(line)).toBeUndefined();
    expect(write(`${line} && git tag x`)).toBe("creates or moves the tag x");
  });
});
