import { describe, expect, it } from "vitest";
import { parseModelArg, resolveModelChoice } from "../../../src/manager/launch/model-choice.js";
import type { Client } from "../../../src/host/client.js";
import { chargedTokens, spendOverCap } from "../../../src/manager/spend/caps.js";
import { MAX_TASK_TOKENS } from "../../../src/constants.js";
import { DEFAULT_OPTIONS, parseOptions } from "../../../src/options.js";
import { createHarness, toolContext } from "./setup.js";

describe("the model argument", () => {
  it("takes provider/model and provider/model#variant; the model id may hold slashes", () => {
    expect(parseModelArg("mock/other-model")).toEqual({ model: { providerID: "mock", modelID: "other-model" } });
    expect(parseModelArg(" mock/other-model#high ")).toEqual({ model: { providerID: "mock", modelID: "other-model" }, variant: "high" });
    expect(parseModelArg("openrouter/anthropic/claude-sonnet-4")).toEqual({ model: { providerID: "openrouter", modelID: "anthropic/claude-sonnet-4" } });
  });

  it("refuses a malformed value with a sentence naming the argument", () => {
    for (const bad of ["gpt-4", "/model", "mock/", "mock/m#", "mock/m#a#b", "mock/a model", "", "x/".padEnd(400, "y")]) {
      const parsed = parseModelArg(bad);
      expect(parsed, bad).toHaveProperty("error");
      expect((parsed as { error: string }).error).toContain('background_task argument "model" must be "provider/model"');
    }
  });
});

const usage = (u: Partial<Record<"input" | "output" | "reasoning" | "cacheRead" | "cacheWrite" | "cost", number>>) => ({
  input: 0,
  output: 0,
  reasoning: 0,
  cacheRead: 0,
  cacheWrite: 0,
  cost: 0,
  ...u,
});

describe("spend caps", () => {
  it("counts what the provider charges in full: uncached input, output, reasoning, cache writes; never cache reads", () => {
    expect(chargedTokens(usage({ input: 1, output: 10, reasoning: 100, cacheWrite: 1000, cacheRead: 1_000_000 }))).toBe(1111);
    expect(spendOverCap(usage({ cacheRead: 50_000_000 }), { maxTaskTokens: 1000, maxTaskCost: 0 })).toBeUndefined();
  });

  it("names the option and the figure when a cap is passed; 0 turns a cap off", () => {
    const limits = { maxTaskTokens: 1000, maxTaskCost: 0.5 };
    expect(spendOverCap(usage({ input: 500, output: 500 }), limits)).toBeUndefined();
    expect(spendOverCap(usage({ input: 500, output: 501 }), limits)).toBe(
      "stopped: used 1001 tokens charged in full (uncached input, output, reasoning, cache writes; cache reads not counted), over the cap (maxTaskTokens: 1000)",
    );
    expect(spendOverCap(usage({ cost: 0.75 }), limits)).toBe("stopped: cost $0.7500, over the cap (maxTaskCost: 0.5)");
    expect(spendOverCap(usage({ input: 1e9, cost: 1e6 }), { maxTaskTokens: 0, maxTaskCost: 0 })).toBeUndefined();
  });

  it("options: maxTaskTokens defaults to a backstop, maxTaskCost is off; bad values keep the default", () => {
    expect(DEFAULT_OPTIONS.maxTaskTokens).toBe(MAX_TASK_TOKENS);
    expect(DEFAULT_OPTIONS.maxTaskCost).toBe(0);
    expect(parseOptions({ maxTaskTokens: 2_000_000, maxTaskCost: 2.5 }).options).toMatchObject({ maxTaskTokens: 2_000_000, maxTaskCost: 2.5 });
    const { options, warnings } = parseOptions({ maxTaskTokens: 1.5, maxTaskCost: -1 });
    expect(options).toMatchObject({ maxTaskTokens: MAX_TASK_TOKENS, maxTaskCost: 0 });
    expect(warnings).toEqual([
      `offshoot: option "maxTaskTokens" must be a whole number of tokens from 0 (no cap) to 1000000000000; got number 1.5. Using the default, ${MAX_TASK_TOKENS}.`,
      'offshoot: option "maxTaskCost" must be a number of dollars from 0 (no cap) to 1000000; got number -1. Using the default, 0.',
    ]);
  });
});

