/**
 * Model per task and spend caps on the real server. The harness declares two models of the
 * scripted provider: mock/mock-model (everyone's default) and mock/other-model (with a variant
 * "high" and a price). What the child's model received is read from the scripted server's requests.
 */
import { describe, expect, test } from "vitest";
import { getMessages, isToolFollowUp, lastUserText, textOf, type RecordedRequest } from "../harness/index.js";
import {
  children,
  isWake,
  launchAll,
  newSession,
  notifications,
  promptList,
  promptText,
  registerLateChecks,
  requestOf,
  storedTask,
  toolOutputs,
  turnEndsAfter,
  until,
  untilWakeServed,
  useOpencode,
  type TaskArgs,
} from "./helpers.js";

const env = useOpencode({
  pluginOptions: { concurrency: 1, maxTaskTokens: 5000 },
  files: { "notes.txt": "a line\n" },
  // an agent whose config names its own model
  config: { agent: { scout: { mode: "subagent", description: "searches cheaply", model: "mock/other-model" } } },
});

/** The model the request was sent to (the `model` field of its raw body). */
const modelOf = (r: RecordedRequest) => (JSON.parse(r.raw) as { model?: string }).model;

/** The parent runs background_output for the task in a new turn; returns its output. */
async function promptOutput(parent: string, cue: string, taskID: string): Promise<string> {
  env.model.script({
    name: `${cue}-out`,
    match: (r) => lastUserText(r) === cue && !isToolFollowUp(r),
    reply: { toolCalls: [{ name: "background_output", arguments: { task_id: taskID } }] },
  });
  env.model.script({ name: `${cue}-read`, match: (r) => lastUserText(r) === cue && isToolFollowUp(r), reply: { text: "read" } });
  await promptText(env.server.client, parent, cue);
  return toolOutputs(await getMessages(env.server.client, parent), "background_output").at(-1)!;
}

/** A parent turn that calls background_task with each of `tasks`; returns the parent and the outputs (errors included). */
async function launchOnly(cue: string, tasks: TaskArgs[]) {
  env.model.script({
    name: `${cue}-launch`,
    match: (r) => lastUserText(r) === cue && !isToolFollowUp(r),
    reply: { toolCalls: tasks.map((t) => ({ name: "background_task", arguments: t })) },
  });
  env.model.script({ name: `${cue}-launched`, match: (r) => lastUserText(r) === cue && isToolFollowUp(r), reply: { text: `launched ${cue}` } });
  const parent = await newSession(env.server.client, cue);
  await promptText(env.server.client, parent, cue);
  return { parent, outputs: toolOutputs(await getMessages(env.server.client, parent), "background_task") };
}

async function ended(id: string, timeoutMs = 20_000) {
  return until(
    `task ${id} ended`,
    async () => {
      const t = await storedTask(env.server, id);
      return t && !["running", "resumed", "queued"].includes(t.status) && t;
    },
    timeoutMs,
  );
}

