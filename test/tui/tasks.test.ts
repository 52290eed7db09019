/**
 * The TUI half in the REAL OpenCode TUI (1.18.33) under tmux, attached to a real `opencode
 * serve` with a scripted model. The server half is stood in for by FakeServerHalf, which writes
 * the session metadata the two halves agree on; the child sessions and their agent loops,
 * tool calls, permission requests and aborts are real. Assertions read the screen.
 */
import { beforeAll, describe, expect, test } from "vitest";
import { isToolFollowUp, lastUserText } from "../e2e/harness/index.js";
import { useTuiScenario } from "./vitest.js";
import { inOrder } from "./tmux.js";
import { FakeServerHalf } from "./contract.js";

const LONG = "run the long check";
const ASK = "run the guarded command";

/** The sidebar column (right of the transcript), one line per screen row, trimmed. */
function sidebar(screen: string): string[] {
  return screen.split("\n").map((l) => l.slice(150).trim());
}

const scenario = useTuiScenario({
  title: "Parent of the tasks",
  opencode: {
    plugins: [],
    config: { agent: { asker: { mode: "subagent", description: "asks before bash", permission: { bash: "ask" } } } },
  },
  events: true,
  // The /tasks key set through the plugin's options in tui.json (the default, ctrl+x o, is used
  // by with-server.test.ts).
  tui: { options: { keybind: "<leader>k" } },
  script: (model) => {
    // A long-running bash call keeps a child busy; the "asker" agent must ask before bash.
    model.script({
      name: "long",
      match: (r) => lastUserText(r) === LONG && !isToolFollowUp(r),
      reply: { toolCalls: [{ name: "bash", arguments: { command: "sleep 600", description: "Wait" } }] },
    });
    model.script({
      name: "ask",
      match: (r) => lastUserText(r) === ASK && !isToolFollowUp(r),
      reply: { toolCalls: [{ name: "bash", arguments: { command: "echo guarded-ok", description: "Guarded" } }] },
    });
    model.script({ name: "ask-done", match: (r) => lastUserText(r) === ASK && isToolFollowUp(r), reply: { text: "The guarded command printed guarded-ok." } });
  },
});

let half: FakeServerHalf;
beforeAll(() => {
  half = new FakeServerHalf(scenario.server);
});

