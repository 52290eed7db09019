/**
 * A worktree task (isolation: "worktree") in the REAL OpenCode TUI (1.18.33) under tmux, with both
 * halves: the sidebar names the running task's branch, and /tasks shows the ended task's branch with
 * its diff summary (its directory freed once its run was committed: only the branch holds it); then
 * "Discard worktree and branch" in /tasks: a confirm names what is lost, and once confirmed the
 * branch is gone too (checked with git), the TUI says so,
 * and the action is no longer offered. Only the model is scripted.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import { describe, expect, test } from "vitest";
import { DIST_PLUGIN, isToolFollowUp, lastUserText } from "../e2e/harness/index.js";
import { showsEndedWorktreeRow } from "./harness.js";
import { useTuiScenario } from "./vitest.js";
import { readTaskFile, until } from "../e2e/scenarios/helpers.js";
import { REQUEST_KEY } from "../../src/task-state.js";

const git = (cwd: string, ...args: string[]) => execFileSync("git", args, { cwd, encoding: "utf8" }).trim();
type Stored = { id: string; status: string; worktree?: { path: string; branch: string; removed?: string } };

const scenario = useTuiScenario({
  title: "Worktree parent",
  opencode: { plugins: [DIST_PLUGIN], files: { "a.txt": "a\n" } },
  script: (model) => {
    model.script({
      name: "launch",
      match: (r) => lastUserText(r) === "go worktree" && !isToolFollowUp(r),
      reply: {
        toolCalls: [
          { name: "background_task", arguments: { description: "Edit in a worktree", agent: "general", isolation: "worktree", prompt: "TASK-wt: edit a.txt" } },
        ],
      },
    });
    model.script({ name: "launched", match: (r) => lastUserText(r) === "go worktree" && isToolFollowUp(r), reply: { text: "Started it." } });
    // the child edits, then waits for a file the test writes (so the running state can be read first)
    model.script({
      name: "child",
      match: (r) => lastUserText(r).includes("TASK-wt") && !isToolFollowUp(r),
      reply: {
        toolCalls: [
          { name: "bash", arguments: { command: 'echo more >> a.txt; while [ ! -e "$HOME/release" ]; do sleep 0.2; done', description: "Edit and wait" } },
        ],
      },
    });
    model.script({ name: "child-done", match: (r) => lastUserText(r).includes("TASK-wt") && isToolFollowUp(r), reply: { text: "Edited a.txt." } });
    model.script({ name: "wake", match: (r) => lastUserText(r).includes("Background tasks you started have ended"), reply: { text: "Noted." } });
  },
});

describe.sequential("a worktree task in the TUI", () => {
  test("the sidebar shows the running task's branch; /tasks shows the ended task's branch, diff summary and containment", async () => {
    const { server, tui, parentID } = scenario;
    await server.client.session.promptAsync({ path: { id: parentID }, body: { parts: [{ type: "text", text: "go worktree" }] } });
    const task = await until("the task in the task file", async () => (await readTaskFile(server)).tasks[0], 30_000);
    const branch = `offshoot/${task.id}`;
    await tui.waitFor((s) => s.includes("● Edit in a worktree") && s.includes(`⎇ ${branch}`), {
      timeoutMs: 30_000,
      what: "the running task's branch in the sidebar",
    });
    // let the child finish
    fs.writeFileSync(`${server.root}/release`, "");
    await until("the task ended", async () => (await readTaskFile(server)).tasks.find((t) => t.id === task.id)?.status === "completed" || undefined, 30_000);
    tui.keys("C-x", "o");
    await tui.waitFor((s) => showsEndedWorktreeRow(s, "Edit in a worktree"), {
      timeoutMs: 30_000,
      what: "/tasks with the ended task and its branch",
    });
    tui.keys("Enter");
    // and how its child was contained (the machine has bubblewrap: CI installs it)
    await tui.waitFor((s) => s.includes(`⎇ ${branch} 1 file +1 -0 sandboxed · see`), {
      timeoutMs: 15_000,
      what: "the task's actions with its branch, diff summary and containment",
    });
  }, 150_000); // its own waits add up to 135 s on a machine loaded enough to need them (the vitest default is 60 s)

  test("discarding it from /tasks: its directory was freed already; the confirmed action removes the branch; the TUI shows it removed", async () => {
    const { server, tui } = scenario;
    tui.keys("Escape");
    await tui.waitFor((s) => !s.includes("Open child session"), { what: "the task's actions closed" });
    const ended = await until(
      "the task ended with its worktree kept",
      async () => ((await readTaskFile(server)).tasks as Stored[]).find((t) => t.status === "completed" && t.worktree && !t.worktree.removed),
      60_000,
    );
    const { path: wtPath, branch } = ended.worktree!;
    expect(fs.existsSync(wtPath)).toBe(false); // freed once its run was committed
    expect(git(server.directory, "branch", "--list", branch)).toContain(branch);

    tui.keys("C-x", "o");
    await tui.waitFor((s) => showsEndedWorktreeRow(s, "Edit in a worktree"), { timeoutMs: 30_000, what: "/tasks with the ended task" });
    tui.keys("Enter");
    await tui.waitFor("Discard worktree and branch", { timeoutMs: 15_000, what: "the discard action" });
    tui.keys("Down", "Down", "Down"); // Open child session, the branch line, Take changes, Discard worktree and branch
    tui.keys("Enter");
    await tui.waitFor((s) => s.includes('Discard "Edit in a worktree"?') && s.includes("directory was freed") && s.includes("with its commits"), {
      timeoutMs: 15_000,
      what: "the confirm naming what is lost",
    });
    // nothing is removed before the confirm
    expect(git(server.directory, "branch", "--list", branch)).toContain(branch);
    tui.keys("Enter"); // Confirm (the default button)

    // the outcome stays in the task's actions once the server shows it removed (a toast says it too,
    // for 4 s, unless the next replaces it)
    tui.keys("C-x", "o");
    await tui.waitFor("✓ Edit in a worktree", { timeoutMs: 15_000, what: "/tasks again" });
    tui.keys("Enter");
    await tui.waitFor("✓ Discarded", { timeoutMs: 30_000, what: "the task's actions with the outcome" });
    expect(fs.existsSync(wtPath)).toBe(false);
    expect(git(server.directory, "branch", "--list", branch)).toBe("");
    expect(git(server.directory, "worktree", "list", "--porcelain")).not.toContain(wtPath);
    expect(((await readTaskFile(server)).tasks as Stored[]).find((t) => t.id === ended.id)!.worktree!.removed).toBe("discarded");
    // (the request about a freed task went through its parent session, and the TUI removed it from there once answered)
    await until(
      "the request gone from the parent's metadata",
      async () => {
        const meta = ((await server.client.session.get({ path: { id: scenario.parentID } })).data as { metadata?: Record<string, unknown> }).metadata;
        return !meta?.[REQUEST_KEY] || undefined;
      },
      10_000,
    );

    // the task's actions now show the worktree removed, and no discard action
    const screen = await tui.waitFor("Open child session", { timeoutMs: 15_000, what: "the task's actions" });
    expect(screen).not.toContain("Discard worktree and branch");
  }, 150_000);
});
