/**
 * A worktree's OpenCode config is the user's, not what git holds: here the project's opencode.json is
 * tracked in a version without the plugin (and without the model), and the user's own version (with
 * both) is hidden from git with `--skip-worktree` (a common way to keep local config). The worktree
 * gets the user's working copy (worktree.ts guardConfig), so its OpenCode instance loads the plugin
 * and the child runs; the branch's own version is never what OpenCode loads, and never committed as
 * the task's change. (Before, the worktree got the committed version, its instance loaded no plugin,
 * and the launch was refused.)
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, test } from "vitest";
import { getMessages, isToolFollowUp, lastUserText } from "../harness/index.js";
import { newSession, notifications, promptText, storedTask, toolOutputs, until, useOpencode } from "./helpers.js";

const env = useOpencode();

const git = (cwd: string, ...args: string[]) =>
  execFileSync("git", args, {
    cwd,
    encoding: "utf8",
    env: { ...process.env, GIT_AUTHOR_NAME: "t", GIT_AUTHOR_EMAIL: "t@x", GIT_COMMITTER_NAME: "t", GIT_COMMITTER_EMAIL: "t@x" },
  }).trim();

describe("a worktree whose committed config is not the user's", () => {
  test("gets the user's config: its instance loads the plugin, the child runs, and the config is not the task's change", async () => {
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
    const mine = fs.readFileSync(path.join(dir, "opencode.json"), "utf8");

    model.script({
      name: "cfg-child",
      match: (r) => lastUserText(r).includes("WT_CFG_CHILD") && !isToolFollowUp(r),
      reply: { toolCalls: [{ name: "bash", arguments: { command: "printf 'x\\n' > x.txt && head -c 40 opencode.json", description: "work" } }] },
    });
    model.script({ name: "cfg-done", match: (r) => lastUserText(r).includes("WT_CFG_CHILD") && isToolFollowUp(r), reply: { text: "done" } });
    model.script({
      name: "cfg-launch",
      match: (r) => lastUserText(r) === "WT_CFG" && !isToolFollowUp(r),
      reply: {
        toolCalls: [{ name: "background_task", arguments: { description: "User config", prompt: "WT_CFG_CHILD", agent: "general", isolation: "worktree" } }],
      },
    });
    model.script({ name: "cfg-launched", match: (r) => lastUserText(r) === "WT_CFG" && isToolFollowUp(r), reply: { text: "launched" } });
    model.script({ name: "cfg-wake", match: (r) => lastUserText(r).includes("Background tasks you started have ended"), reply: { text: "ok" } });
    const parent = await newSession(server.client, "user config");
    await promptText(server.client, parent, "WT_CFG");
    const [out] = toolOutputs(await getMessages(server.client, parent), "background_task");
    expect(out).toMatch(/^Background task bg_[0-9a-z]{8} started/);
    const id = /bg_[0-9a-z]{8}/.exec(out!)![0];
    await until("the notice", async () => notifications(await getMessages(server.client, parent), id)[0], 60_000);
    // the child ran (its instance had the plugin and the model), on the user's config
    expect(model.requests.some((r) => r.label === "cfg-done")).toBe(true);
    expect(mine).toContain("mock-model");
    const stored = (await storedTask(server, id)) as unknown as { status: string; worktree: { base: string; branch: string } };
    expect(stored.status).toBe("completed");
    // its change is its own file; the config is as the branch started
    expect(git(dir, "diff", "--name-only", stored.worktree.base, stored.worktree.branch)).toBe("x.txt");
  });
});
