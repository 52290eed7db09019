// The fork receipt (src/manager/usage.ts): what a forked child's first request read from the cache,
// recorded from its first finished assistant message; the flag rule for a native fork below the
// threshold, with the likely reason. Table tests of the pure rule.

import { describe, expect, it } from "vitest";
import type { AssistantMessage } from "../../../src/host/types.js";
import { NATIVE_FORK_MIN_CACHE_SHARE, PROVIDER_CACHE_LIFETIME_MS } from "../../../src/constants.js";
import { type MissInput, likelyMiss, receiptOf } from "../../../src/manager/task/usage.js";
import type { BackgroundTask } from "../../../src/task-record.js";

const MOCK = { providerID: "mock", modelID: "mock-model" };
const OTHER = { providerID: "mock", modelID: "other-model" };

const hit: MissInput = { read: 15_500, write: 0, input: 15_600, parent: { model: MOCK }, child: { model: MOCK }, gapMs: 1000 };
const miss: MissInput = { ...hit, read: 0, write: 15_600 };

describe("the flag rule (a native fork's first request below the threshold)", () => {
  const table: [string, MissInput, RegExp | undefined][] = [
    ["a hit is not flagged", hit, undefined],
    ["just at the threshold is not flagged", { ...hit, read: NATIVE_FORK_MIN_CACHE_SHARE * 15_600 }, undefined],
    [
      "another model: the model changed",
      { ...miss, child: { model: OTHER } },
      /^the model or variant changed: the child ran on mock\/other-model, your request on mock\/mock-model/,
    ],
    [
      "another variant: the variant changed",
      { ...miss, parent: { model: MOCK, variant: "high" }, child: { model: MOCK } },
      /^the model or variant changed: the child ran on mock\/mock-model, your request on mock\/mock-model#high/,
    ],
    [
      "no cache read or write reported at all: the provider does not cache",
      { ...miss, write: 0 },
      /^the provider reported no cache reads or writes at all: it likely does not cache/,
    ],
    [
      "a write but no read, long after the launch: the cache expired",
      { ...miss, gapMs: PROVIDER_CACHE_LIFETIME_MS + 60_000 },
      /^the child's first request came 6m 0s after your request, longer than a provider's usual cache lifetime \(5m 0s\)/,
    ],
    ["a write but no read, soon after the launch: not known", miss, /^not known: the start of the child's first request likely differed/],
    // the surest evidence first: a changed model is named even when the provider also reported nothing
    ["another model and nothing reported: the model is named", { ...miss, write: 0, child: { model: OTHER } }, /^the model or variant changed/],
  ];
  it.each(table)("%s", (_, input, reason) => {
    const got = likelyMiss(input);
    if (reason) expect(got).toMatch(reason);
    else expect(got).toBeUndefined();
  });
});

const task = (over: Partial<BackgroundTask> = {}) =>
  ({
    isForked: true,
    fork: { kind: "native", messages: 4, estimatedTokens: 15_000, rootSessionID: "ses_parent" },
    run: 1,
    createdAt: 1_000,
    parentModel: MOCK,
    model: MOCK,
    ...over,
  }) as BackgroundTask;

const message = (over: Partial<AssistantMessage> & { read?: number; write?: number; input?: number } = {}): Partial<AssistantMessage> => {
  const { read = 15_500, write = 0, input = 100, ...rest } = over;
  return {
    role: "assistant",
    providerID: "mock",
    modelID: "mock-model",
    time: { created: 2_000, completed: 3_000 },
    finish: "stop",
    tokens: { total: 0, input, output: 20, reasoning: 0, cache: { read, write } },
    ...rest,
  } as Partial<AssistantMessage>;
};

describe("the receipt of a forked task's first request", () => {
  it("a native fork: read of all its input (uncached, writes, reads)", () => {
    expect(receiptOf(task(), message())).toEqual({ kind: "native", read: 15_500, input: 15_600 });
  });

  it("a native fork on another model than its parent's request: flagged with the reason", () => {
    const r = receiptOf(task(), message({ read: 0, input: 15_600, modelID: "other-model" }));
    expect(r).toMatchObject({ kind: "native", read: 0, input: 15_600 });
    expect(r?.miss).toMatch(/^the model or variant changed: the child ran on mock\/other-model/);
  });

  it("a native fork whose first request's system prompt differed: the difference, seen, whatever the share", () => {
    const seen = "the system prompt differed from your request's at character 10 of 20 (…)";
    expect(receiptOf(task(), message(), seen)).toEqual({ kind: "native", read: 15_500, input: 15_600, differs: seen });
    // moved to another model, its system prompt names that model: the model change is the cause said
    const moved = receiptOf(task(), message({ read: 0, input: 15_600, modelID: "other-model" }), seen);
    expect(moved?.differs).toBeUndefined();
    expect(moved?.miss).toMatch(/^the model or variant changed/);
  });

  it("a queued native fork that started after the cache lifetime: flagged as likely expired", () => {
    const late = 1_000 + PROVIDER_CACHE_LIFETIME_MS + 1;
    const r = receiptOf(task(), message({ read: 0, write: 15_000, input: 600, time: { created: late, completed: late + 10 } }));
    expect(r?.miss).toMatch(/longer than a provider's usual cache lifetime/);
  });

  it("a text fork: what could be shared and the context copy's tokens; never flagged", () => {
    const r = receiptOf(
      task({ fork: { kind: "text", keptMessages: 3, totalMessages: 3, chars: 12_000, fromCompaction: false } }),
      message({ read: 2_000, input: 3_300 }),
    );
    expect(r).toEqual({ kind: "text", read: 2_000, input: 5_300, copy: 3_000 });
  });

  it("a text fork on another model than its parent's: it could share nothing, and the receipt says why", () => {
    const r = receiptOf(
      task({ model: OTHER, fork: { kind: "text", keptMessages: 3, totalMessages: 3, chars: 400, fromCompaction: false } }),
      message({ read: 0, input: 300, modelID: "other-model" }),
    );
    expect(r).toEqual({
      kind: "text",
      read: 0,
      input: 300,
      copy: 100,
      miss: "the child ran on mock/other-model, your request on mock/mock-model (a provider keeps a cache per model)",
    });
  });

  it("nothing to record: not a fork, already recorded, a later run, an unfinished or failed message, no input reported", () => {
    expect(receiptOf(task({ isForked: false, fork: undefined }), message())).toBeUndefined();
    expect(receiptOf(task({ receipt: { kind: "native", read: 1, input: 1 } }), message())).toBeUndefined();
    expect(receiptOf(task({ run: 2 }), message())).toBeUndefined();
    expect(receiptOf(task(), message({ time: { created: 2_000 }, finish: undefined }))).toBeUndefined();
    expect(receiptOf(task(), message({ error: { name: "UnknownError", data: { message: "boom" } } as AssistantMessage["error"] }))).toBeUndefined();
    expect(receiptOf(task(), message({ read: 0, input: 0 }))).toBeUndefined();
  });
});
