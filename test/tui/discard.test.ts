/**
 * "Discard worktree and branch" in /tasks, in the REAL OpenCode TUI (1.18.33) under tmux, with both
 * halves: an ended worktree task offers it, a confirm names what is lost, and once confirmed the
 * worktree directory and the branch are gone (checked with git), the TUI says so, and the action is
 * no longer offered. Only the model is scripted. (Setup as in worktree.test.ts.)
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { DIST_PLUGIN, isToolFollowUp, lastUserText, printServerLogOnFailure, startOpencode, startScriptedModel, type OpencodeServer, type ScriptedModel } from "../e2e/harness/index.js";
import { startTui, type TuiSession } from "./harness.js";
import { printTuiLogOnFailure } from "./vitest.js";
import { tmuxAvailable } from "./tmux.js";
import { readTaskFile, until } from "../e2e/scenarios/helpers.js";

let model: ScriptedModel;
let server: OpencodeServer;
let tui: TuiSession;
let parentID: string;

const git = (cwd: string, ...args: string[]) => execFileSync("git", args, { cwd, encoding: "utf8" }).trim();
type Stored = { id: string; status: string; worktree?: { path: string; branch: string; removed?: string } };

printServerLogOnFailure(() => ({ server, model }));
printTuiLogOnFailure(() => tui);

beforeAll(async () => {
  if (!tmuxAvailable()) throw new Error("tmux is required for the TUI scenarios (apt-get install tmux; .ci/run installs it)");
  model = await startScriptedModel();
  model.script({
    name: "launch",
    match: (r) => lastUserText(r) === "go worktree" && !isToolFollowUp(r),
    reply: { toolCalls: [{ name: "background_task", arguments: { description: "Edit in a worktree", agent: "general", isolation: "worktree", prompt: "TASK-wt: edit a.txt" } }] },
  });
  model.script({ name: "launched", match: (r) => lastUserText(r) === "go worktree" && isToolFollowUp(r), reply: { text: "Started it." } });
  model.script({
    name: "child",
    match: (r) => lastUserText(r).includes("TASK-wt") && !isToolFollowUp(r),
    reply: { toolCalls: [{ name: "bash", arguments: { command: "echo more >> a.txt", description: "Edit" } }] },
  });
  model.script({ name: "child-done", match: (r) => lastUserText(r).includes("TASK-wt") && isToolFollowUp(r), reply: { text: "Edited a.txt." } });
  model.script({ name: "wake", match: (r) => lastUserText(r).includes("Background tasks you started have ended"), reply: { text: "Noted." } });
  server = await startOpencode({ plugins: [DIST_PLUGIN], model, files: { "a.txt": "a\n" } });
  parentID = (await server.client.session.create({ body: { title: "Discard parent" } })).data!.id;
  tui = await startTui(server, { sessionID: parentID });
  await tui.waitFor("Discard parent", { timeoutMs: 30_000, what: "the TUI to show the parent session" });
}, 90_000);

afterAll(async () => {
  tui?.kill();
  await server?.stop();
  await model?.close();
});

describe.sequential("discarding a worktree task from /tasks", () => {
  test("the confirmed action removes the worktree directory and the branch; the TUI shows it removed", async () => {
    await server.client.session.promptAsync({ path: { id: parentID }, body: { parts: [{ type: "text", text: "go worktree" }] } });
    const ended = await until(
      "the task ended with its worktree kept",
      async () => ((await readTaskFile(server)).tasks as Stored[]).find((t) => t.status === "completed" && t.worktree && !t.worktree.removed),
      60_000,
    );
    const { path: wtPath, branch } = ended.worktree!;
    expect(fs.existsSync(wtPath)).toBe(true);
    expect(git(server.directory, "branch", "--list", branch)).toContain(branch);

    tui.keys("C-x", "o");
    await tui.waitFor((s) => s.includes("✓ Edit in a worktree") && s.includes("⎇ offshoot"), { timeoutMs: 30_000, what: "/tasks with the ended task" });
    tui.keys("Enter");
    await tui.waitFor("Discard worktree and branch", { timeoutMs: 15_000, what: "the discard action" });
    tui.keys("Down", "Down"); // Open child session, the branch line, Discard worktree and branch
    tui.keys("Enter");
    await tui.waitFor((s) => s.includes("Discard \"Edit in a worktree\"?") && s.includes("with its commits"), { timeoutMs: 15_000, what: "the confirm naming what is lost" });
    // nothing is removed before the confirm
    expect(fs.existsSync(wtPath)).toBe(true);
    tui.keys("Enter"); // Confirm (the default button)

    // the toast (it wraps in its box: its first words are matched) comes once the server shows it removed
    await tui.waitFor((s) => s.includes("Discarded ") && !s.includes("NOT discarded"), { timeoutMs: 30_000, what: "the toast with the outcome" });
    expect(fs.existsSync(wtPath)).toBe(false);
    expect(git(server.directory, "branch", "--list", branch)).toBe("");
    expect(git(server.directory, "worktree", "list", "--porcelain")).not.toContain(wtPath);
    expect(((await readTaskFile(server)).tasks as Stored[]).find((t) => t.id === ended.id)!.worktree!.removed).toBe("discarded");

    // the task's actions now show the worktree removed, and no discard action
    tui.keys("C-x", "o");
    await tui.waitFor("✓ Edit in a worktree", { timeoutMs: 15_000, what: "/tasks again" });
    tui.keys("Enter");
    const screen = await tui.waitFor("Open child session", { timeoutMs: 15_000, what: "the task's actions" });
    expect(screen).not.toContain("Discard worktree and branch");
  });
});
