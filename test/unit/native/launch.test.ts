// The native launch path of background_task against the fake server (the real one: e2e/native-fork).
import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { nativeFollowUpExtras } from "../../../src/native/launch.js";
import { NativeForkRegistry } from "../../../src/native/registry.js";
import { ForkStore, SEGMENT_GRACE_MS } from "../../../src/native/store.js";
import { createBackgroundTaskTool } from "../../../src/tools/background-task.js";
import { taskService } from "../../../src/manager/service.js";
import { ARGS } from "../../../src/tools/background-task.txt.js";
import { type Harness, createHarness, toolContext } from "../manager/setup.js";

let h: Harness;
let registry: NativeForkRegistry;
let task: ReturnType<typeof createBackgroundTaskTool>;
beforeEach(async () => {
  h = await createHarness();
  registry = new NativeForkRegistry(new ForkStore(path.join(h.dir, "forks")));
  task = createBackgroundTaskTool(taskService(h.manager), { registry, maxTokens: 120_000 });
});
afterEach(async () => {
  await h.cleanup();
});

function parentContext(parent: string) {
  // what OpenCode hands the tool: the request's messages, the calling agent and model
  const messages = h.fake.sessions.get(parent)!.messages;
  return toolContext(parent, { messages, extra: { model: { id: "mock-model", providerID: "mock", limit: { context: 200_000 } } } } as any) as ReturnType<
    typeof toolContext
  > & {
    messages: typeof messages;
  };
}

describe("background_task: native fork", () => {
  it("without an agent: the child runs the caller's agent and model, no tools map, the directive only; the snapshot is saved", async () => {
    const parent = h.fake.addParent();
    const ctx = parentContext(parent);
    const result = (await task.execute({ description: "Copy me", prompt: "Check the tests", fork: true }, ctx)) as any;

    expect(result.output).toContain("Fork: native: shares your prompt cache.");
    expect(result.output).toContain("with agent build");
    const [child] = h.fake.children(parent);
    const [sent] = h.fake.callsOf("session.promptAsync");
    expect(sent!.options.body.agent).toBe("build");
    expect(sent!.options.body.model).toEqual({ providerID: "mock", modelID: "mock-model" });
    expect(sent!.options.body.tools).toBeUndefined();
    expect(sent!.options.body.system).toBeUndefined();
    expect(sent!.options.body.parts).toHaveLength(1);
    expect(sent!.options.body.parts[0].text).toContain("You are a forked copy of the agent above");
    expect(sent!.options.body.parts[0].text).toContain("Check the tests");
    // no text copy was sent
    expect(h.fake.callsOf("session.prompt")).toHaveLength(0);

    // the fork file is written once the launch returned (off the tool call's path)
    await h.fake.settle();
    expect(fs.statSync(path.join(h.dir, "forks", `${child.id}.json`)).mode & 0o777).toBe(0o600);
    const saved = (await new ForkStore(path.join(h.dir, "forks")).read(child.id))!;
    expect(saved.rootSessionID).toBe(parent);
    expect(saved.messages).toEqual(JSON.parse(JSON.stringify(ctx.messages)));
    const [stored] = h.manager.tasksOf(parent);
    expect(stored!.fork).toMatchObject({ kind: "native", messages: ctx.messages.length, rootSessionID: parent });
    expect((await registry.find(child.id))?.messages()).toHaveLength(ctx.messages.length);
  });

  it("repeats the parent's variant and per-prompt system (both shape the parent's request)", async () => {
    const parent = h.fake.addParent();
    const ctx = parentContext(parent);
    const messages = JSON.parse(JSON.stringify(ctx.messages));
    const user = [...messages].reverse().find((m: any) => m.info.role === "user");
    user.info.model = { ...user.info.model, variant: "high" };
    user.info.system = "Answer in French.";
    await task.execute({ description: "Variant", prompt: "x", fork: true }, { ...ctx, messages } as any);
    const [sent] = h.fake.callsOf("session.promptAsync");
    expect(sent!.options.body.variant).toBe("high");
    expect(sent!.options.body.system).toBe("Answer in French.");
    const fork = h.manager.tasksOf(parent)[0]!.fork;
    expect(fork).toMatchObject({ kind: "native", variant: "high", system: "Answer in French." });
    // a resume or a queued start repeats both; other tasks add nothing
    expect(nativeFollowUpExtras(fork)).toEqual({ variant: "high", system: "Answer in French." });
    expect(nativeFollowUpExtras({ kind: "text" })).toEqual({});
  });

  it("with another agent: the text fork of today, and the output says why", async () => {
    const parent = h.fake.addParent();
    const result = (await task.execute({ description: "Other", prompt: "Look", agent: "general", fork: true }, parentContext(parent))) as any;
    expect(result.output).toMatch(/Fork: context copy: \d+ of \d+ messages, \d+ chars \(not native: agent general is not yours \(build\)\)\./);
    expect(h.fake.callsOf("session.prompt")[0]!.options.body.noReply).toBe(true);
    expect(fs.existsSync(path.join(h.dir, "forks"))).toBe(false);
  });

  it("the fork argument's text holds: a native fork is handed this conversation itself, another agent or the cap a processed copy", async () => {
    expect(ARGS.fork).toContain("a native fork (agent left out, or your own) is handed the conversation itself");
    expect(ARGS.fork).toContain("with another agent, another model or a conversation over the native fork's cap, it gets a processed copy");
    const parent = h.fake.addParent();
    const ctx = parentContext(parent);
    await task.execute({ description: "Itself", prompt: "Look", fork: true }, ctx);
    await h.fake.settle();
    // the conversation itself: every message as the parent's request had it, nothing cut or rewritten
    const [child] = h.fake.children(parent);
    expect((await registry.find(child.id))?.messages()).toEqual(JSON.parse(JSON.stringify(ctx.messages)));
    expect(h.fake.callsOf("session.prompt")).toHaveLength(0);
    // another agent: one processed copy, stored in the child as a message of its own
    const other = h.fake.addParent();
    await task.execute({ description: "Copy", prompt: "Look", agent: "general", fork: true }, parentContext(other));
    const [copy] = h.fake.callsOf("session.prompt");
    expect(copy!.options.body.parts[0].text).toContain("You are working with forked context from a parent agent session.");
  });

  it("over the token cap: a text fork", async () => {
    const parent = h.fake.addParent();
    const small = createBackgroundTaskTool(taskService(h.manager), { registry, maxTokens: 10 });
    const result = (await small.execute({ description: "Big", prompt: "Look", fork: true }, parentContext(parent))) as any;
    expect(result.output).toContain("is over the native fork cap of 10 tokens");
    expect(result.output).toContain("Fork: context copy:");
  });

  it("a failed prompt leaves no child and no fork file behind", async () => {
    const parent = h.fake.addParent();
    h.fake.failNext("session.promptAsync");
    const out = h.text(await task.execute({ description: "Fails", prompt: "x", fork: true }, parentContext(parent)));
    expect(out).toContain("was not started");
    expect(h.fake.children(parent)).toHaveLength(0);
    const dir = path.join(h.dir, "forks");
    expect(fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => f.endsWith(".json")) : []).toEqual([]);
    // what it had written of the snapshot is named by no fork: the next sweep removes it
    await new ForkStore(dir).removeUnusedSegments(Date.now() + SEGMENT_GRACE_MS + 1);
    expect(fs.existsSync(dir) ? fs.readdirSync(path.join(dir, "segments")) : []).toEqual([]);
    expect(h.manager.tasksOf(parent)).toHaveLength(0);
  });

  it("without fork, the agent is still required: left out, the reply names that fault (not an empty agent)", async () => {
    const parent = h.fake.addParent();
    const out = h.text(await task.execute({ description: "x", prompt: "y" }, parentContext(parent)));
    expect(out).toBe(
      'Error: background_task argument "agent" is missing; without fork a new task needs the agent that runs it. Call background_task again with agent: "general" (or another agent), or with fork: true for a copy of you.',
    );
    const blank = h.text(await task.execute({ description: "x", prompt: "y", agent: " " }, parentContext(parent)));
    expect(blank).toContain("agent is empty");
    expect(h.manager.tasksOf(parent)).toHaveLength(0);
  });
});

