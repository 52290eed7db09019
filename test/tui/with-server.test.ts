/**
 * Both halves together in the REAL OpenCode TUI (1.18.33) under tmux: the server half (built
 * plugin, `opencode.json`) launches the tasks from the model's background_task calls and
 * publishes their state; the TUI half (`tui.json`) shows and steers them. Only the model is
 * scripted.
 */
import { describe, expect, test } from "vitest";
import { DIST_PLUGIN, isToolFollowUp, lastUserText, type ScriptedModel } from "../e2e/harness/index.js";
import { useTuiScenario } from "./vitest.js";
import { inOrder } from "./tmux.js";
import { readTaskFile, until } from "../e2e/scenarios/helpers.js";

/** The parent asks for a background task with `go <key>`; the child's prompt carries `<key>`. */
function scriptLaunch(
  model: ScriptedModel,
  key: string,
  description: string,
  agent: string,
  childCall: { command: string; description: string },
  answer: string,
) {
  model.script({
    name: `launch-${key}`,
    match: (r) => lastUserText(r) === `go ${key}` && !isToolFollowUp(r),
    reply: { toolCalls: [{ name: "background_task", arguments: { description, agent, fork: true, prompt: `TASK-${key}: do the work.` } }] },
  });
  model.script({ name: `launched-${key}`, match: (r) => lastUserText(r) === `go ${key}` && isToolFollowUp(r), reply: { text: `Started ${description}.` } });
  model.script({
    name: `child-${key}`,
    match: (r) => lastUserText(r).includes(`TASK-${key}`) && !isToolFollowUp(r),
    reply: { toolCalls: [{ name: "bash", arguments: childCall }] },
  });
  model.script({ name: `child-done-${key}`, match: (r) => lastUserText(r).includes(`TASK-${key}`) && isToolFollowUp(r), reply: { text: answer } });
}

const scenario = useTuiScenario({
  title: "Both halves",
  opencode: {
    plugins: [DIST_PLUGIN],
    config: { agent: { asker: { mode: "subagent", description: "asks before bash", permission: { bash: "ask" } } } },
  },
  events: true,
  script: (model) => {
    scriptLaunch(model, "audit", "Audit the rate limiter", "general", { command: "sleep 600", description: "Long audit" }, "Audit finished.");
    scriptLaunch(model, "guarded", "Guarded cleanup", "asker", { command: "echo cleaned-up", description: "Clean up" }, "Cleanup done: cleaned-up.");
  },
});

async function say(text: string) {
  await scenario.server.client.session.promptAsync({ path: { id: scenario.parentID }, body: { parts: [{ type: "text", text }] } });
}

