/**
 * What background work costs, where users look: both halves in the REAL OpenCode TUI (1.18.33)
 * under tmux. The parent launches a task on mock/other-model; both models have a price here, so
 * the parent's own turns and the child's steps cost money. The sidebar shows the tasks' total and
 * the session's own cost plus its tasks' (OpenCode's own sidebar total leaves the children out);
 * the narrow-terminal line shows the total too; /tasks names the task's model. Only the model is
 * scripted.
 */
import fs from "node:fs";
import path from "node:path";
import { describe, expect, test } from "vitest";
import { DIST_PLUGIN, isToolFollowUp, lastUserText } from "../e2e/harness/index.js";
import { useTuiScenario } from "./vitest.js";

let gate: string;

/** The sidebar column (right of the transcript), one line per screen row, trimmed. */
function sidebar(screen: string): string[] {
  return screen.split("\n").map((l) => l.slice(150).trim());
}

// $1000 per million tokens on mock-model (the parent's), $2000 on other-model (the child's): each
// parent request below costs $0.20 (100 in, 100 out), each child step $3.00 (1000 in, 500 out).
const PARENT_USAGE = { prompt_tokens: 100, completion_tokens: 100 };
const CHILD_USAGE = { prompt_tokens: 1000, completion_tokens: 500 };

const scenario = useTuiScenario({
  title: "Cost of the work",
  opencode: {
    plugins: [DIST_PLUGIN],
    config: {
      provider: { mock: { models: { "mock-model": { cost: { input: 1000, output: 1000 } }, "other-model": { cost: { input: 2000, output: 2000 } } } } },
    },
  },
  script: (model, { server }) => {
    gate = path.join(server.directory, "go.flag");
    model.script({
      name: "launch",
      match: (r) => lastUserText(r) === "go cost" && !isToolFollowUp(r),
      reply: {
        toolCalls: [
          { name: "background_task", arguments: { description: "Priced survey", agent: "general", model: "mock/other-model", prompt: "TASK-cost: survey." } },
        ],
        usage: PARENT_USAGE,
      },
    });
    model.script({
      name: "launched",
      match: (r) => lastUserText(r) === "go cost" && isToolFollowUp(r),
      reply: { text: "Started the survey.", usage: PARENT_USAGE },
    });
    // the child: a quick first step, then a step that waits (in bash) until the test opens the gate,
    // so the first step's usage shows while it runs; then its answer. Each step costs $3.00.
    const toolResults = (r: { messages: { role: string }[] }) => r.messages.filter((m) => m.role === "tool").length;
    model.script({
      name: "child",
      match: (r) => lastUserText(r).includes("TASK-cost"),
      reply: (r) =>
        toolResults(r) === 0
          ? { toolCalls: [{ name: "bash", arguments: { command: "echo first", description: "First look" } }], usage: CHILD_USAGE }
          : toolResults(r) === 1
            ? {
                toolCalls: [
                  { name: "bash", arguments: { command: `while [ ! -f '${gate}' ]; do sleep 0.2; done; echo opened`, description: "Wait for gate" } },
                ],
                usage: CHILD_USAGE,
              }
            : { text: "Survey done.", usage: CHILD_USAGE },
    });
    model.script({
      name: "wake",
      match: (r) => lastUserText(r).startsWith("Background tasks you started have ended:"),
      reply: { text: "Noted the survey.", usage: PARENT_USAGE },
    });
  },
});

describe.sequential("cost where users look", () => {
  test("while the task runs: the sidebar shows its total, the combined line and its model; the narrow line the total", async () => {
    const { server, tui, parentID } = scenario;
    await server.client.session.promptAsync({ path: { id: parentID }, body: { parts: [{ type: "text", text: "go cost" }] } });
    // its first step ($3.00) is done, it waits in its second; the parent's two requests cost $0.40
    const screen = await tui.waitFor((s) => s.includes("bash Wait for gate") && s.includes("session $0.40 + tasks $3.00 = $3.40"), {
      timeoutMs: 30_000,
      what: "the running task and the combined line",
    });
    const side = sidebar(screen);
    const at = side.indexOf("Background tasks");
    expect(at).toBeGreaterThan(-1);
    expect(side.slice(at + 1, at + 7)).toEqual([
      "all tasks: 1.5k tok · $3.00",
      "session $0.40 + tasks $3.00 = $3.40",
      "● Priced survey",
      side[at + 4], // running 12s · bash Wait for gate
      "mock/other-model",
      "1.5k tok · $3.00",
    ]);
    expect(side[at + 4]).toMatch(/^running \d+s · bash Wait for gate$/);
    // OpenCode's own figure for the session (under the prompt) is its own cost only; it follows its own
    // events, so it may show the parent's second request a moment after our sidebar does
    await tui.waitFor(/\(0%\) · \$0\.40/, { what: "OpenCode's own figure at $0.40" });
    tui.keys("C-x", "b"); // the sidebar hidden: the line under the app takes over
    await tui.waitFor(/⧗ 1 bg task: Priced survey \(bash \d+s\) · all tasks: 1\.5k tok · \$3\.00 · \/tasks/, {
      what: "the narrow line with the background total",
    });
    tui.keys("C-x", "b");
    await tui.waitFor("session $0.40 + tasks $3.00 = $3.40", { what: "the sidebar back" });
    tui.keys("C-x", "o");
    // (the list's description: status, then the model, then the usage, as far as the dialog's width allows)
    await tui.waitFor(/● Priced survey\s+running \d+s · bash Wait for gate · m/, { what: "/tasks with the task" });
    tui.keys("Escape");
    await tui.waitFor((s) => !s.includes("Filter tasks"), { what: "the list closed" });
  });

  test("once it ended: the tasks' total and the session's own cost plus its tasks' stay in the sidebar", async () => {
    const { tui } = scenario;
    fs.writeFileSync(gate, "");
    // three child steps ($9.00) and three parent requests (launch, after the launch, the wake-up: $0.60)
    const screen = await tui.waitFor((s) => s.includes("session $0.60 + tasks $9.00 = $9.60") && s.includes("▶ 1 finished"), {
      timeoutMs: 30_000,
      what: "the combined line",
    });
    const side = sidebar(screen);
    const at = side.indexOf("Background tasks");
    expect(at).toBeGreaterThan(-1);
    expect(side.slice(at + 1, at + 4)).toEqual(["all tasks: 4.5k tok · $9.00", "session $0.60 + tasks $9.00 = $9.60", "▶ 1 finished"]);
    // OpenCode's own figure (under the prompt) catches up with the wake's request a moment later: the
    // session's own cost, without its tasks
    const own = await tui.waitFor(/\(0%\) · \$0\.60/, { what: "OpenCode's own figure at $0.60" });
    expect(own).not.toMatch(/\(0%\) · \$9\.60/);
  });
});