describe("background_task: a native fork that waits in the queue", () => {
  it("keeps the directive as its queued prompt and, when a slot frees, starts with the parent's variant and system", async () => {
    const h = await createHarness({ options: { concurrency: 1 } });
    const { fake, manager } = h;
    const dir = h.dir;
    try {
      const registry = new NativeForkRegistry(new ForkStore(path.join(dir, "forks")));
      const tool = createBackgroundTaskTool(taskService(manager), { registry });
      const parent = fake.addParent();
      const messages = JSON.parse(JSON.stringify(fake.sessions.get(parent)!.messages));
      const user = [...messages].reverse().find((m: any) => m.info.role === "user");
      user.info.model = { ...user.info.model, variant: "high" };
      user.info.system = "Answer in French.";
      const ctx = () => toolContext(parent, { messages, extra: { model: { id: "mock-model", providerID: "mock", limit: { context: 200_000 } } } } as any);

      await tool.execute({ description: "First", prompt: "busy", agent: "general" }, ctx());
      const queued = (await tool.execute({ description: "Queued native", prompt: "Check the tests", fork: true }, ctx())) as any;
      expect(queued.output).toContain("queued");
      expect(queued.output).toContain("Fork: native: shares your prompt cache.");
      const waiting = manager.tasksOf(parent).find((t) => t.description === "Queued native")!;
      expect(waiting.status).toBe("queued");
      expect(waiting.queuedPrompt).toContain("You are a forked copy of the agent above");
      // its child is created right after the launch returned, with the native fork's registration
      await fake.settle();
      expect(waiting.sessionID).toMatch(/^ses_/);
      expect(fs.existsSync(path.join(dir, "forks", `${waiting.sessionID}.json`))).toBe(true);

      // the first task is cancelled: the slot frees and the native child gets its prompt now
      const first = manager.tasksOf(parent).find((t) => t.description === "First")!;
      await h.tools.cancel.execute({ task_id: first.id }, ctx());
      await fake.settle();
      const started = fake.callsOf("session.promptAsync").find((c) => c.options.path.id === waiting.sessionID);
      expect(started?.options.body).toMatchObject({ agent: "build", variant: "high", system: "Answer in French." });
      expect(started?.options.body.tools).toBeUndefined();
      expect(started?.options.body.parts[0].text).toContain("Check the tests");
    } finally {
      await h.cleanup();
    }
  });
});
