/**
 * "Take changes" on a worktree task whose branch adds files that run on their own in the checkout
 * (a git hook directory, .envrc), in the REAL OpenCode TUI (1.18.33) under tmux: the agent's take
 * was refused with the list (src/manager/take.ts); a person reads the same list first in the
 * confirmation, and once confirmed the files are in the working tree. Only the model is scripted.
 */
import fs from "node:fs";
import path from "node:path";
import { describe, expect, test } from "vitest";
import { DIST_PLUGIN, isToolFollowUp, lastUserText } from "../e2e/harness/index.js";
import { showsEndedWorktreeRow } from "./harness.js";
import { useTuiScenario } from "./vitest.js";
import { readTaskFile, until } from "../e2e/scenarios/helpers.js";

type Stored = { id: string; status: string; worktree?: { removed?: string; changes?: { runs?: string[] } } };

const scenario = useTuiScenario({
  title: "Runs parent",
  opencode: { plugins: [DIST_PLUGIN], files: { "a.txt": "a\n" } },
  script: (model) => {
    model.script({
      name: "launch",
      match: (r) => lastUserText(r) === "go hooks" && !isToolFollowUp(r),
      reply: {
        toolCalls: [
          { name: "background_task", arguments: { description: "Add hooks", agent: "general", isolation: "worktree", prompt: "TASK-hooks: add hooks" } },
        ],
      },
    });
    model.script({ name: "launched", match: (r) => lastUserText(r) === "go hooks" && isToolFollowUp(r), reply: { text: "Started it." } });
    model.script({
      name: "child",
      match: (r) => lastUserText(r).includes("TASK-hooks") && !isToolFollowUp(r),
      reply: {
        toolCalls: [
          {
            name: "bash",
            arguments: { command: "mkdir -p .husky && echo 'npm test' > .husky/pre-commit && echo 'export X=1' > .envrc", description: "Hooks" },
          },
        ],
      },
    });
    model.script({ name: "child-done", match: (r) => lastUserText(r).includes("TASK-hooks") && isToolFollowUp(r), reply: { text: "Added." } });
    model.script({ name: "wake", match: (r) => lastUserText(r).includes("Background tasks you started have ended"), reply: { text: "Noted." } });
  },
});

describe("taking a branch that changes files which run on their own, from /tasks", () => {
  test("the confirmation lists them first; the confirmed take writes them", async () => {
    const { server, tui, parentID } = scenario;
    await server.client.session.promptAsync({ path: { id: parentID }, body: { parts: [{ type: "text", text: "go hooks" }] } });
    const ended = await until(
      "the task ended, its branch's files that run on their own recorded",
      async () => ((await readTaskFile(server)).tasks as Stored[]).find((t) => t.status === "completed" && t.worktree?.changes?.runs?.length === 2),
      120_000,
    );

    tui.keys("C-x", "o");
    await tui.waitFor((s) => showsEndedWorktreeRow(s, "Add hooks"), { timeoutMs: 30_000, what: "/tasks with the ended task" });
    tui.keys("Enter");
    await tui.waitFor("Take changes", { timeoutMs: 15_000, what: "the take action" });
    tui.keys("Down", "Down");
    tui.keys("Enter");
    const confirm = await tui.waitFor((s) => s.includes('Take "Add hooks"?') && s.includes("run on their own"), {
      timeoutMs: 15_000,
      what: "the confirmation with the list",
    });
    // (the dialog wraps its lines: fragments that fit one)
    expect(confirm).toContain("agent cannot take it; you can, once you have read them:");
    expect(confirm).toContain("- .envrc: direnv runs it");
    expect(confirm).toContain("- .husky/pre-commit: a git hook directory (.husky/):");
    expect(fs.existsSync(path.join(server.directory, ".envrc"))).toBe(false);
    tui.keys("Enter"); // Confirm

    await until("taken", async () => ((await readTaskFile(server)).tasks as Stored[]).find((t) => t.id === ended.id)!.worktree!.removed === "taken", 30_000);
    expect(fs.readFileSync(path.join(server.directory, ".envrc"), "utf8")).toBe("export X=1\n");
    expect(fs.readFileSync(path.join(server.directory, ".husky/pre-commit"), "utf8")).toBe("npm test\n");
  }, 180_000);
});
