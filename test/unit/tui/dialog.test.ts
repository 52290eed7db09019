import { describe, expect, test } from "vitest";
import { TaskStore } from "../../../src/tui/model.js";
import { createTasksDialog } from "../../../src/tui/dialog.js";
import { Loader } from "../../../src/tui/loader.js";
import { childInfo, fakeApi, settle } from "./fake-api.js";
import { REQUEST_KEY } from "../../../src/task-state.js";

const NOW = 100_000;

function setup() {
  const f = fakeApi();
  const store = new TaskStore(() => NOW);
  const loader = new Loader(f.api, store);
  const dialog = createTasksDialog({ api: f.api, store, loader, now: () => NOW });
  store.upsertSession(childInfo("ses_fix", { description: "Fix tests", startedAt: NOW - 10_000 }));
  store.upsertSession(childInfo("ses_docs", { description: "Write docs", status: "completed", startedAt: NOW - 60_000, completedAt: NOW - 30_000 }));
  f.route = { name: "session", params: { sessionID: "ses_parent" } };
  return { f, store, dialog };
}

describe("/tasks dialog", () => {
  test("lists this session's tasks, running first, with what they do", () => {
    const { f, dialog } = setup();
    dialog.openList();
    const s = f.select();
    expect(s.title).toBe("Background tasks");
    expect(s.options.map((o) => [o.category, o.title])).toEqual([
      ["Running", "● Fix tests"],
      ["Finished", "✓ Write docs"],
    ]);
    expect(s.options[0]!.description).toBe("running 10s");
  });

  test("an open list follows the model", () => {
    const f = fakeApi();
    const store = new TaskStore(() => NOW);
    let tracked = 0;
    const dialog = createTasksDialog({ api: f.api, store, loader: new Loader(f.api, store), now: () => NOW, track: () => void tracked++ });
    store.upsertSession(childInfo("ses_fix", { description: "Fix tests", startedAt: NOW - 10_000 }));
    f.route = { name: "session", params: { sessionID: "ses_parent" } };
    dialog.openList();
    expect(f.select().options[0]!.title).toBe("● Fix tests");
    store.permissionAsked({ id: "per_1", sessionID: "ses_fix", permission: "bash", patterns: ["make"] });
    expect(f.select().options[0]!.title).toBe("⚠ Fix tests");
    store.upsertSession(childInfo("ses_fix", { description: "Fix tests", status: "completed", completedAt: NOW }));
    expect(f.select().options.map((o) => [o.category, o.title])).toEqual([["Finished", "✓ Fix tests"]]);
    expect(tracked).toBeGreaterThan(0);
  });

  test("opens a task's child session", () => {
    const { f, dialog } = setup();
    dialog.openList();
    f.choose("Fix tests");
    expect(f.select().options.map((o) => o.title)).toEqual(["Open child session", "Send a message", "Cancel task", "← Back to the list"]);
    f.choose("Open child session");
    expect(f.navigations).toEqual([{ name: "session", params: { sessionID: "ses_fix" } }]);
    expect(f.dialog()).toBeUndefined();
  });

  test("Send a message: the text goes to the child with its latest agent, model and system, marked; delivered only once the server shows it stored", async () => {
    const { f, dialog } = setup();
    f.replies["session.messages"] = [
      { info: { role: "user", agent: "general", model: { providerID: "mock", modelID: "mock-model", variant: "high" }, system: "SYS" } },
      { info: { role: "assistant" } },
    ];
    dialog.openList();
    f.choose("Write docs");
    expect(f.select().options.map((o) => o.title)).not.toContain("Send a message"); // ended: nothing to steer
    dialog.openList();
    f.choose("Fix tests");
    f.choose("Send a message");
    const prompt = f.dialog();
    if (prompt?.kind !== "prompt") throw new Error("no prompt dialog");
    expect(prompt.title).toBe('Message to "Fix tests"');
    prompt.onConfirm!("  look at the flaky one first  ");
    await settle();
    const sent = f.calls.find((c) => c.method === "session.promptAsync")!.args as { parts: Array<{ text: string; metadata: Record<string, string> }> };
    expect(sent).toMatchObject({
      sessionID: "ses_fix",
      agent: "general",
      model: { providerID: "mock", modelID: "mock-model" },
      variant: "high",
      system: "SYS",
    });
    expect(sent.parts[0]!.text).toBe("look at the flaky one first");
    expect(f.toasts).toEqual([]); // accepted, not yet shown stored
    f.emit("message.part.updated", { part: { sessionID: "ses_fix", type: "text", metadata: { ...sent.parts[0]!.metadata } } });
    await settle();
    expect(f.toasts.at(-1)).toMatchObject({ variant: "success", message: 'Message delivered to "Fix tests"; it reads it at its next step.' });
  });

  test("Send a message that the child's session refuses says it was not delivered", async () => {
    const { f, dialog } = setup();
    f.replies["session.messages"] = [{ info: { role: "user", agent: "general" } }];
    dialog.openList();
    f.choose("Fix tests");
    f.choose("Send a message");
    const prompt = f.dialog();
    if (prompt?.kind !== "prompt") throw new Error("no prompt dialog");
    prompt.onConfirm!("stop");
    await settle();
    f.emit("session.error", { sessionID: "ses_fix", error: { name: "UnknownError", data: { message: "Model not found" } } });
    await settle();
    expect(f.toasts.at(-1)).toMatchObject({
      variant: "error",
      message: 'Message NOT delivered to "Fix tests": the child session reported an error: Model not found.',
    });
  });

  test("cancels a running task through the server half: a cancel request, the list reopened, the toast follows its answer", async () => {
    for (const answer of ["ok", "refused"] as const) {
      const { f, dialog } = setup();
      const info = childInfo("ses_fix", { description: "Fix tests", startedAt: NOW - 10_000 });
      f.replies["session.get"] = info;
      dialog.openList();
      f.choose("Fix tests");
      f.choose("Cancel task");
      await settle();
      expect(f.toasts.at(-1)?.message).toBe('Cancelling "Fix tests"…');
      expect(f.select().title).toBe("Background tasks");
      const update = f.calls.find((c) => c.method === "session.update")!.args as { metadata: Record<string, any> };
      expect(update.metadata[REQUEST_KEY]).toMatchObject({ kind: "cancel", id: expect.any(String) });
      expect(update.metadata.offshoot).toEqual(info.metadata.offshoot); // the published state kept
      const id = update.metadata[REQUEST_KEY].id;
      const answered = answer === "ok" ? { id, message: "task bg_x cancelled" } : { id, error: "nope" };
      f.emit("session.updated", { sessionID: "ses_fix", info: { ...info, metadata: { offshoot: { ...info.metadata.offshoot, answered } } } });
      await settle();
      expect(f.toasts.at(-1)).toMatchObject(
        answer === "ok" ? { variant: "success", message: 'Cancelled "Fix tests".' } : { variant: "error", message: '"Fix tests" NOT cancelled: nope.' },
      );
      // a refusal stays in the task's line of the list (its status alone would not say it), and in its view
      const line = f.select().options.find((o) => o.title.includes("Fix tests"))!;
      if (answer === "refused") expect(line.description).toMatch(/^✗ NOT cancelled: nope · running/);
      else expect(line.description).not.toContain("cancelled");
      f.choose("Fix tests");
      expect(f.select().options[0]).toMatchObject(
        answer === "ok" ? { title: "✓ Cancelled", description: "task bg_x cancelled" } : { title: "✗ NOT cancelled", description: "nope" },
      );
    }
  });

  test("answers a pending permission from the list", async () => {
    const { f, store, dialog } = setup();
    store.permissionAsked({ id: "per_7", sessionID: "ses_fix", permission: "bash", patterns: ["ls -la"] });
    dialog.openList();
    expect(f.select().options[0]!.title).toBe("⚠ Fix tests");
    expect(f.select().options[0]!.description).toBe("waits for bash: ls -la");
    f.choose("Fix tests");
    f.choose("Answer permission");
    expect(f.select().title).toBe('"Fix tests" asks: bash: ls -la');
    f.choose("Allow once");
    await settle();
    expect(f.calls.filter((c) => c.method === "permission.reply")).toEqual([{ method: "permission.reply", args: { requestID: "per_7", reply: "once" } }]);
    expect(store.task("ses_fix")?.permission).toBeUndefined();
    expect(f.select().options[0]!.title).toBe("● Fix tests");
  });

  test("rejecting is offered too", async () => {
    const { f, store, dialog } = setup();
    store.permissionAsked({ id: "per_8", sessionID: "ses_fix", permission: "edit", patterns: ["a.ts"] });
    dialog.openPermission("ses_fix");
    f.choose("Reject");
    await settle();
    expect(f.calls.find((c) => c.method === "permission.reply")?.args).toEqual({ requestID: "per_8", reply: "reject" });
  });

  test("a worktree task's permission and question are answered in its worktree's instance, where they wait (the project's answers 404)", async () => {
    const { f, store, dialog } = setup();
    const WT = "/data/offshoot/worktrees/p/bg_wt";
    store.upsertSession(childInfo("ses_wt", { description: "Edit apart", startedAt: NOW - 5_000, worktree: { branch: "offshoot/bg_wt", directory: WT } }));
    store.permissionAsked({ id: "per_w", sessionID: "ses_wt", permission: "bash", patterns: ["make"] });
    dialog.openPermission("ses_wt");
    f.choose("Allow once");
    await settle();
    expect(f.calls.find((c) => c.method === "permission.reply")?.args).toEqual({ requestID: "per_w", reply: "once", directory: WT });
    store.questionAsked({
      id: "que_w",
      sessionID: "ses_wt",
      questions: [{ question: "Which?", header: "Which", options: [{ label: "A", description: "a" }] }],
    });
    dialog.openQuestion("ses_wt");
    f.choose("A");
    await settle();
    expect(f.calls.find((c) => c.method === "question.reply")?.args).toEqual({ requestID: "que_w", answers: [["A"]], directory: WT });
    store.questionAsked({
      id: "que_r",
      sessionID: "ses_wt",
      questions: [{ question: "Which?", header: "Which", options: [{ label: "A", description: "a" }] }],
    });
    dialog.openQuestion("ses_wt");
    f.choose("Reject");
    await settle();
    expect(f.calls.find((c) => c.method === "question.reject")?.args).toEqual({ requestID: "que_r", directory: WT });
  });

  test("shows a finished task's result: the child's last answer", async () => {
    const { f, dialog } = setup();
    f.replies["session.messages"] = [
      { info: { role: "user" }, parts: [{ type: "text", text: "do it" }] },
      { info: { role: "assistant" }, parts: [{ type: "text", text: "first try" }] },
      {
        info: { role: "assistant" },
        parts: [
          { type: "tool", tool: "bash" },
          { type: "text", text: "Docs written to README." },
        ],
      },
    ];
    dialog.openList();
    f.choose("Write docs");
    expect(f.select().options.map((o) => o.title)).toEqual(["Open child session", "Show result", "← Back to the list"]);
    f.choose("Show result");
    await settle();
    expect(f.dialog()).toMatchObject({ kind: "alert", title: "✓ Write docs", message: "Docs written to README." });
  });

  test("inside a child session: back to the parent, and the parent's tasks", () => {
    const { f, dialog } = setup();
    f.route = { name: "session", params: { sessionID: "ses_fix" } };
    dialog.openList();
    const s = f.select();
    expect(s.options.map((o) => o.title)).toEqual(["↑ Back to the parent session", "● Fix tests", "✓ Write docs"]);
    f.choose("Back to the parent");
    expect(f.navigations).toEqual([{ name: "session", params: { sessionID: "ses_parent" } }]);
  });

  test("a session without tasks says so; outside a session a toast says where to look", () => {
    const { f, dialog } = setup();
    f.route = { name: "session", params: { sessionID: "ses_lonely" } };
    dialog.openList();
    expect(f.select().options.map((o) => o.title)).toEqual(["No background tasks in this session"]);
    f.route = { name: "home" };
    dialog.openList();
    expect(f.toasts.at(-1)?.message).toBe("Open a session to see its background tasks.");
  });
});
