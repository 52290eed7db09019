import { describe, expect, it, vi } from "vitest";
import { createHarness, noticesIn, toolContext, useHarness, wakesOf } from "./setup.js";

const h = useHarness();

const notices = (parent: string) => noticesIn(h.fake, parent);
const wakes = (parent: string) => wakesOf(h.fake, parent);

describe("completion and notification", () => {
  it("completes on the child's idle, then notifies the idle parent once and wakes it once with its agent and model", async () => {
    const parent = h.fake.addParent();
    const task = await h.launch(parent);
    h.fake.goIdle(parent); // the parent's turn ends before the child is done
    await h.fake.settle();
    expect(notices(parent)).toHaveLength(0);

    h.fake.answer(task.sessionID, { text: "line 1\nline 2", tools: [{ tool: "read", input: { filePath: "/a" }, output: "x" }] });
    await h.fake.settle();
    expect(task.status).toBe("completed");
    expect(task.toolCalls).toBe(1);
    const [note] = notices(parent);
    expect(notices(parent)).toHaveLength(1);
    expect(note).toContain(task.id);
    expect(note).toContain('"job"');
    expect(note).toContain("status: completed");
    expect(note).toContain("answer (first lines):\n  line 1\n  line 2"); // quoted: indented
    const noticeCall = h.fake.callsOf("session.prompt").find((c) => c.options.path.id === parent)!;
    expect(noticeCall.options.body.noReply).toBe(true);
    expect(wakes(parent)).toHaveLength(1);
    expect(wakes(parent)[0]!.options.body).toMatchObject({ agent: "build", model: { providerID: "mock", modelID: "mock-model" } });

    // the idle events after the wake, or any later reconcile, never repeat it
    h.fake.goIdle(parent);
    await h.manager.reconcile();
    await h.fake.settle();
    expect(notices(parent)).toHaveLength(1);
    expect(wakes(parent)).toHaveLength(1);
  });

  it("queues a notice while the parent's turn runs and delivers it at the parent's idle", async () => {
    const parent = h.fake.addParent();
    const task = await h.launch(parent);
    h.fake.answer(task.sessionID, { text: "fast" });
    await h.fake.settle();
    expect(task.status).toBe("completed");
    expect(notices(parent)).toHaveLength(0); // the parent is still in the turn that launched it
    h.fake.goIdle(parent);
    await h.fake.settle();
    expect(notices(parent)).toHaveLength(1);
    expect(wakes(parent)).toHaveLength(1);
  });

  it("with several tasks, notifies each once and wakes the parent once, when the last one ends", async () => {
    const parent = h.fake.addParent();
    const tasks = [];
    for (let i = 0; i < 8; i++) tasks.push(await h.launch(parent, `job ${i}`, { fork: true }));
    h.fake.goIdle(parent);
    await h.fake.settle();
    for (const [i, task] of tasks.entries()) {
      h.fake.answer(task.sessionID, { text: `answer ${i}` });
      await h.fake.settle();
      expect(wakes(parent)).toHaveLength(i === tasks.length - 1 ? 1 : 0);
    }
    expect(notices(parent)).toHaveLength(8);
    expect(new Set(notices(parent)).size).toBe(8);
    const wakeText = wakes(parent)[0]!.options.body.parts[0].text;
    for (const task of tasks) expect(wakeText).toContain(task.id);
  });

  it("never lets the wake overtake the notice of a task that ended while notices were going out", async () => {
    const parent = h.fake.addParent();
    const first = await h.launch(parent, "first");
    const second = await h.launch(parent, "second");
    h.fake.goIdle(parent);
    await h.fake.settle();
    const prompt = h.fake.client.session.prompt;
    let ended = false;
    h.fake.client.session.prompt = (async (options: never) => {
      const result = await prompt(options);
      if (!ended) {
        ended = true; // the second task ends while the first notice is being stored
        h.fake.answer(second.sessionID, { text: "second done" });
        await h.manager.waitForEnd(second, 5_000);
        expect(second.status).toBe("completed");
      }
      return result;
    }) as typeof prompt;
    h.fake.answer(first.sessionID, { text: "first done" });
    await h.fake.settle();
    const texts = h.fake.userTexts(parent);
    const wakeAt = texts.findIndex((t) => t.startsWith("Background tasks you started have ended:"));
    const noticeAt = (task: { id: string }) => texts.findIndex((t) => t.startsWith(`[background task ${task.id}`));
    expect(wakeAt).toBeGreaterThan(-1);
    expect(noticeAt(first)).toBeLessThan(wakeAt);
    expect(noticeAt(second)).toBeGreaterThan(-1);
    expect(noticeAt(second)).toBeLessThan(wakeAt);
    expect(wakes(parent)).toHaveLength(1);
  });

  it("wakes the parent at once when a task fails, even with others running", async () => {
    const parent = h.fake.addParent();
    const failing = await h.launch(parent, "a");
    const other = await h.launch(parent, "b");
    h.fake.goIdle(parent);
    await h.fake.settle();
    h.fake.answer(failing.sessionID, { error: { name: "APIError", data: { message: "rate limited" } } });
    await h.fake.settle();
    expect(failing.status).toBe("error");
    expect(failing.error).toContain("rate limited");
    expect(other.status).toBe("running");
    expect(wakes(parent)).toHaveLength(1);
    expect(notices(parent)[0]).toContain("error: APIError: rate limited");
  });

  it("ignores an idle that comes before the child has answered its prompt", async () => {
    const parent = h.fake.addParent();
    const task = await h.launch(parent);
    h.fake.goIdle(task.sessionID);
    await h.fake.settle();
    expect(task.status).toBe("running");
  });

  it("is not touched by events of other sessions", async () => {
    const parent = h.fake.addParent();
    const stranger = h.fake.addParent();
    const task = await h.launch(parent);
    h.fake.emit({
      type: "message.part.updated",
      properties: { sessionID: stranger, part: { type: "tool", sessionID: stranger, callID: "c1", tool: "bash", state: { status: "running" } } },
    });
    h.fake.goIdle(stranger);
    await h.fake.settle();
    expect(task.status).toBe("running");
    expect(task.toolCalls).toBe(0);
    expect(h.fake.userTexts(stranger).some((t) => t.includes("background task"))).toBe(false);
  });

  it("counts each tool call of the child once, however often its part is updated", async () => {
    const parent = h.fake.addParent();
    const task = await h.launch(parent);
    for (const status of ["pending", "running", "completed"]) {
      h.fake.emit({
        type: "message.part.updated",
        properties: { sessionID: task.sessionID, part: { type: "tool", sessionID: task.sessionID, callID: "c1", tool: "grep", state: { status } } },
      });
    }
    await h.fake.settle();
    expect(task.toolCalls).toBe(1);
    expect(task.lastTool).toBe("grep");
  });

  it("recovers a missed idle event through the reconcile", async () => {
    const parent = h.fake.addParent();
    const task = await h.launch(parent);
    const sink = h.fake.sink;
    h.fake.sink = undefined; // the idle event is lost
    h.fake.answer(task.sessionID, { text: "done" });
    h.fake.sink = sink;
    await h.manager.reconcile();
    expect(task.status).toBe("completed");
  });

  it("ends a task whose prompt the server rejected (session.error and no idle follows)", async () => {
    const parent = h.fake.addParent();
    const task = await h.launch(parent);
    h.fake.sessions.get(task.sessionID)!.busy = false;
    h.fake.emit({
      type: "session.error",
      properties: { sessionID: task.sessionID, error: { name: "UnknownError", data: { message: 'Agent not found: "nope"' } } },
    });
    await h.fake.settle();
    expect(task.status).toBe("error");
    expect(task.error).toContain('Agent not found: "nope"');
  });

  it("ends a task whose child stays idle without answering, instead of letting it hang", async () => {
    let clock = 1_000_000;
    const local = await createHarness({ now: () => clock });
    const parent = local.fake.addParent();
    await local.tools.task.execute({ description: "stuck", prompt: "p", agent: "general" }, toolContext(parent));
    const task = local.manager.tasksOf(parent)[0]!;
    local.fake.sessions.get(task.sessionID)!.busy = false; // the run never started and no event says so
    await local.manager.reconcile();
    expect(task.status).toBe("running"); // still within its grace period
    clock += 3 * 60_000;
    await local.manager.reconcile();
    expect(task.status).toBe("error");
    expect(task.error).toContain("stopped without answering");
    await local.cleanup();
  });

  it("marks a task whose child session is deleted as an error", async () => {
    const parent = h.fake.addParent();
    const task = await h.launch(parent);
    h.fake.emit({ type: "session.deleted", properties: { sessionID: task.sessionID, info: {} } });
    await h.fake.settle();
    expect(task.status).toBe("error");
    expect(task.error).toContain("deleted");
  });

  it("never throws out of the event hook, whatever arrives", async () => {
    const bad = [
      undefined,
      null,
      {},
      { type: "session.status" },
      { type: "session.status", properties: {} },
      { type: "message.part.updated", properties: { part: null } },
    ];
    for (const event of bad) await expect(h.manager.handleEvent(event as never)).resolves.toBeUndefined();
  });

  it("shows toasts at most once a second, ending with the newest state", async () => {
    let clock = 1_000_000;
    const local = await createHarness({ now: () => clock });
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    try {
      const parent = local.fake.addParent();
      await local.launch(parent, "a");
      await local.launch(parent, "b");
      await local.launch(parent, "c");
      expect(local.fake.toasts).toHaveLength(1);
      clock += 999;
      await vi.advanceTimersByTimeAsync(999);
      expect(local.fake.toasts).toHaveLength(1);
      clock += 1;
      await vi.advanceTimersByTimeAsync(1);
      expect(local.fake.toasts).toHaveLength(2);
      expect(local.fake.toasts[1].message).toContain("c");
    } finally {
      vi.useRealTimers();
      await local.cleanup();
    }
  });
});
