/**
 * A task whose child asks the user a question (OpenCode's `question` tool), both halves in the REAL
 * OpenCode TUI (1.18.33) under tmux: the server half launches the task from the model's
 * background_task call and publishes the question; the TUI half marks the task and answers the
 * question from /tasks. Only the model is scripted.
 */
import { describe, expect, test } from "vitest";
import { DIST_PLUGIN, isToolFollowUp, lastUserText, toolResult } from "../e2e/harness/index.js";
import { useTuiScenario } from "./vitest.js";

const QUESTION = "Which database should I use?";
const PICK = "Which checks should run?";

const scenario = useTuiScenario({
  title: "Questions parent",
  opencode: { plugins: [DIST_PLUGIN] },
  events: true,
  script: (model) => {
    model.script({
      name: "launch",
      match: (r) => lastUserText(r) === "go ask" && !isToolFollowUp(r),
      reply: {
        toolCalls: [{ name: "background_task", arguments: { description: "Choose the database", agent: "build", prompt: "TASK-ask: choose a database." } }],
      },
    });
    model.script({ name: "launched", match: (r) => lastUserText(r) === "go ask" && isToolFollowUp(r), reply: { text: "Started the choice." } });
    model.script({
      name: "child-ask",
      match: (r) => lastUserText(r).includes("TASK-ask") && !isToolFollowUp(r),
      reply: {
        toolCalls: [
          {
            name: "question",
            arguments: {
              questions: [
                {
                  question: QUESTION,
                  header: "Database",
                  options: [
                    { label: "PostgreSQL", description: "a server" },
                    { label: "SQLite", description: "a file" },
                  ],
                },
              ],
            },
          },
        ],
      },
    });
    model.script({
      name: "child-done",
      match: (r) => lastUserText(r).includes("TASK-ask") && isToolFollowUp(r),
      reply: (r) => ({ text: `Chosen: ${toolResult(r, "question")?.content.includes('"="MySQL we run"') ? "MySQL" : "unknown"}.` }),
    });
    // A multi-choice question: several options picked from /tasks by typing them. (OpenCode 1.18.33's
    // question tool takes no `custom` from the model: such a question always allows a typed answer.)
    model.script({
      name: "launch-pick",
      match: (r) => lastUserText(r) === "go pick" && !isToolFollowUp(r),
      reply: {
        toolCalls: [{ name: "background_task", arguments: { description: "Pick the checks", agent: "build", prompt: "TASK-pick: pick the checks." } }],
      },
    });
    model.script({ name: "launched-pick", match: (r) => lastUserText(r) === "go pick" && isToolFollowUp(r), reply: { text: "Started the pick." } });
    model.script({
      name: "child-pick",
      match: (r) => lastUserText(r).includes("TASK-pick") && !isToolFollowUp(r),
      reply: {
        toolCalls: [
          {
            name: "question",
            arguments: {
              questions: [
                {
                  question: PICK,
                  header: "Checks",
                  options: [
                    { label: "lint", description: "style" },
                    { label: "test", description: "unit tests" },
                    { label: "build", description: "tsup" },
                  ],
                  multiple: true,
                },
              ],
            },
          },
        ],
      },
    });
    model.script({ name: "child-picked", match: (r) => lastUserText(r).includes("TASK-pick") && isToolFollowUp(r), reply: { text: "Picked." } });
    model.script({ name: "wake", match: (r) => lastUserText(r).startsWith("Background tasks you started have ended:"), reply: { text: "Noted." } });
  },
});

describe.sequential("a task that asks, in the TUI", () => {
  test("the waiting task is marked with its question, and a typed answer from /tasks reaches the child, which finishes with it", async () => {
    const { server, tui, parentID, ev } = scenario;
    const since = ev.mark();
    await server.client.session.promptAsync({ path: { id: parentID }, body: { parts: [{ type: "text", text: "go ask" }] } });
    // The sidebar marks the task with its question (cut to the sidebar's width). (Our toast naming
    // the task is not checked here: the server half's "started" toast may replace it at once.)
    await tui.waitFor(
      (s) => s.includes("⚠ Choose the database") && s.includes('asks "Which database should I use…') && s.includes("running") && s.includes("· question"),
      {
        timeoutMs: 30_000,
        what: "the waiting task in the sidebar",
      },
    );
    tui.keys("C-x", "o");
    await tui.waitFor(`⚠ Choose the database asks "Which database`, { what: "the waiting task in /tasks" });
    tui.keys("Enter");
    await tui.waitFor("Answer question", { what: "the task's actions" });
    tui.keys("Enter");
    await tui.waitFor((s) => s.includes(`"Choose the database" asks: Which database`) && s.includes("SQLite a file") && s.includes("Type your own answer"), {
      what: "the question's options",
    });
    tui.type("Type your");
    tui.keys("Enter");
    await tui.waitFor("Your answer", { what: "the typed-answer prompt" });
    tui.type("MySQL we run");
    tui.keys("Enter");
    const replied = await ev.waitFor((e) => e.type === "question.replied", 15_000, { since });
    expect(replied.properties.answers).toEqual([["MySQL we run"]]);
    // The child went on with the answer and finished; the server half ended the task.
    await tui.waitFor((s) => s.includes("▶ 1 finished") && !s.includes("⚠ Choose the database"), { timeoutMs: 30_000, what: "the task finished" });
    const child = (await server.client.session.children({ path: { id: parentID } })).data!.find((c) => c.title.includes("Choose the database"))!;
    const messages = (await server.client.session.messages({ path: { id: child.id } })).data!;
    const last = messages.filter((m) => m.info.role === "assistant").at(-1)!;
    expect(last.parts.some((p) => p.type === "text" && p.text === "Chosen: MySQL.")).toBe(true);
  });

  test('a multi-choice question gets several options from /tasks by typing "lint, build" (the rule background_output uses), not one typed answer', async () => {
    const { server, tui, parentID, ev } = scenario;
    const since = ev.mark();
    await server.client.session.promptAsync({ path: { id: parentID }, body: { parts: [{ type: "text", text: "go pick" }] } });
    await tui.waitFor((s) => s.includes("⚠ Pick the checks") && s.includes("· question"), { timeoutMs: 30_000, what: "the waiting task in the sidebar" });
    tui.keys("C-x", "o");
    await tui.waitFor(`⚠ Pick the checks asks "Which checks`, { what: "the waiting task in /tasks" });
    tui.type("Pick the checks");
    tui.keys("Enter");
    await tui.waitFor("Answer question", { what: "the task's actions" });
    tui.keys("Enter");
    await tui.waitFor((s) => s.includes(`"Pick the checks" asks: Which checks`) && s.includes('or several options: "A, B"'), {
      what: "the question's options, with the typed entry that takes several",
    });
    tui.type("Type your");
    tui.keys("Enter");
    await tui.waitFor("Your answer", { what: "the typed-answer prompt" });
    tui.type("lint, build");
    tui.keys("Enter");
    const replied = await ev.waitFor((e) => e.type === "question.replied", 15_000, { since });
    expect(replied.properties.answers).toEqual([["lint", "build"]]);
    await tui.waitFor((s) => s.includes("▶ 2 finished") && !s.includes("⚠ Pick the checks"), { timeoutMs: 30_000, what: "the task finished" });
  });
});