describe("spend caps on a task (fake server)", () => {
  it("stops a task whose child passes maxTaskTokens, and a resume of it at its first step, with the reason", async () => {
    const h = await createHarness({ options: { maxTaskTokens: 1000 } });
    try {
      const parent = h.fake.addParent();
      const task = await h.launch(parent, "spender");
      const assistant = (id: string, tokens: { input: number; output: number }) => ({
        type: "message.updated",
        properties: {
          sessionID: task.sessionID,
          info: {
            id,
            sessionID: task.sessionID,
            role: "assistant",
            time: { created: Date.now() },
            tokens: { ...tokens, reasoning: 0, cache: { read: 50_000, write: 0 } },
            cost: 0,
          },
        },
      });
      h.fake.emit(assistant("msg_a1", { input: 600, output: 300 }));
      await h.fake.settle();
      expect(h.manager.get(task.id)?.status).toBe("running"); // 900 charged; the 50k cache reads do not count
      h.fake.emit(assistant("msg_a1", { input: 600, output: 500 }));
      await h.fake.settle();
      const reason =
        "stopped: used 1100 tokens charged in full (uncached input, output, reasoning, cache writes; cache reads not counted), over the cap (maxTaskTokens: 1000)";
      expect(h.manager.get(task.id)).toMatchObject({ status: "error", error: reason });
      expect(h.fake.callsOf("session.abort").map((c) => c.options.path.id)).toEqual([task.sessionID]);

      await h.tools.task.execute({ description: "", prompt: "go on", resume: task.id }, toolContext(parent));
      expect(h.manager.get(task.id)?.status).toBe("resumed");
      h.fake.emit(assistant("msg_a2", { input: 0, output: 0 }));
      await h.fake.settle();
      expect(h.manager.get(task.id)).toMatchObject({ status: "error", run: 2, error: reason });
    } finally {
      await h.cleanup();
    }
  });
});

describe("checking the model against the configured ones", () => {
  /** A v1 client whose config.providers answers with `n` models of provider "p" (the one with variants: p/m0). */
  function clientWith(n: number) {
    let reads = 0;
    const models = Object.fromEntries(Array.from({ length: n }, (_, i) => [`m${i}`, { id: `m${i}`, variants: i === 0 ? { high: {}, low: {} } : {} }]));
    const client = {
      config: { providers: async () => (reads++, { data: { providers: [{ id: "p", models }] }, response: { status: 200 } }) },
    } as unknown as Client;
    return { client, reads: () => reads };
  }

  it("lists at most 30 models, then says how many more", async () => {
    const { client } = clientWith(45);
    const result = await resolveModelChoice(client, "p/nope");
    expect(result).toHaveProperty("error");
    const error = (result as { error: string }).error;
    expect(error).toMatch(/^Error: there is no model "p\/nope" among the configured ones\. Nothing was started\. Models available: p\/m0, p\/m1, /);
    expect(error.match(/p\/m\d+/g)).toHaveLength(30);
    expect(error).toContain(" (and 15 more). Call background_task again with one of them, or without model to use yours.");
  });

  it("takes a configured model and a listed variant; a known model is not read again within a minute", async () => {
    const { client, reads } = clientWith(3);
    expect(await resolveModelChoice(client, "p/m0#high")).toEqual({ model: { providerID: "p", modelID: "m0" }, variant: "high" });
    expect(await resolveModelChoice(client, "p/m2")).toEqual({ model: { providerID: "p", modelID: "m2" } });
    expect(reads()).toBe(1);
    expect(await resolveModelChoice(client, "p/m1#high")).toEqual({
      error: 'Error: model p/m1 has no variant "high". Nothing was started. It has no variants. Call background_task again with model: "p/m1".',
    });
    expect(reads()).toBe(2); // not found in the cached list: checked against a fresh one
  });
});
