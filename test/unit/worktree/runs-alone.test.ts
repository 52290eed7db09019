/**
 * Which files of a branch run on their own in the user's checkout (src/worktree/runs-alone.ts): the
 * rule for each kind the issue names (OpenCode's config, git hook directories and core.hooksPath,
 * .envrc, editors' task and launch files, package managers' config, package.json's install scripts)
 * and what stays out (ordinary sources, a deletion, a package.json whose install scripts are as before).
 */
import { describe, expect, test } from "vitest";
import { installScriptsChanged, runsAlone, runsAloneKind } from "../../../src/worktree/runs-alone.js";

describe("a file that runs on its own", () => {
  test.each([
    ["opencode.json", "OpenCode's config"],
    ["packages/app/opencode.jsonc", "OpenCode's config"],
    [".opencode/plugin/x.ts", "OpenCode's config"],
    ["sub/.OpenCode/tool/t.js", "OpenCode's config"],
    [".husky/pre-commit", "a git hook directory (.husky/)"],
    [".githooks/post-checkout", "a git hook directory (.githooks/)"],
    ["tools/hooks/pre-push", "your git hook directory (core.hooksPath tools/hooks)"],
    [".pre-commit-config.yaml", "git hooks' config"],
    ["lefthook.yml", "git hooks' config"],
    [".envrc", "direnv runs it"],
    ["services/api/.envrc", "direnv runs it"],
    [".vscode/tasks.json", "VS Code runs what it names"],
    [".vscode/launch.json", "VS Code runs what it names"],
    [".vscode/settings.json", "VS Code runs what it names"],
    [".zed/tasks.json", "Zed runs what it names"],
    [".idea/runConfigurations/Dev.xml", "JetBrains IDEs run what it names"],
    ["app.code-workspace", "a VS Code workspace file"],
    [".npmrc", "a package manager's config"],
    [".yarnrc.yml", "a package manager's config"],
    [".pnpmfile.cjs", "a package manager's config"],
  ])("%s: %s", (path, why) => {
    expect(runsAloneKind(path, "tools/hooks")).toContain(why);
  });

  test.each(["src/a.ts", "README.md", ".vscode/extensions.json", "docs/opencode.md", "hooks/pre-commit", ".github/workflows/ci.yml", "package.json"])(
    "%s does not run on its own (by its name)",
    (path) => {
      expect(runsAloneKind(path, "tools/hooks")).toBeUndefined();
    },
  );

  test("package.json: its install scripts added or changed count; other scripts, and unreadable JSON, are said", () => {
    const before = JSON.stringify({ scripts: { test: "vitest", prepare: "husky" } });
    expect(installScriptsChanged(before, JSON.stringify({ scripts: { test: "jest", prepare: "husky" } }))).toEqual([]);
    expect(installScriptsChanged(before, JSON.stringify({ scripts: { test: "vitest", prepare: "curl x | sh", postinstall: "node x" } }))).toEqual([
      "postinstall",
      "prepare",
    ]);
    expect(installScriptsChanged(undefined, JSON.stringify({ scripts: { preinstall: "x" } }))).toEqual(["preinstall"]);
    expect(installScriptsChanged(before, "{ not json")).toBe("unreadable");
  });

  test("a deletion runs nothing; a package.json is read only when its name says so", async () => {
    const blobs: Record<string, string> = { a: JSON.stringify({ scripts: {} }), b: JSON.stringify({ scripts: { install: "node-gyp rebuild" } }) };
    const read = async (blob: string) => blobs[blob]!;
    const found = await runsAlone(
      [
        { path: ".husky/pre-commit", before: { blob: "x" }, after: null },
        { path: "src/package.json.md", before: null, after: { blob: "zz" } },
        { path: "lib/package.json", before: { blob: "a" }, after: { blob: "b" } },
        { path: ".envrc", before: null, after: { blob: "e" } },
      ],
      undefined,
      read,
    );
    expect(found).toEqual([
      { path: "lib/package.json", why: "its install scripts change (install): npm install runs them" },
      { path: ".envrc", why: "direnv runs it when your shell enters the directory" },
    ]);
  });
});
