// Steering what the real server rarely shows on demand: a message that cannot be delivered (the
// child gone, the prompt failing with a session error) is reported so, never as sent, and the task
// still ends once. The delivered cases run on the real server (test/e2e/scenarios/steer.e2e.test.ts).
import { afterEach, describe, expect, it, vi } from "vitest";
import { type Harness, createHarness, noticesIn, toolContext, useHarness } from "./setup.js";

const h = useHarness();

const notices = (parent: string) => noticesIn(h.fake, parent);
const steer = async (parent: string, taskID: string, prompt: string, extra: Record<string, unknown> = {}) =>
  h.text(await h.tools.task.execute({ description: "job", prompt, resume: taskID, ...extra }, toolContext(parent)));

describe("steer", () => {
  it("a message to a running task reaches its child as a marked user message, counted once, and the task keeps its run", async () => {
    const parent = h.fake.addParent();
    const task = await h.launch(parent);
    const out = await steer(parent, task.id, "look elsewhere");
    expect(out).toContain(`Message sent to background task ${task.id} "job"`);
    expect(h.fake.userTexts(task.sessionID)).toEqual(["do job", "look elsewhere"]);
    const sent = h.fake
      .callsOf("session.promptAsync")
      .filter((c) => c.options.path.id === task.sessionID)
      .at(-1)!;
    expect(sent.options.body).toMatchObject({ agent: "general", model: { providerID: "mock", modelID: "mock-model" } });
    expect(sent.options.body.parts[0].metadata.offshootSteer).toMatch(/^steer_/);
    await h.fake.settle();
    expect(task).toMatchObject({ status: "running", run: 1, steers: 1 });

    h.fake.goIdle(parent);
    h.fake.answer(task.sessionID, { text: "redirected" });
    await h.fake.settle();
    expect(task.status).toBe("completed");
    expect(notices(parent)).toHaveLength(1);
  });

  it("a child that is gone: the message is reported as not delivered, and the task ends once as error", async () => {
    const parent = h.fake.addParent();
    const task = await h.launch(parent);
    h.fake.goIdle(parent);
    h.fake.failNext("session.promptAsync", 404, { name: "NotFoundError", data: { message: "Session not found" } });
    const out = await steer(parent, task.id, "are you there");
    expect(out).toBe(
      `Error: the message was NOT delivered to background task ${task.id} "job": its child session no longer exists. Check the task with background_output({ task_id: "${task.id}" }).`,
    );
    await h.fake.settle();
    expect(task).toMatchObject({ status: "error", error: "its child session no longer exists" });
    expect(task.steers).toBeUndefined();
    expect(notices(parent)).toHaveLength(1);
  });

  it("a prompt the server accepts but then fails (session.error, nothing stored) is reported as not delivered", async () => {
    const parent = h.fake.addParent();
    const task = await h.launch(parent);
    // prompt_async answers 204 before it creates the message; a failure then arrives as session.error only
    const client = h.fake.client.session;
    const original = client.promptAsync;
    client.promptAsync = (async (options: { path: { id: string } }) => {
      h.fake.emit({
        type: "session.error",
        properties: { sessionID: options.path.id, error: { name: "UnknownError", data: { message: "Model not found: mock/gone" } } },
      });
      return { data: undefined, response: { status: 204, statusText: "No Content" } };
    }) as unknown as typeof original;
    const out = await steer(parent, task.id, "change course");
    client.promptAsync = original;
    expect(out).toContain(
      `Error: the message was NOT delivered to background task ${task.id} "job": the child session reported an error: UnknownError: Model not found: mock/gone.`,
    );
    expect(out).not.toContain("Message sent");
    expect(task.steers).toBeUndefined();
  });

  it("a prompt the server accepts but never shows stored is reported as not confirmed after 10 s, never as sent", async () => {
    const parent = h.fake.addParent();
    const task = await h.launch(parent);
    const client = h.fake.client.session;
    const original = client.promptAsync;
    client.promptAsync = (async () => ({ data: undefined, response: { status: 204, statusText: "No Content" } })) as unknown as typeof original;
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    try {
      const pending = steer(parent, task.id, "hello?");
      await vi.advanceTimersByTimeAsync(10_000);
      const out = await pending;
      expect(out).toBe(
        `Warning: the message to background task ${task.id} "job" was handed to the server, but the server did not confirm that it stored it within 10s, so it may not have reached the child. Check the task with background_output({ task_id: "${task.id}" }) before sending it again.`,
      );
    } finally {
      vi.useRealTimers();
      client.promptAsync = original;
    }
    expect(task.steers).toBeUndefined();
    expect(task.status).toBe("running");
  });

  it("a message to a task that has not ended cannot change its agent; nothing is sent", async () => {
    const parent = h.fake.addParent();
    const task = await h.launch(parent);
    const before = h.fake.callsOf("session.promptAsync").length;
    const out = await steer(parent, task.id, "x", { agent: "explore" });
    expect(out).toContain(`Error: task ${task.id} is running with agent general; a message to a task that has not ended cannot change its agent to explore.`);
    expect(h.fake.callsOf("session.promptAsync")).toHaveLength(before);
  });
});

it("a message to a task launched on a model's variant repeats that model and variant", async () => {
  const parent = h.fake.addParent();
  await h.tools.task.execute({ description: "deep", prompt: "think hard", agent: "general", model: "mock/other-model#high" }, toolContext(parent));
  const task = h.manager.registry.ofParent(parent).at(-1)!.task;
  expect(task).toMatchObject({ model: { providerID: "mock", modelID: "other-model" }, variant: "high" });
  expect(await steer(parent, task.id, "and then this")).toContain(`Message sent to background task ${task.id}`);
  const sent = h.fake
    .callsOf("session.promptAsync")
    .filter((c) => c.options.path.id === task.sessionID)
    .at(-1)!;
  expect(sent.options.body).toMatchObject({ agent: "general", model: { providerID: "mock", modelID: "other-model" }, variant: "high" });
});

describe("a message to a task just out of the queue", () => {
  let q: Harness;
  afterEach(async () => q?.cleanup());

  it("waits for the task's own prompt (its start is a job before it in the task's mailbox), then reaches the child after it", async () => {
    q = await createHarness({ options: { concurrency: 1 } });
    const parent = q.fake.addParent();
    const first = await q.launch(parent, "first");
    const reply = q.text(await q.tools.task.execute({ description: "second", prompt: "do second", agent: "general" }, toolContext(parent)));
    expect(reply).toContain("queued");
    await q.fake.settle(); // its child is created
    const second = q.manager.tasksOf(parent).find((t) => t.description === "second")!;

    const release = q.fake.hold("session.promptAsync"); // the server is slow to take prompts from now on
    const prompts = q.fake.callsOf("session.promptAsync").length;
    q.fake.answer(first.sessionID, { text: "done" }); // the slot frees: the second starts, its prompt held
    await q.fake.called("session.promptAsync", prompts + 1);
    expect(second.status).toBe("running");
    const steering = q.tools.task.execute({ description: "second", prompt: "also check the tests", resume: second.id }, toolContext(parent));
    release();
    expect(q.text(await steering)).toContain(`Message sent to background task ${second.id} "second"`);
    expect(q.fake.userTexts(second.sessionID)).toEqual(["do second", "also check the tests"]);
  });
});
