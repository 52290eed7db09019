/**
 * A queued task in the REAL OpenCode TUI (1.18.33) under tmux, with the server half at concurrency 1:
 * the queued launch returns before its child exists; the child is made right after, and the TUI
 * shows the task as queued (◷) until the running one ends, then as running. Only the model is scripted.
 */
import { describe, test } from "vitest";
import { DIST_PLUGIN, isToolFollowUp, lastUserText } from "../e2e/harness/index.js";
import { useTuiScenario } from "./vitest.js";

const scenario = useTuiScenario({
  title: "Queue on screen",
  opencode: { plugins: [[DIST_PLUGIN, { concurrency: 1 }]] },
  script: (model) => {
    const launch = (description: string, key: string) => ({
      name: "background_task",
      arguments: { description, agent: "general", prompt: `TASK-${key}: do the work.` },
    });
    model.script({
      name: "launch",
      match: (r) => lastUserText(r) === "go" && !isToolFollowUp(r),
      reply: { toolCalls: [launch("Long first job", "first"), launch("Waiting second job", "second")] },
    });
    model.script({ name: "launched", match: (r) => lastUserText(r) === "go" && isToolFollowUp(r), reply: { text: "Both launched." } });
    model.script({ name: "first", match: (r) => lastUserText(r).includes("TASK-first") && !isToolFollowUp(r), reply: { text: "First done.", delayMs: 6_000 } });
    model.script({
      name: "second",
      match: (r) => lastUserText(r).includes("TASK-second") && !isToolFollowUp(r),
      reply: { text: "Second done.", delayMs: 60_000 },
    });
    model.script({ name: "wake", match: (r) => lastUserText(r).startsWith("Background tasks you started have ended"), reply: { text: "noted" } });
  },
});

describe.sequential("a queued task on screen", () => {
  test("shows as queued (◷) beside the running one, then runs when the first ends", async () => {
    const { server, tui, parentID } = scenario;
    await server.client.session.promptAsync({ path: { id: parentID }, body: { parts: [{ type: "text", text: "go" }] } });
    await tui.waitFor((s) => s.includes("● Long first job") && s.includes("◷ Waiting second job") && /queued \d+s/.test(s), {
      timeoutMs: 30_000,
      what: "the running task and the queued one in the sidebar",
    });
    await tui.waitFor((s) => s.includes("● Waiting second job") && !s.includes("◷") && s.includes("▶ 1 finished"), {
      timeoutMs: 30_000,
      what: "the queued task running after the first ended",
    });
  });
});