describe.sequential("server half + TUI half", () => {
  test("a forked task launched by the model shows in the sidebar and the badge; /tasks opens its child", async () => {
    const { tui } = scenario;
    await say("go audit");
    await tui.waitFor((s) => s.includes("● Audit the rate limiter") && s.includes("bash Long audit") && s.includes("⧗ 1 bg task"), {
      timeoutMs: 30_000,
      what: "the running task",
    });
    tui.keys("C-x", "o");
    await tui.waitFor(/● Audit the rate limiter\s+running/, { what: "/tasks" });
    tui.keys("Enter");
    await tui.waitFor("Open child session", { what: "the task's actions" });
    tui.keys("Enter");
    await tui.waitFor((s) => s.includes("TASK-audit") && s.includes('bg task "Audit the rate limiter"'), { what: "the child session" });
    tui.keys("C-x", "o");
    await tui.waitFor("↑ Back to the parent session", { what: "/tasks in the child" });
    tui.keys("Enter");
    await tui.waitFor((s) => s.includes("Both halves") && s.includes("Background tasks"), { what: "the parent again" });
  });

  test("a permission the child waits for (bash: ask) is named, and answered from /tasks inside the child", async () => {
    const { tui, ev } = scenario;
    const since = ev.mark();
    await say("go guarded");
    await tui.waitFor((s) => s.includes("⚠ Guarded cleanup") && s.includes("asks bash: echo cleaned-up"), { timeoutMs: 30_000, what: "the waiting task" });
    tui.keys("C-x", "o");
    // In the list (title and description on one line), the waiting task comes first.
    await tui.waitFor((s) => inOrder(s, "⚠ Guarded cleanup waits for bash", "● Audit the rate limiter running"), { what: "the waiting task first in /tasks" });
    tui.keys("Enter");
    await tui.waitFor("Answer permission", { what: "actions" });
    tui.type("Open");
    tui.keys("Enter");
    // The child's own view: OpenCode shows no permission prompt there; our line says it waits.
    const child = await tui.waitFor('bg task "Guarded cleanup" · ⚠ waits for bash: echo cleaned-up', { what: "the child, waiting" });
    expect(child).not.toContain("Allow once");
    tui.keys("C-x", "o");
    await tui.waitFor(/↑ Back to the parent session[\s\S]*⚠ Guarded cleanup/, { what: "/tasks inside the child" });
    tui.keys("Down", "Enter");
    await tui.waitFor("Answer permission", { what: "actions" });
    tui.keys("Enter");
    await tui.waitFor('"Guarded cleanup" asks: bash: echo cleaned-up', { what: "the permission choices" });
    tui.keys("Enter");
    const replied = await ev.waitFor((e) => e.type === "permission.replied", 15_000, { since });
    expect(replied.properties.reply).toBe("once");
    // The child ran the command and finished; the server half ended the task.
    await tui.waitFor('bg task "Guarded cleanup" · completed', { timeoutMs: 30_000, what: "the child's line: completed" });
    tui.keys("Escape");
    await tui.waitGone("Filter tasks");
    tui.keys("C-x", "o");
    await tui.waitFor("↑ Back to the parent session", { what: "/tasks inside the child" });
    tui.keys("Enter");
    await tui.waitFor((s) => s.includes("▶ 1 finished") && !s.includes("⚠ Guarded cleanup") && s.includes("⧗ 1 bg task"), {
      timeoutMs: 30_000,
      what: "the parent: the task finished",
    });
  });

  test("Send a message from /tasks: it reaches the running child as its next user message, and the server half counts the steer", async () => {
    const { server, tui, parentID } = scenario;
    tui.keys("C-x", "o");
    await tui.waitFor(/● Audit the rate limiter\s+running/, { what: "/tasks" });
    tui.keys("Enter");
    await tui.waitFor("Send a message", { what: "actions" });
    tui.type("Send");
    tui.keys("Enter");
    await tui.waitFor('Message to "Audit the rate limiter"', { what: "the message prompt" });
    tui.type("STEER-audit: check the burst limit too");
    tui.keys("Enter");
    await tui.waitFor('Message delivered to "Audit the rate limiter"', { timeoutMs: 15_000, what: "the delivered toast" });
    type Kid = { id: string; metadata?: { offshoot?: { taskId?: string; description?: string } } };
    const kid = ((await server.client.session.children({ path: { id: parentID } })).data as Kid[]).find(
      (k) => k.metadata?.offshoot?.description === "Audit the rate limiter",
    )!;
    const msgs = (await server.client.session.messages({ path: { id: kid.id } })).data!;
    const users = msgs.filter((m) => m.info.role === "user").map((m) => m.parts.map((p) => (p.type === "text" ? p.text : "")).join(""));
    expect(users.at(-1)).toBe("STEER-audit: check the burst limit too");
    expect(msgs.filter((m) => m.info.role === "user").at(-1)!.info).toMatchObject({ agent: "general", model: { providerID: "mock", modelID: "mock-model" } });
    const taskID = kid.metadata!.offshoot!.taskId!;
    const file = await until("the steer counted in the task file", async () => {
      const stored = (await readTaskFile(server)).tasks.find((t) => t.id === taskID);
      return stored?.steers === 1 ? stored : undefined;
    });
    expect(file.status).toBe("running");
  });

  test("cancel from /tasks: the server half ends the task as cancelled", async () => {
    const { tui } = scenario;
    tui.keys("C-x", "o");
    await tui.waitFor(/● Audit the rate limiter\s+running/, { what: "/tasks" });
    tui.keys("Enter");
    await tui.waitFor("Cancel task", { what: "actions" });
    tui.type("Cancel");
    tui.keys("Enter");
    // (Our "Cancelling…" toast is at once replaced by the server half's own toast for the end.)
    // The list reopens after the cancel and follows the task to Finished.
    const screen = await tui.waitFor((s) => /⊘ Audit the rate limiter\s+cancelled/.test(s) && s.includes("▶ 2 finished") && !s.includes("⧗"), {
      timeoutMs: 30_000,
      what: "the cancelled task in the open list, both finished in the sidebar, no badge",
    });
    expect(screen).toMatch(/✓ Guarded cleanup\s+completed/);
    tui.keys("Escape");
    await tui.waitGone("Filter tasks");
  });
});