describe("model per task", () => {
  test("a child on model mock/other-model sends its requests there; launch output, list, notice, background_output and the child's metadata name it", async () => {
    env.model.script({ name: "m-child", match: (r) => lastUserText(r).includes("CHILD_M"), reply: { text: "ANSWER_M" } });
    const { parent, outputs, ids } = await launchAll(env, "MODEL_M", [
      { description: "Other M", prompt: "CHILD_M", agent: "general", model: "mock/other-model" },
    ]);
    expect(outputs[0]).toContain('"Other M" with agent general on mock/other-model.');
    const child = await requestOf(env.model, "m-child");
    expect(modelOf(child)).toBe("other-model");
    // the parent's own requests stay on its model
    expect(modelOf(await requestOf(env.model, "MODEL_M-launch"))).toBe("mock-model");
    const task = await ended(ids[0]!);
    expect(task.status).toBe("completed");
    expect(task.model).toEqual({ providerID: "mock", modelID: "other-model" });
    expect(task.parentModel).toEqual({ providerID: "mock", modelID: "mock-model" });
    await turnEndsAfter(env, parent, "MODEL_M-wake");
    const msgs = await getMessages(env.server.client, parent);
    const [notice] = notifications(msgs, ids[0]);
    expect(textOf(notice!)).toMatch(/^status: completed · agent: general · model: mock\/other-model · duration/m);
    // the price of other-model ($1 / $2 per million tokens) makes the usage carry a cost
    expect(textOf(notice!)).toMatch(/^usage: 120 charged in full \(100 in, 20 out\) · \$0\.0001$/m);
    const listed = await promptList(env, parent, "LIST_M");
    expect(listed).toMatch(new RegExp(`^${ids[0]} +completed +.* mock/other-model +"Other M" \\(general\\)$`, "m"));
    const out = await promptOutput(parent, "OUT_M", ids[0]!);
    expect(out).toContain(`Task ${ids[0]} "Other M": completed · agent general · model mock/other-model · `);
    const [session] = (await children(env.server.client, parent)) as { metadata?: { offshoot?: { model?: string } } }[];
    expect(session?.metadata?.offshoot?.model).toBe("mock/other-model");
  });

  test("an unknown model is refused with a sentence naming it and the models there are; a malformed one names the argument; no child is created", async () => {
    const { parent, outputs } = await launchOnly("BAD_MODEL", [
      { description: "Unknown", prompt: "never", agent: "general", model: "mock/wizard-9000" },
      { description: "Malformed", prompt: "never", agent: "general", model: "wizard" },
      { description: "No variant", prompt: "never", agent: "general", model: "mock/other-model#ultra" },
    ]);
    expect(outputs[0]).toBe(
      'Error: there is no model "mock/wizard-9000" among the configured ones. Nothing was started. Models available: mock/mock-model, mock/other-model. Call background_task again with one of them, or without model to use yours.',
    );
    expect(outputs[1]).toBe(
      'Error: background_task argument "model" must be "provider/model" (or "provider/model#variant"), not "wizard". Nothing was started. Call background_task again with model: "<provider>/<model>", or without model to use yours.',
    );
    expect(outputs[2]).toBe(
      'Error: model mock/other-model has no variant "ultra". Nothing was started. Its variants: high. Call background_task again with model: "mock/other-model" or "mock/other-model#<variant>".',
    );
    expect(await children(env.server.client, parent)).toEqual([]);
  });

  test("a variant OpenCode lists for the model is sent with the child's prompt", async () => {
    env.model.script({ name: "v-child", match: (r) => lastUserText(r).includes("CHILD_V"), reply: { text: "ANSWER_V" } });
    const { outputs, ids } = await launchAll(env, "VARIANT_V", [
      { description: "Variant V", prompt: "CHILD_V", agent: "general", model: "mock/other-model#high" },
    ]);
    expect(outputs[0]).toContain("with agent general on mock/other-model#high.");
    const child = await requestOf(env.model, "v-child");
    expect(modelOf(child)).toBe("other-model");
    // the variant's options reach the request (openai-compatible sends reasoningEffort as reasoning_effort)
    expect(JSON.parse(child.raw).reasoning_effort).toBe("high");
    expect((await ended(ids[0]!)).variant).toBe("high");
  });

  test("a native fork on another model falls back to a text fork, with the reason in the launch output", async () => {
    env.model.script({ name: "f-child", match: (r) => lastUserText(r).includes("CHILD_F"), reply: { text: "ANSWER_F" } });
    const { outputs, ids } = await launchAll(env, "FORK_F", [{ description: "Fork F", prompt: "CHILD_F", fork: true, model: "mock/other-model" }]);
    expect(outputs[0]).toContain("with agent build on mock/other-model.");
    expect(outputs[0]).toMatch(
      /Fork: context copy: \d+ of \d+ messages, \d+ chars \(not native: model mock\/other-model is not yours \(mock\/mock-model\)\)\./,
    );
    const child = await requestOf(env.model, "f-child");
    expect(modelOf(child)).toBe("other-model");
    expect(JSON.stringify(child.body.messages)).toContain("<inherited_context>");
    const task = await ended(ids[0]!);
    expect(task.status).toBe("completed");
    // its receipt: on another model nothing of the parent's cache applies, and it says so
    expect(task.receipt).toMatchObject({
      kind: "text",
      read: 0,
      miss: expect.stringContaining("the child ran on mock/other-model, your request on mock/mock-model"),
    });
  });

  test("the queue counts the chosen model: with concurrency 1, a task on other-model runs beside one on mock-model", async () => {
    env.model.script({ name: "q-slow", match: (r) => lastUserText(r).includes("CHILD_Q_SLOW"), reply: { text: "SLOW", delayMs: 60_000 } });
    env.model.script({ name: "q-other", match: (r) => lastUserText(r).includes("CHILD_Q_OTHER"), reply: { text: "OTHER" } });
    env.model.script({ name: "q-same", match: (r) => lastUserText(r).includes("CHILD_Q_SAME"), reply: { text: "SAME" } });
    const { outputs, ids } = await launchAll(env, "QUEUE_Q", [
      { description: "Slow Q", prompt: "CHILD_Q_SLOW", agent: "general" },
      { description: "Other Q", prompt: "CHILD_Q_OTHER", agent: "general", model: "mock/other-model" },
      { description: "Same Q", prompt: "CHILD_Q_SAME", agent: "general", model: "mock/mock-model" },
    ]);
    expect(outputs[0]).toContain("started");
    expect(outputs[1]).toContain("started");
    expect(outputs[2]).toContain("queued");
    expect(outputs[2]).toContain("1 task on mock/mock-model is running (concurrency 1)");
    // the other model's task ends while the slow one still holds mock-model's only slot
    const slowReq = await requestOf(env.model, "q-slow");
    expect((await ended(ids[1]!)).status).toBe("completed");
    expect(modelOf(await requestOf(env.model, "q-other"))).toBe("other-model");
    expect((await storedTask(env.server, ids[0]!))?.status).toBe("running");
    expect((await storedTask(env.server, ids[2]!))?.status).toBe("queued");
    // the slow one stopped: the queued one on mock-model gets the slot and completes
    await env.server.client.session.abort({ path: { id: (await storedTask(env.server, ids[0]!))!.sessionID } });
    await until("slow request cut off", () => slowReq.aborted);
    expect((await ended(ids[2]!)).status).toBe("completed");
    expect(modelOf(await requestOf(env.model, "q-same"))).toBe("mock-model");
  });

  test("without model: the agent's own model when its config names one, else the caller's", async () => {
    env.model.script({ name: "a-scout", match: (r) => lastUserText(r).includes("CHILD_A_SCOUT"), reply: { text: "SCOUTED" } });
    env.model.script({ name: "a-general", match: (r) => lastUserText(r).includes("CHILD_A_GENERAL"), reply: { text: "GENERAL" } });
    const { outputs, ids } = await launchAll(env, "AGENT_A", [
      { description: "Scout A", prompt: "CHILD_A_SCOUT", agent: "scout" },
      { description: "General A", prompt: "CHILD_A_GENERAL", agent: "general" },
    ]);
    expect(outputs[0]).toContain("with agent scout on mock/other-model.");
    expect(outputs[1]).toContain("with agent general on mock/mock-model.");
    expect(modelOf(await requestOf(env.model, "a-scout"))).toBe("other-model");
    expect(modelOf(await requestOf(env.model, "a-general"))).toBe("mock-model");
    for (const id of ids) expect((await ended(id)).status).toBe("completed");
  });

  test("model with resume is refused: a resumed task keeps its model", async () => {
    env.model.script({ name: "r-child", match: (r) => lastUserText(r).includes("CHILD_R1"), reply: { text: "R1" } });
    const { parent, ids } = await launchAll(env, "RESUME_R", [{ description: "Resume R", prompt: "CHILD_R1", agent: "general" }]);
    await ended(ids[0]!);
    // (the next prompt waits for the parent's wake turn: sent during it, it would be answered by it)
    await untilWakeServed(env, parent, "RESUME_R");
    env.model.script({
      name: "r2-launch",
      match: (r) => lastUserText(r) === "RESUME_R2" && !isToolFollowUp(r),
      reply: { toolCalls: [{ name: "background_task", arguments: { description: "x", prompt: "again", resume: ids[0], model: "mock/other-model" } }] },
    });
    env.model.script({ name: "r2-done", match: (r) => lastUserText(r) === "RESUME_R2" && isToolFollowUp(r), reply: { text: "ok" } });
    env.model.script({ name: "r-wake", match: (r) => isWake(r) && lastUserText(r).includes("Resume R"), reply: { text: "noted" } });
    await promptText(env.server.client, parent, "RESUME_R2");
    const out = toolOutputs(await getMessages(env.server.client, parent), "background_task").at(-1);
    expect(out).toBe(
      "Error: model cannot be given with resume: a resumed task keeps the model it ran on. Start a new task with background_task({ description, prompt, agent, model }) to use another model.",
    );
    expect((await storedTask(env.server, ids[0]!))?.run).toBe(1);
  });
});

