/**
 * "Take changes" on an ended worktree task in /tasks, in the REAL OpenCode TUI (1.18.33) under tmux,
 * with both halves: a confirm says what is applied; once confirmed the task's change is in the
 * parent's working tree (not staged), its worktree and branch are gone (checked with git), a toast
 * says so, and the action is no longer offered. Only the model is scripted.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, test } from "vitest";
import { DIST_PLUGIN, isToolFollowUp, lastUserText } from "../e2e/harness/index.js";
import { showsEndedWorktreeRow } from "./harness.js";
import { useTuiScenario } from "./vitest.js";
import { readTaskFile, until } from "../e2e/scenarios/helpers.js";

const git = (cwd: string, ...args: string[]) => execFileSync("git", args, { cwd, encoding: "utf8" }).trim();
type Stored = { id: string; status: string; worktree?: { path: string; branch: string; removed?: string } };

const scenario = useTuiScenario({
  title: "Take parent",
  opencode: { plugins: [DIST_PLUGIN], files: { "a.txt": "a\n" } },
  script: (model) => {
    model.script({
      name: "launch",
      match: (r) => lastUserText(r) === "go take" && !isToolFollowUp(r),
      reply: {
        toolCalls: [
          { name: "background_task", arguments: { description: "Edit to take", agent: "general", isolation: "worktree", prompt: "TASK-take: edit a.txt" } },
        ],
      },
    });
    model.script({ name: "launched", match: (r) => lastUserText(r) === "go take" && isToolFollowUp(r), reply: { text: "Started it." } });
    model.script({
      name: "child",
      match: (r) => lastUserText(r).includes("TASK-take") && !isToolFollowUp(r),
      reply: { toolCalls: [{ name: "bash", arguments: { command: "echo from-the-task >> a.txt", description: "Edit" } }] },
    });
    model.script({ name: "child-done", match: (r) => lastUserText(r).includes("TASK-take") && isToolFollowUp(r), reply: { text: "Edited a.txt." } });
    model.script({ name: "wake", match: (r) => lastUserText(r).includes("Background tasks you started have ended"), reply: { text: "Noted." } });
  },
});

describe("taking a worktree task's changes from /tasks", () => {
  test("the confirmed action applies the change to the working tree, uncommitted, and removes the worktree and branch", async () => {
    const { server, tui, parentID } = scenario;
    await server.client.session.promptAsync({ path: { id: parentID }, body: { parts: [{ type: "text", text: "go take" }] } });
    const ended = await until(
      "the task ended with its worktree kept",
      async () => ((await readTaskFile(server)).tasks as Stored[]).find((t) => t.status === "completed" && t.worktree && !t.worktree.removed),
      60_000,
    );
    const { path: wtPath, branch } = ended.worktree!;
    // the parent has an uncommitted change of its own, in another file
    fs.writeFileSync(path.join(server.directory, "mine.txt"), "mine\n");

    tui.keys("C-x", "o");
    await tui.waitFor((s) => showsEndedWorktreeRow(s, "Edit to take"), { timeoutMs: 30_000, what: "/tasks with the ended task" });
    tui.keys("Enter");
    await tui.waitFor("Take changes", { timeoutMs: 15_000, what: "the take action" });
    tui.keys("Down", "Down"); // Open child session, the branch line, Take changes
    tui.keys("Enter");
    await tui.waitFor((s) => s.includes('Take "Edit to take"?') && s.includes("uncommitted changes"), {
      timeoutMs: 15_000,
      what: "the confirm saying what is applied",
    });
    // nothing is applied before the confirm
    expect(fs.readFileSync(path.join(server.directory, "a.txt"), "utf8")).toBe("a\n");
    tui.keys("Enter"); // Confirm (the default button)

    // the outcome stays in the task's actions (a toast says it too, for 4 s, unless the next replaces it)
    tui.keys("C-x", "o");
    await tui.waitFor("✓ Edit to take", { timeoutMs: 15_000, what: "/tasks again" });
    tui.keys("Enter");
    const taken = await tui.waitFor("✓ Changes taken", { timeoutMs: 30_000, what: "the task's actions with the outcome" });
    expect(taken).toContain("Took task");
    expect(fs.readFileSync(path.join(server.directory, "a.txt"), "utf8")).toBe("a\nfrom-the-task\n");
    expect(fs.readFileSync(path.join(server.directory, "mine.txt"), "utf8")).toBe("mine\n");
    expect(git(server.directory, "diff", "--cached", "--name-only")).toBe(""); // not staged
    expect(git(server.directory, "diff", "--name-only")).toBe("a.txt");
    expect(fs.existsSync(wtPath)).toBe(false);
    expect(git(server.directory, "branch", "--list", branch)).toBe("");
    expect(((await readTaskFile(server)).tasks as Stored[]).find((t) => t.id === ended.id)!.worktree!.removed).toBe("taken");

    // the task's actions now show it taken, and no take or discard action
    const screen = await tui.waitFor("(taken, removed)", { timeoutMs: 15_000, what: "the task's actions with the branch removed" });
    expect(screen).not.toContain("Take changes");
    expect(screen).toContain("(taken, removed)");
  });
});
