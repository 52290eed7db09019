import { describe, expect, it } from "vitest";
import { parseModelArg } from "../../../src/manager/model-choice.js";
import { chargedTokens, spendOverCap } from "../../../src/manager/spend.js";
import { MAX_TASK_TOKENS } from "../../../src/constants.js";
import { DEFAULT_OPTIONS, parseOptions } from "../../../src/options.js";

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
  input: 0, output: 0, reasoning: 0, cacheRead: 0, cacheWrite: 0, cost: 0, ...u,
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