describe("spend caps", () => {
  test("a child that keeps producing large answers is stopped by maxTaskTokens with the reason; one notice", async () => {
    let step = 0;
    env.model.script({
      name: "s-child",
      match: (r) => lastUserText(r).includes("CHILD_S"),
      // each step: a long answer and one more read (a new offset each time, so no repeat breaker)
      reply: () => ({
        text: "lorem ipsum ".repeat(200),
        toolCalls: [{ name: "read", arguments: { filePath: `${env.server.directory}/notes.txt`, offset: ++step } }],
        usage: { prompt_tokens: 300, completion_tokens: 2000 },
      }),
    });
    const { parent, ids } = await launchAll(env, "SPEND_S", [{ description: "Spender S", prompt: "CHILD_S", agent: "general" }]);
    const task = await ended(ids[0]!);
    expect(task.status).toBe("error");
    expect(task.error).toMatch(
      /^stopped: used (\d+) tokens charged in full \(uncached input, output, reasoning, cache writes; cache reads not counted\), over the cap \(maxTaskTokens: 5000\)$/,
    );
    expect(Number(/used (\d+)/.exec(task.error!)![1])).toBeGreaterThan(5000);
    const steps = env.model.requests.filter((r) => r.label === "s-child").length;
    // 2300 tokens a step: over 5000 at the third, and the fourth request is never sent (it waits at
    // the gate until the stop's abort is done: step-gate.ts); so what the provider charged is what the task counted
    expect(steps).toBe(3);
    expect(Number(/used (\d+)/.exec(task.error!)![1])).toBe(3 * 2300);
    await turnEndsAfter(env, parent, "SPEND_S-wake");
    const msgs = await getMessages(env.server.client, parent);
    expect(notifications(msgs, ids[0])).toHaveLength(1);
    expect(textOf(notifications(msgs, ids[0])[0]!)).toContain("error: stopped: used");
    env.later("S: the child asks no more", async () => {
      expect(env.model.requests.filter((r) => r.label === "s-child").length).toBe(steps);
    });
  });

  test("cache reads are reported, not capped: a child reading 90k tokens from cache per step is not stopped", async () => {
    let step = 0;
    env.model.script({
      name: "c-child",
      match: (r) => lastUserText(r).includes("CHILD_C"),
      reply: () =>
        ++step < 3
          ? {
              toolCalls: [{ name: "read", arguments: { filePath: `${env.server.directory}/notes.txt`, offset: step } }],
              usage: { prompt_tokens: 90_100, completion_tokens: 20, prompt_tokens_details: { cached_tokens: 90_000 } },
            }
          : { text: "ANSWER_C", usage: { prompt_tokens: 90_100, completion_tokens: 20, prompt_tokens_details: { cached_tokens: 90_000 } } },
    });
    const { parent, ids } = await launchAll(env, "CACHE_C", [{ description: "Cached C", prompt: "CHILD_C", agent: "general" }]);
    const task = await ended(ids[0]!);
    expect(task.status).toBe("completed");
    await turnEndsAfter(env, parent, "CACHE_C-wake");
    const [notice] = notifications(await getMessages(env.server.client, parent), ids[0]);
    expect(textOf(notice!)).toMatch(/^usage: 360 charged in full \(300 in, 60 out\) · 270k read from cache$/m);
    expect(task.usage).toMatchObject({ input: 300, cacheRead: 270_000, output: 60 });
  });
});

registerLateChecks(env);
