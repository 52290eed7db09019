/**
 * A worktree whose OpenCode config is not the parent's: the launch fails loudly, and nothing is left.
 * Here the project's opencode.json is tracked in a version without the plugin (and without the
 * model), and the parent's own version is hidden from git with `--skip-worktree` (a common way to
 * keep local config): the worktree gets the committed version, its OpenCode instance loads no plugin,
 * and a prompt there would silently do nothing.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, test } from "vitest";
import { getMessages } from "../harness/index.js";
import { children, newSession, promptText, readTaskFile, scriptLaunch, toolOutputs, useOpencode } from "./helpers.js";

const env = useOpencode();

const git = (cwd: string, ...args: string[]) =>
  execFileSync("git", args, {
    cwd,
    encoding: "utf8",
    env: { ...process.env, GIT_AUTHOR_NAME: "t", GIT_AUTHOR_EMAIL: "t@x", GIT_COMMITTER_NAME: "t", GIT_COMMITTER_EMAIL: "t@x" },
  }).trim();

describe("worktree without the parent's config", () => {
  test("the worktree's instance did not load the plugin: the launch is refused, no child, no worktree, no branch", async () => {
    const { model, server } = env;
    const dir = server.directory;
    const blob = execFileSync("git", ["hash-object", "-w", "--stdin"], {
      cwd: dir,
      input: '{ "$schema": "https://opencode.ai/config.json" }\n',
      encoding: "utf8",
    }).trim();
    git(dir, "update-index", "--add", "--cacheinfo", `100644,${blob},opencode.json`);
    git(dir, "commit", "-q", "-m", "a shared config without the plugin");
    git(dir, "update-index", "--skip-worktree", "opencode.json");
    const head = git(dir, "rev-parse", "HEAD");

    scriptLaunch(model, {
      name: "cfg",
      cue: "WT_CFG",
      task: { description: "No config", prompt: "WT_CFG_CHILD", agent: "general", isolation: "worktree" } as never,
      launched: "refused",
    });
    const parent = await newSession(server.client, "no config");
    await promptText(server.client, parent, "WT_CFG");
    const [out] = toolOutputs(await getMessages(server.client, parent), "background_task");
    expect(out).toMatch(
      /^Error: the background task was not started: the OpenCode instance of the worktree \S+ did not load this plugin, so its OpenCode config \(model, plugins\) is not there and the child would silently do nothing\./,
    );
    expect(out).toContain("Nothing was left behind");
    expect(await children(server.client, parent)).toHaveLength(0);
    expect((await readTaskFile(server).catch(() => ({ tasks: [] }))).tasks).toHaveLength(0);
    expect(git(dir, "branch", "--list", "offshoot/*")).toBe("");
    expect(
      git(dir, "worktree", "list", "--porcelain")
        .split("\n")
        .filter((l) => l.startsWith("worktree ")),
    ).toEqual([`worktree ${dir}`]);
    const project = (await server.client.project.current()).data!;
    const home = path.join(server.dataDir, "opencode", "plugins", "offshoot", "worktrees", project.id);
    expect(fs.existsSync(home) ? fs.readdirSync(home) : []).toEqual([]);
    expect(git(dir, "rev-parse", "HEAD")).toBe(head);
  });
});
