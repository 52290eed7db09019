// The git a take needs (git-version.ts): `git --version` read as numbers, and the refusal that names
// the version found and the one needed, against fake version strings and against the real git.
import { execFileSync } from "node:child_process";
import { tmpdir } from "node:os";
import { describe, expect, it } from "vitest";
import { TAKE_NEEDS_GIT, atLeast, checkGitForTake, parseGitVersion, takeGitRefusal } from "../../../src/worktree/git-version.js";

describe("git's version for a take", () => {
  it.each<[string, number[] | undefined]>([
    ["git version 2.39.5", [2, 39, 5]],
    ["git version 2.37.1 (Apple Git-137.1)", [2, 37, 1]],
    ["git version 2.45.0.windows.1\n", [2, 45, 0]],
    ["git version 2.38.0-rc0", [2, 38]],
    ["git version 3.0", [3, 0]],
    ["hub version 2.14.2", undefined],
    ["", undefined],
  ])("reads %j as %j", (output, version) => {
    expect(parseGitVersion(output)).toEqual(version);
  });

  it("compares field by field", () => {
    expect(atLeast([2, 38], [2, 38])).toBe(true);
    expect(atLeast([2, 38, 0], [2, 38])).toBe(true);
    expect(atLeast([2, 37, 9], [2, 38])).toBe(false);
    expect(atLeast([3, 0], [2, 38])).toBe(true);
    expect(atLeast([1, 99], [2, 38])).toBe(false);
  });

  it("an older git is refused, naming the version found and the one needed", () => {
    expect(takeGitRefusal("git version 2.37.1 (Apple Git-137.1)")).toBe(
      "a take needs git 2.38 or newer (it merges with git merge-tree --write-tree), and the git on PATH is 2.37.1. Install a newer git, then take it again",
    );
    expect(takeGitRefusal("something else")).toContain("the git on PATH is something else.");
    expect(takeGitRefusal("git version 2.38.0")).toBeUndefined();
  });

  it("the real git on this machine: its version is read, and checked the same way", async () => {
    const output = execFileSync("git", ["--version"], { encoding: "utf8" });
    const version = parseGitVersion(output)!;
    expect(version.length).toBeGreaterThanOrEqual(2);
    expect(await checkGitForTake(tmpdir())).toBe(atLeast(version, TAKE_NEEDS_GIT) ? undefined : takeGitRefusal(output));
  });
});
