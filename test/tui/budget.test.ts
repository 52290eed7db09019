/**
 * The session budget in the REAL OpenCode TUI (1.18.33) under tmux, with both halves: a task that
 * passes its parent's budget pauses after its step; in /tasks a person raises the budget ("Raise the
 * session's budget"), then "Continue" goes on with the task in place (same child session). Only the
 * model is scripted.
 */
import { describe, expect, test } from "vitest";
import { DIST_PLUGIN, getMessages, isToolFollowUp, lastUserText } from "../e2e/harness/index.js";
import { useTuiScenario } from "./vitest.js";
import { WAKE_PREFIX, readTaskFile, requestOf, until } from "../e2e/scenarios/helpers.js";

// A step already asked of the model when the pause's abort lands still counts (2,000 tokens each; two
// such steps were seen under load): the budget is large enough that one raise clears that overspend,
// or the raise would meet a new "budget reached" at once (and its toast replace the raise's).
const scenario = useTuiScenario({
  title: "Budget parent",
  opencode: { plugins: [[DIST_PLUGIN, { sessionBudgetTokens: 12000, sessionBudgetCost: 0 }]], files: { "a.txt": "a\nb\nc\n" } },
  script: (model, { server }) => {
    model.script({
      name: "launch",
      match: (r) => lastUserText(r) === "go budget" && !isToolFollowUp(r),
      reply: { toolCalls: [{ name: "background_task", arguments: { description: "Loop under budget", agent: "general", prompt: "TASK-budget: read on" } }] },
    });
    model.script({ name: "launched", match: (r) => lastUserText(r) === "go budget" && isToolFollowUp(r), reply: { text: "Started it." } });
    // the child: on "Continue…" it answers; before that it reads one more line per step, 2000 tokens a step
    let step = 0;
    model.script({
      name: "child",
      match: (r) => lastUserText(r).includes("TASK-budget") || lastUserText(r).startsWith("Continue the task where you stopped"),
      reply: (r) =>
        lastUserText(r).startsWith("Continue the task where you stopped")
          ? { text: "Finished after the raise." }
          : {
              toolCalls: [{ name: "read", arguments: { filePath: `${server.directory}/a.txt`, offset: ++step } }],
              usage: { prompt_tokens: 2000, completion_tokens: 0 },
            },
    });
    // a second task that passes the (raised) budget at its first step, to be cancelled while paused
    model.script({
      name: "launch-cancel",
      match: (r) => lastUserText(r) === "go cancel" && !isToolFollowUp(r),
      reply: { toolCalls: [{ name: "background_task", arguments: { description: "Loop to cancel", agent: "general", prompt: "TASK-cancel: read on" } }] },
    });
    model.script({ name: "launched-cancel", match: (r) => lastUserText(r) === "go cancel" && isToolFollowUp(r), reply: { text: "Started it." } });
    model.script({
      name: "child-cancel",
      match: (r) => lastUserText(r).includes("TASK-cancel"),
      reply: () => ({
        toolCalls: [{ name: "read", arguments: { filePath: `${server.directory}/a.txt` } }],
        usage: { prompt_tokens: 30000, completion_tokens: 0 },
      }),
    });
    model.script({ name: "budget-notice", match: (r) => lastUserText(r).startsWith("[background budget reached]"), reply: { text: "Noted." } });
    model.script({ name: "wake", match: (r) => lastUserText(r).startsWith(WAKE_PREFIX), reply: { text: "Noted." } });
  },
});

