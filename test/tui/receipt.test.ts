/**
 * The fork receipt and cache reads apart, where users look: both halves in the REAL OpenCode TUI
 * (1.18.33) under tmux. The scripted model simulates a provider's prefix cache (per model) and
 * reports prompt tokens as chars / 4. The parent launches a native fork; its child's first request
 * reads the parent's prompt from the cache: once that step ended, the sidebar shows the receipt under the running task and
 * the tokens charged in full apart from those read from the cache; /tasks shows the receipt with what
 * it means; once it ended, the sidebar's total says what background_list's total says. Only the
 * model is scripted.
 */
import fs from "node:fs";
import path from "node:path";
import { describe, expect, test } from "vitest";
import { DIST_PLUGIN, getMessages, isToolFollowUp, lastUserText } from "../e2e/harness/index.js";
import { useTuiScenario } from "./vitest.js";

let gate: string;

/** The sidebar column (right of the transcript), one line per screen row, trimmed. */
function sidebar(screen: string): string[] {
  return screen.split("\n").map((l) => l.slice(150).trim());
}

const RECEIPT = /^⚠? ?fork cache [\d.]+k of [\d.]+k \((\d+)%\)$/;

const scenario = useTuiScenario({
  title: "Receipt of the fork",
  model: { promptTokens: "estimate", prefixCache: true },
  opencode: { plugins: [DIST_PLUGIN] },
  script: (model, { server }) => {
    gate = path.join(server.directory, "go.flag");
    model.script({
      name: "launch",
      match: (r) => lastUserText(r) === "go receipt" && !isToolFollowUp(r),
      reply: { toolCalls: [{ name: "background_task", arguments: { description: "Forked survey", fork: true, prompt: "TASK-receipt: survey." } }] },
    });
    model.script({ name: "launched", match: (r) => lastUserText(r) === "go receipt" && isToolFollowUp(r), reply: { text: "Started the fork." } });
    // the child: a quick first step (its usage, and so its receipt, is reported once the step ends),
    // then a step that waits (in bash) until the test opens the gate, so the receipt shows while it runs
    const toolResults = (r: { messages: { role: string }[] }) => r.messages.filter((m) => m.role === "tool").length;
    model.script({
      name: "child",
      match: (r) => lastUserText(r).includes("TASK-receipt"),
      reply: (r) =>
        toolResults(r) === 0
          ? { toolCalls: [{ name: "bash", arguments: { command: "echo first", description: "First look" } }] }
          : toolResults(r) === 1
            ? {
                toolCalls: [
                  { name: "bash", arguments: { command: `while [ ! -f '${gate}' ]; do sleep 0.2; done; echo opened`, description: "Wait for gate" } },
                ],
              }
            : { text: "Survey done." },
    });
    model.script({ name: "wake", match: (r) => lastUserText(r).startsWith("Background tasks you started have ended:"), reply: { text: "Noted the fork." } });
    model.script({
      name: "list",
      match: (r) => lastUserText(r) === "list receipt" && !isToolFollowUp(r),
      reply: { toolCalls: [{ name: "background_list", arguments: {} }] },
    });
    model.script({ name: "listed", match: (r) => lastUserText(r) === "list receipt" && isToolFollowUp(r), reply: { text: "Listed." } });
  },
});

describe.sequential("the fork receipt where users look", () => {
  test("while the fork runs: the sidebar shows its receipt (about 99%) and its cache reads apart; /tasks shows what it means", async () => {
    const { server, tui, parentID } = scenario;
    await server.client.session.promptAsync({ path: { id: parentID }, body: { parts: [{ type: "text", text: "go receipt" }] } });
    const screen = await tui.waitFor((s) => s.includes("bash Wait for gate") && sidebar(s).some((l) => RECEIPT.test(l)), {
      timeoutMs: 30_000,
      what: "the running fork with its receipt",
    });
    const side = sidebar(screen);
    const receipt = side.find((l) => RECEIPT.test(l))!;
    expect(receipt.startsWith("⚠")).toBe(false);
    expect(Number(RECEIPT.exec(receipt)![1])).toBeGreaterThanOrEqual(90);
    // the task's usage: tokens charged in full, then those read from the cache, apart
    expect(side).toContainEqual(expect.stringMatching(/^[\d.]+k? tok \+ [\d.]+k cached$/));
    expect(side).toContainEqual(expect.stringMatching(/^all tasks: [\d.]+k? tok \+ [\d.]+k cached$/));

    tui.keys("C-x", "o");
    await tui.waitFor((s) => s.includes("Filter tasks") && /● Forked survey\s+running/.test(s), { what: "/tasks with the fork" });
    tui.keys("Enter");
    await tui.waitFor(/fork cache [\d.]+k of [\d.]+k \((9\d|100)%\) your context, cached/, { what: "the receipt in the task's actions" });
    tui.keys("Escape");
    await tui.waitFor((s) => !s.includes("your context, cached"), { what: "the dialog closed" });
  });

  test("once it ended: the sidebar's total of tokens charged and read from the cache is background_list's", async () => {
    const { server, tui, parentID } = scenario;
    fs.writeFileSync(gate, "");
    await tui.waitFor("▶ 1 finished", { timeoutMs: 30_000, what: "the fork finished" });
    // the parent is woken once and answers; then it lists its tasks in a turn of its own
    await tui.waitFor("Noted the fork.", { timeoutMs: 30_000, what: "the parent's answer to its wake" });
    await server.client.session.promptAsync({ path: { id: parentID }, body: { parts: [{ type: "text", text: "list receipt" }] } });
    await tui.waitFor("Listed.", { timeoutMs: 30_000, what: "the list's turn" });
    const listed = (await getMessages(server.client, parentID))
      .flatMap((m) => m.parts)
      .flatMap((p) => (p.type === "tool" && p.tool === "background_list" && p.state.status === "completed" ? [p.state.output as string] : []))
      .at(-1)!;
    const total = /^usage, all listed tasks: ([\d.]+k?) charged in full \([^)]*\) · ([\d.]+k) read from cache$/m.exec(listed);
    expect(total).not.toBeNull();
    expect(listed).toMatch(/^\s+cache: [\d.]+k of [\d.]+k input tokens \((9\d|100)%\) on the first request · native fork/m);
    const screen = await tui.waitFor(`all tasks: ${total![1]} tok + ${total![2]} cached`, { what: "the sidebar total matching the list's" });
    expect(sidebar(screen)).toContain(`all tasks: ${total![1]} tok + ${total![2]} cached`);
  });
});
