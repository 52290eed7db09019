/**
 * A task paused by its session's budget, as a person sees it in the TUI (src/tui/format.ts,
 * src/tui/dialog.ts): its run has not ended and it waits for a person, so the sidebar lists it
 * above the fold with ⚠, the badge counts it as waiting, the narrow bottom line names it; /tasks
 * lists it under "Waiting for you" and offers only Continue, Raise the budget, Cancel and Open (no
 * Take or Discard: the server half refuses those until it ended). Its reason is the server's own.
 */
import { describe, expect, test } from "vitest";
import { TaskStore } from "../../../src/tui/model.js";
import { createTasksDialog } from "../../../src/tui/dialog.js";
import { Loader } from "../../../src/tui/loader.js";
import { badgeText, narrowLine, sidebarLines, statusText } from "../../../src/tui/format.js";
import { childInfo, fakeApi } from "./fake-api.js";

const NOW = 100_000;
const REASON = "paused after its step: this session's background budget is reached (12k of 10k tokens charged in full (120%))";
const WORKTREE = { branch: "offshoot/bg_p1", directory: "/tmp/wt/bg_p1", changes: "1 file +1 -0" };

function setup() {
  const f = fakeApi();
  const store = new TaskStore(() => NOW);
  store.upsertSession(childInfo("ses_p1", { description: "Loop", status: "paused", startedAt: NOW - 5_000, error: REASON, worktree: WORKTREE }));
  f.route = { name: "session", params: { sessionID: "ses_parent" } };
  const dialog = createTasksDialog({ api: f.api, store, loader: new Loader(f.api, store), now: () => NOW });
  return { f, store, dialog };
}

/** The rows of a task's /tasks menu that do something (not the branch or receipt lines, not "back"). */
const actions = (f: ReturnType<typeof fakeApi>) =>
  f
    .select()
    .options.filter((o) => !["worktree", "receipt", "back"].includes(o.value))
    .map((o) => o.title);

describe("a paused task in the TUI", () => {
  test("sidebar, badge and bottom line show it as waiting for a person, never as finished", () => {
    const { store } = setup();
    const tasks = store.tasksOf("ses_parent");
    const lines = sidebarLines(tasks, NOW, { expanded: false }).map((l) => l.text);
    expect(lines[0]).toBe("⚠ Loop");
    expect(lines).toContain("  waits for you: see /tasks");
    expect(lines.some((l) => l.includes("finished"))).toBe(false);
    expect(badgeText(tasks)).toBe("⧗ 1 bg task · ⚠ 1 waiting");
    expect(narrowLine(tasks, NOW, 200)).toBe("⧗ 1 bg task · ⚠ 1 waiting: Loop (⚠ paused) · /tasks");
    expect(statusText(tasks[0]!, NOW)).toBe(`paused after 5s: ${REASON}`);
  });

  test("/tasks: under Waiting for you, with only Continue, Raise the budget, Cancel and Open", () => {
    const { f, dialog } = setup();
    dialog.openList();
    expect(f.select().options.find((o) => o.title.includes("Loop"))).toMatchObject({
      category: "Waiting for you",
      description: expect.stringContaining("waits for you"),
    });
    dialog.openTask("ses_p1");
    expect(actions(f).sort()).toEqual(["Cancel task", "Continue", "Open child session", "Raise the session's budget"]);
  });
});