describe.sequential("the session budget in the TUI", () => {
  test("a paused task: raise the budget from /tasks, then Continue: it goes on in place and completes", async () => {
    const { server, tui, parentID } = scenario;
    await server.client.session.promptAsync({ path: { id: parentID }, body: { parts: [{ type: "text", text: "go budget" }] } });
    // (the parent's first turn is the host's slowest under load: each stage has its own deadline)
    await requestOf(scenario.model, "launch", 30_000);
    const paused = await until("the task paused", async () => (await readTaskFile(server)).tasks.find((t) => t.status === "paused"), 30_000);
    // waiting for a person, the same everywhere: the badge counts it as waiting, the sidebar lists it (not folded as finished)
    await tui.waitFor((s) => s.includes("⧗ 1 bg task · ⚠ 1 waiting"), { timeoutMs: 30_000, what: "the badge counting the paused task as waiting" });
    await tui.waitFor((s) => s.includes("⚠ Loop under budget") && s.includes("waits for you: see /tasks") && !s.includes("1 finished"), {
      timeoutMs: 15_000,
      what: "the sidebar listing the paused task as waiting",
    });
    tui.keys("C-x", "o");
    await tui.waitFor((s) => s.includes("⚠ Loop under budget") && s.includes("Waiting for you"), { timeoutMs: 30_000, what: "/tasks with the paused task" });
    tui.keys("Enter");
    await tui.waitFor((s) => s.includes("Raise the session's budget") && s.includes("Continue"), { timeoutMs: 15_000, what: "the paused task's actions" });
    tui.type("Raise the session's budget"); // (the filter: only that action)
    tui.keys("Enter");
    // the answer shows in the task's view, which stays open (a toast lasts seconds, and the next one replaces it)
    await tui.waitFor("✓ Budget raised", { timeoutMs: 30_000, what: "the task's view saying the budget was raised" });
    tui.type("Continue");
    tui.keys("Enter");
    await tui.waitFor("✓ Continues in place", { timeoutMs: 30_000, what: "the task's view saying it continues" });
    const done = await until(
      "the task completed",
      async () => (await readTaskFile(server)).tasks.find((t) => t.id === paused.id && t.status === "completed"),
      30_000,
    );
    expect(done.sessionID).toBe(paused.sessionID);
    const texts = JSON.stringify(await getMessages(server.client, paused.sessionID));
    expect(texts).toContain("TASK-budget: read on");
    expect(texts).toContain("Finished after the raise.");
    tui.keys("Escape");
    // the parent's turn on the task's end is over before the next test prompts it (a prompt sent
    // during that turn would be answered by it, as part of the wake)
    await requestOf(scenario.model, "wake", 30_000);
    await until("the parent idle after its wake", async () => !(await server.client.session.status()).data?.[parentID], 30_000);
  });

  test("a paused task cancelled from /tasks ends as cancelled (an abort alone could not end it), and /tasks shows it so", async () => {
    const { server, tui, parentID } = scenario;
    await server.client.session.promptAsync({ path: { id: parentID }, body: { parts: [{ type: "text", text: "go cancel" }] } });
    await requestOf(scenario.model, "launch-cancel", 30_000);
    const paused = await until(
      "the second task paused",
      async () => (await readTaskFile(server)).tasks.find((t) => t.description === "Loop to cancel" && t.status === "paused"),
      30_000,
    );
    tui.keys("C-x", "o");
    await tui.waitFor("⚠ Loop to cancel", { timeoutMs: 30_000, what: "/tasks with the paused task" });
    tui.type("to cancel"); // (the filter: only this task)
    tui.keys("Enter");
    await tui.waitFor("Cancel task", { timeoutMs: 15_000, what: "the paused task's actions" });
    tui.type("Cancel task");
    tui.keys("Enter");
    // the list follows the task to Finished, where it stays (the toast saying so can be replaced by the next)
    const row = (screen: string) => screen.split("\n").some((line) => line.includes("⊘ Loop to cancel") && line.includes("cancelled after"));
    await tui.waitFor(row, { timeoutMs: 30_000, what: "/tasks showing the task cancelled" });
    const done = await until(
      "the task cancelled",
      async () => (await readTaskFile(server)).tasks.find((t) => t.id === paused.id && t.status === "cancelled"),
      30_000,
    );
    expect(done.error).toBe("cancelled from /tasks");
    tui.keys("Escape");
  });
});
