// The shared formatter (src/format.ts): durations and token counts as the server's texts and the
// TUI's lines show them. One table per form; the two duration forms differ on purpose (see the module).

import { describe, expect, it } from "vitest";
import { cacheShare, chargedTokens, formatCacheShare, formatDuration, formatElapsed, formatReceipt, formatTokens, formatUsage } from "../../src/format.js";

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

describe("durations", () => {
  // [milliseconds, server's texts (formatDuration), TUI (formatElapsed)]
  const table: [number, string, string][] = [
    [0, "0s", "0s"],
    [-5, "0s", "0s"], // a clock that went back never shows a negative time
    [59 * SECOND, "59s", "59s"],
    [59.6 * SECOND, "1m 0s", "59s"], // the server rounds, the TUI cuts
    [61 * SECOND, "1m 1s", "1m01s"],
    [12 * MINUTE + 7 * SECOND, "12m 7s", "12m07s"],
    [HOUR + 2 * MINUTE + 30 * SECOND, "1h 2m", "1h02m"],
    [26 * HOUR + 5 * MINUTE, "26h 5m", "26h05m"],
  ];
  it.each(table)("%d ms reads %j in the server's texts and %j in the TUI", (ms, server, tui) => {
    expect(formatDuration(ms)).toBe(server);
    expect(formatElapsed(ms)).toBe(tui);
  });
});

describe("token counts", () => {
  const table: [number, string][] = [
    [0, "0"],
    [999, "999"],
    [1_000, "1.0k"],
    [1_234, "1.2k"],
    [9_999, "10.0k"],
    [12_345, "12k"],
    [999_499, "999k"],
    [1_234_567, "1.2M"],
    [25_000_000, "25.0M"],
  ];
  it.each(table)("%d tokens read %j", (n, text) => {
    expect(formatTokens(n)).toBe(text);
  });
});

describe("the server's usage line", () => {
  const none = { input: 0, output: 0, reasoning: 0, cacheRead: 0, cacheWrite: 0, cost: 0 };
  const table: [string, typeof none | undefined, string][] = [
    ["no usage reported", undefined, ""],
    ["nothing used yet", none, ""],
    ["input and output", { ...none, input: 999, output: 1_000 }, "2.0k charged in full (999 in, 1.0k out)"],
    [
      "cache reads apart from the tokens charged in full (cache writes are charged, as input)",
      { ...none, input: 2_345, cacheRead: 10_000, cacheWrite: 1, output: 40, reasoning: 2 },
      "2.4k charged in full (2.3k in, 42 out) · 10k read from cache",
    ],
    ["only cache reads", { ...none, cacheRead: 15_000 }, "0 charged in full (0 in, 0 out) · 15k read from cache"],
    ["with a cost", { ...none, input: 1_234_567, output: 5, cost: 0.01234 }, "1.2M charged in full (1.2M in, 5 out) · $0.0123"],
  ];
  it.each(table)("%s", (_, usage, text) => {
    expect(formatUsage(usage)).toBe(text);
  });
});

describe("tokens charged in full", () => {
  it("counts uncached input, cache writes, output and reasoning; never cache reads", () => {
    expect(chargedTokens({ input: 1, cacheWrite: 10, output: 100, reasoning: 1000, cacheRead: 1_000_000, cost: 0 })).toBe(1111);
  });
});

describe("the fork receipt", () => {
  // [read, input, share shown]: a share just under 100% never rounds up to it
  const shares: [number, number, number][] = [
    [0, 0, 0],
    [0, 15_600, 0],
    [15_500, 15_600, 99],
    [15_599, 15_600, 99],
    [15_600, 15_600, 100],
    [2_100, 5_300, 40],
  ];
  it.each(shares)("%d of %d reads as %d%%", (read, input, share) => {
    expect(cacheShare({ read, input })).toBe(share);
  });

  it("says what the first request read, of how many input tokens", () => {
    expect(formatCacheShare({ read: 15_500, input: 15_600 })).toBe("cache: 15.5k of 15.6k input tokens (99%)");
  });

  it("a native fork that hit, one that missed (with the likely reason), a text fork (what could be shared and what was new)", () => {
    expect(formatReceipt(true, { kind: "native", read: 15_500, input: 15_600 }, true)).toBe(
      "cache: 15.5k of 15.6k input tokens (99%) on the first request · native fork: read your context from the cache",
    );
    expect(formatReceipt(true, { kind: "native", read: 0, input: 15_600, miss: "the model or variant changed" }, true)).toBe(
      "cache: 0 of 15.6k input tokens (0%) on the first request · ⚠ low for a native fork; likely cause: the model or variant changed",
    );
    expect(formatReceipt(true, { kind: "text", read: 2_100, input: 5_300, copy: 3_000 }, true)).toBe(
      "cache: 2.1k of 5.3k input tokens (40%) on the first request · text fork: only the system prompt and tools could come from your cache; the context copy (~3.0k tokens) and the task were new",
    );
  });

  it("a text fork on another model: nothing could be shared, and why", () => {
    expect(
      formatReceipt(true, { kind: "text", read: 0, input: 300, copy: 100, miss: "the child ran on mock/other-model, your request on mock/mock-model" }, true),
    ).toBe(
      "cache: 0 of 300 input tokens (0%) on the first request · text fork: nothing could come from your cache (the child ran on mock/other-model, your request on mock/mock-model); the context copy (~100 tokens) and the task were new",
    );
  });

  it("not a fork: no receipt; a fork not measured says so, while it runs and once it ended", () => {
    expect(formatReceipt(false, undefined, true)).toBeUndefined();
    expect(formatReceipt(true, undefined, false)).toBe("cache: not measured yet (the child's first request has not finished)");
    expect(formatReceipt(true, undefined, true)).toBe("cache: not measured (no first request of the child reported its tokens)");
  });
});