describe.sequential("background tasks in the real TUI", () => {
  test("a session without tasks shows no section and no badge (as when the server half is absent)", async () => {
    const { tui } = scenario;
    const screen = await tui.waitFor("LSP", { what: "the sidebar" });
    expect(screen).not.toContain("Background tasks");
    expect(screen).not.toContain("bg task");
  });

  let longID: string;
  test("a running task appears in the sidebar with its last tool, and the badge counts it", async () => {
    const { tui, parentID } = scenario;
    const t = await half.createTask(parentID, { description: "Check the flaky suite" });
    longID = t.id;
    await half.prompt(longID, LONG);
    const screen = await tui.waitFor((s) => s.includes("bash Wait") && s.includes("⧗ 1 bg task"), { what: "sidebar line with the last tool, and the badge" });
    const side = sidebar(screen);
    const at = side.indexOf("Background tasks");
    expect(at).toBeGreaterThan(-1);
    expect(side[at + 1]).toBe("● Check the flaky suite");
    expect(side[at + 2]).toMatch(/^running \d+s · bash Wait$/);
  });

  test("/tasks lists the task; the child opens, and the list inside it leads back to the parent", async () => {
    const { tui } = scenario;
    tui.type("/tasks");
    await tui.waitFor("List this session's background tasks", { what: "the /tasks autocomplete entry" });
    tui.keys("Enter");
    await tui.waitFor((s) => s.includes("Filter tasks") && /● Check the flaky suite\s+running/.test(s), { what: "the /tasks list" });
    tui.keys("Enter");
    await tui.waitFor("Open child session", { what: "the task's actions" });
    tui.keys("Enter");
    // The child's own view: its transcript and the host's subagent bar; our line names the task.
    let screen = await tui.waitFor((s) => s.includes(LONG) && s.includes("Subagent"), { what: "the child session" });
    screen = await tui.waitFor(/bg task "Check the flaky suite" · running \d+s · bash Wait · ctrl\+x k tasks/, {
      what: "the line naming the task inside the child",
    });
    expect(screen).not.toContain("Filter tasks");
    tui.keys("C-x", "k");
    await tui.waitFor("↑ Back to the parent session", { what: "/tasks inside the child (the configured key)" });
    tui.keys("Enter");
    screen = await tui.waitFor((s) => s.includes("Parent of the tasks") && s.includes("Background tasks") && !s.includes("Subagent ("), {
      what: "back in the parent",
    });
  });

  let askID: string;
  test("a task waiting for a permission is marked, and the permission is answered from the list", async () => {
    const { tui, parentID, ev } = scenario;
    const t = await half.createTask(parentID, { description: "Run the guarded step", agent: "asker" });
    askID = t.id;
    const since = ev.mark();
    await half.prompt(askID, ASK, "asker");
    const asked = await ev.waitFor((e) => e.type === "permission.asked" && e.properties.sessionID === askID, 20_000, { since });
    await half.update(askID, { permission: { id: asked.properties.id, permission: "bash", patterns: asked.properties.patterns } });
    let screen = await tui.waitFor((s) => s.includes("⚠ Run the guarded step") && s.includes("asks bash: echo guarded-ok"), { what: "the permission marker" });
    // The toast names the task (the host's own permission prompt, which now replaces the
    // parent's input and with it the badge, does not).
    expect(screen).toContain('"Run the guarded step" asks for bash: echo guarded-ok');
    tui.keys("C-x", "k");
    // In the list (title and description on one line), the waiting task comes first.
    await tui.waitFor((s) => inOrder(s, "⚠ Run the guarded step waits for bash: echo", "● Check the flaky suite running"), {
      what: "the waiting task first in /tasks",
    });
    tui.keys("Enter");
    await tui.waitFor("Answer permission", { what: "the task's actions" });
    tui.keys("Enter");
    await tui.waitFor('"Run the guarded step" asks: bash: echo guarded-ok', { what: "the permission choices" });
    tui.keys("Enter"); // Allow once
    const replied = await ev.waitFor((e) => e.type === "permission.replied" && e.properties.sessionID === askID, 15_000, { since });
    expect(replied.properties.reply).toBe("once");
    // The command ran in the child, and the marker is gone.
    await ev.waitFor(
      (e) =>
        e.type === "message.part.updated" &&
        e.properties.part?.sessionID === askID &&
        e.properties.part?.state?.status === "completed" &&
        String(e.properties.part?.state?.output).includes("guarded-ok"),
      15_000,
      { since },
    );
    await half.update(askID, { permission: undefined, status: "completed", completedAt: Date.now() });
    await tui.waitFor((s) => s.includes("Filter tasks") && /● Check the flaky suite\s+running/.test(s), { what: "the list again after answering" });
    tui.keys("Escape");
    await tui.waitGone("Filter tasks");
    screen = await tui.waitFor((s) => s.includes("▶ 1 finished") && !s.includes("⚠ Run the guarded step"), { what: "the answered task under finished" });
    await tui.waitFor("⧗ 1 bg task", { what: "the badge back next to the restored prompt" });
  });

  test("cancel from the list asks the server half, which aborts the child; the ended task folds under finished and can show its result", async () => {
    const { tui, ev } = scenario;
    const since = ev.mark();
    tui.keys("C-x", "k");
    await tui.waitFor("Filter tasks", { what: "/tasks" });
    tui.type("flaky");
    await tui.waitFor((s) => s.includes("● Check the flaky suite") && !/Run the guarded step\s+completed/.test(s), { what: "the filtered list" });
    tui.keys("Enter");
    await tui.waitFor("Cancel task", { what: "the task's actions" });
    tui.type("Cancel");
    tui.keys("Enter");
    // the list, reopened, says the cancel is under way (and keeps saying so until the server half answers)
    await tui.waitFor(/● Check the flaky suite\s+… Cancelling · running/, { what: "the list line saying it is being cancelled" });
    // The TUI asks the server half (a request in the child's metadata); the stand-in does what the
    // server half does: aborts the child (its running bash call ends with an error), then writes the
    // task cancelled with the answer to that request. The list, reopened after the cancel, follows.
    const asked = await ev.waitFor(
      (e) => e.type === "session.updated" && e.properties.info?.id === longID && e.properties.info?.metadata?.offshootRequest?.kind === "cancel",
      15_000,
      { since },
    );
    await half.abort(longID);
    await ev.waitFor((e) => e.type === "session.error" && e.properties.sessionID === longID && e.properties.error?.name === "MessageAbortedError", 15_000, {
      since,
    });
    const answered = { id: asked.properties.info.metadata.offshootRequest.id, message: "task cancelled" };
    await half.update(longID, { status: "cancelled", completedAt: Date.now(), answered });
    // (a toast says `Cancelled "Check the flaky suite".` too; what stays is the list's line)
    const screen = await tui.waitFor((s) => /⊘ Check the flaky suite\s+cancelled/.test(s) && s.includes("▶ 2 finished") && !s.includes("bg task"), {
      what: "the cancelled task under Finished in the open list, both folded in the sidebar, no badge",
    });
    expect(screen).toMatch(/✓ Run the guarded step\s+completed/);
    tui.type("guarded");
    await tui.waitFor((s) => !s.includes("⊘ Check the flaky suite"), { what: "the filtered list" });
    tui.keys("Enter");
    await tui.waitFor("Show result", { what: "actions of a finished task" });
    tui.type("result");
    tui.keys("Enter");
    await tui.waitFor("The guarded command printed guarded-ok.", { what: "the child's answer" });
    tui.keys("Enter");
    tui.keys("Escape");
    await tui.waitGone("The guarded command printed");
  });

  test("with the sidebar hidden (ctrl+x b) or on a terminal too narrow for it, one line names the running tasks", async () => {
    const { tui, parentID } = scenario;
    const t = await half.createTask(parentID, { description: "Narrow check" });
    await half.prompt(t.id, LONG);
    await tui.waitFor("● Narrow check", { what: "the task in the sidebar" });
    tui.resize(110, 40);
    // (the earlier tasks of this session reported usage: the line ends with their total)
    const screen = await tui.waitFor(/⧗ 1 bg task: Narrow check \(bash \d+s\) · all tasks: \d+ tok · \/tasks/, { what: "the narrow line" });
    expect(screen).not.toContain("LSPs are disabled");
    tui.resize(200, 50);
    await tui.waitFor((s) => s.includes("LSPs are disabled") && !s.includes("⧗ 1 bg task: Narrow check"), { what: "the sidebar back, the line gone" });
    tui.keys("C-x", "b");
    await tui.waitFor((s) => !s.includes("LSPs are disabled") && /⧗ 1 bg task: Narrow check \(bash \d+s\) · all tasks: \d+ tok · \/tasks/.test(s), {
      what: "the line with the sidebar hidden",
    });
    tui.keys("C-x", "b");
    await tui.waitFor((s) => s.includes("LSPs are disabled") && !s.includes("⧗ 1 bg task: Narrow check"), { what: "the sidebar shown again, the line gone" });
  });
});
